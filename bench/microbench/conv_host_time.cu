// How long the host takes to issue one of cuDNN's legacy fused convolution calls (the executor's
// cudnnConvolutionBiasActivationForward, IMPLICIT_PRECOMP_GEMM, TF32 allowed) against how long the GPU takes to
// run it, for resnet18's convolution shapes at batch 32, NHWC as its kept plan runs them. A plan whose calls
// cost the host more than the GPU is host-bound when launched step by step (docs/benchmarks.md, runs S and T:
// resnet18's fused plan 1.0-2.5 ms launched so, 0.955 ms replayed as a CUDA graph).
// Host time: 200 calls issued while a spin kernel holds the GPU, wall clock around the issuing loop. GPU time:
// events around the same 200 calls, which the GPU reaches only after all were issued.
//   nvcc -O2 -std=c++17 -arch=sm_90 bench/microbench/conv_host_time.cu -lcudnn -o /tmp/cht && /tmp/cht
#include <chrono>

#include "common.cuh"
#include "cudnn_conv.cuh"

namespace {

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

struct Shape {
  const char* name;
  int c, hw, k, r, stride, pad;
};

constexpr int kN = 32, kCalls = 200;

void measure(cudnnHandle_t h, const Shape& s, void* ws, size_t ws_bytes) {
  const ConvDescriptors d(CUDNN_TENSOR_NHWC, CUDNN_TENSOR_NHWC, kN, s.c, s.hw, s.k, s.r, s.stride, s.pad,
                          CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
  const int out = d.out;
  float *x, *w, *b, *y;
  CK(cudaMalloc(&x, size_t(kN) * s.c * s.hw * s.hw * 4));
  CK(cudaMalloc(&w, size_t(s.k) * s.c * s.r * s.r * 4));
  CK(cudaMalloc(&b, size_t(s.k) * 4));
  CK(cudaMalloc(&y, size_t(kN) * s.k * out * out * 4));
  const auto algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  const float one = 1, zero = 0;
  auto call = [&] {
    CD(cudnnConvolutionBiasActivationForward(h, &one, d.x, x, d.w, w, d.conv, algo, ws, ws_bytes, &zero, d.y, y, d.bias,
                                             b, d.relu, d.y, y));
  };
  for (int i = 0; i < 10; ++i) call();  // warm-up: whatever cuDNN builds on a first call
  CK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  std::vector<double> host_us, gpu_us;
  for (int rep = 0; rep < 5; ++rep) {
    spin<<<1, 1>>>(200000000LL);  // about 0.1 s at H100 clocks: the GPU stays behind the host
    CK(cudaEventRecord(start));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    CK(cudaEventRecord(stop));
    CK(cudaEventSynchronize(stop));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start, stop));
    host_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kCalls);
    gpu_us.push_back(1e3 * ms / kCalls);
  }
  std::sort(host_us.begin(), host_us.end());
  std::sort(gpu_us.begin(), gpu_us.end());
  const double hu = host_us[2], gu = gpu_us[2];
  std::printf("%-28s host %8.1f us/call  GPU %8.1f us/call  host/GPU %.2f\n", s.name, hu, gu, hu / gu);
  cudaFree(x); cudaFree(w); cudaFree(b); cudaFree(y);
}

}  // namespace

int main() {
  cudnnHandle_t h;
  CD(cudnnCreate(&h));
  std::printf("cuDNN %zu; medians of 5 batches of %d calls, NHWC f32, batch %d\n", cudnnGetVersion(), kCalls, kN);
  const size_t ws_bytes = 256u << 20;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  const Shape shapes[] = {{"conv1 7x7/2 3->64 @224", 3, 224, 64, 7, 2, 3},
                          {"layer1 3x3 64->64 @56", 64, 56, 64, 3, 1, 1},
                          {"layer2 downsample 1x1/2 @56", 64, 56, 128, 1, 2, 0},
                          {"layer2 3x3 128->128 @28", 128, 28, 128, 3, 1, 1},
                          {"layer3 3x3 256->256 @14", 256, 14, 256, 3, 1, 1},
                          {"layer4 3x3 512->512 @7", 512, 7, 512, 3, 1, 1}};
  for (const Shape& s : shapes) measure(h, s, ws, ws_bytes);
  cudnnDestroy(h);
  return 0;
}
