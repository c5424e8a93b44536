// Micro-benchmark behind docs/benchmarks.md (conv_bn_relu): cuDNN's legacy convolution algorithms for the
// sample's 3x3 conv (x[32,64,56,56] f32, 64 filters, pad 1), TF32 allowed, each timed after a 256 MB flush;
// and the legacy fused conv + bias + ReLU call the executor runs, in NCHW and NHWC.
// nvcc -O2 -std=c++17 -arch=sm_90 bench/microbench/conv_algos.cu -lcudnn -o conv_algos
#include "common.cuh"
#include "cudnn_conv.cuh"

namespace {
constexpr int N = 32, C = 64, H = 56, W = 56, K = 64, R = 3;
cudnnHandle_t h;
void* ws;
constexpr size_t kWs = 256u << 20;

bool bench(cudnnTensorFormat_t fmt, cudnnTensorFormat_t yfmt, const char* what, float* x, float* w, float* b, float* y) {
  const ConvDescriptors d(fmt, yfmt, N, C, H, K, R, 1, 1, CUDNN_DEFAULT_MATH);
  const cudnnTensorDescriptor_t xd = d.x, yd = d.y, bd = d.bias;
  const cudnnFilterDescriptor_t wd = d.w;
  const cudnnConvolutionDescriptor_t cd = d.conv;
  const cudnnActivationDescriptor_t relu = d.relu;
  cudnnConvolutionFwdAlgoPerf_t perf[16];
  int found = 0;
  CD(cudnnFindConvolutionForwardAlgorithmEx(h, xd, x, wd, w, cd, yd, y, 16, &found, perf, ws, kWs));
  std::printf("%s: cudnnFind (its own timing), then 50 runs after a flush each:\n", what);
  const float one = 1, zero = 0;
  for (int i = 0; i < found; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    const auto algo = perf[i].algo;
    cudnnSetConvolutionMathType(cd, perf[i].mathType);
    const float ms = median_ms([&] { cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, algo, ws, kWs, &zero, yd, y); }, true);
    float fused = -1;
    cudnnStatus_t st = cudnnConvolutionBiasActivationForward(h, &one, xd, x, wd, w, cd, algo, ws, kWs, &zero, yd, y, bd, b, relu, yd, y);
    if (st == CUDNN_STATUS_SUCCESS) {
      fused = median_ms([&] { cudnnConvolutionBiasActivationForward(h, &one, xd, x, wd, w, cd, algo, ws, kWs, &zero, yd, y, bd, b, relu, yd, y); }, true);
    }
    std::printf("  algo %d math %d: find %.4f ms; conv %.4f ms; conv+bias+relu %s %.4f ms\n", (int)algo,
                (int)perf[i].mathType, perf[i].time, ms, st == CUDNN_STATUS_SUCCESS ? "ok" : cudnnGetErrorString(st), fused);
  }
  CK(cudaDeviceSynchronize());
  return true;
}
}  // namespace

int main() {
  CD(cudnnCreate(&h));
  std::printf("cuDNN %zu\n", cudnnGetVersion());
  CK(cudaMalloc(&ws, kWs));
  CK(cudaMalloc(&g_flush, 256u << 20));
  float *x, *w, *b, *y;
  CK(cudaMalloc(&x, (size_t)N * C * H * W * 4)); CK(cudaMalloc(&y, (size_t)N * K * H * W * 4));
  CK(cudaMalloc(&w, (size_t)K * C * R * R * 4)); CK(cudaMalloc(&b, K * 4));
  CK(cudaMemset(x, 0, (size_t)N * C * H * W * 4)); CK(cudaMemset(w, 0, (size_t)K * C * R * R * 4)); CK(cudaMemset(b, 0, K * 4));
  bench(CUDNN_TENSOR_NCHW, CUDNN_TENSOR_NCHW, "NCHW", x, w, b, y);
  bench(CUDNN_TENSOR_NHWC, CUDNN_TENSOR_NHWC, "NHWC", x, w, b, y);
  bench(CUDNN_TENSOR_NHWC, CUDNN_TENSOR_NCHW, "x, w NHWC -> y NCHW", x, w, b, y);
  {  // the layout change itself: NCHW -> NHWC of x (25 MiB each way) with cudnnTransformTensor
    cudnnTensorDescriptor_t a, c;
    CD(cudnnCreateTensorDescriptor(&a)); CD(cudnnCreateTensorDescriptor(&c));
    CD(cudnnSetTensor4dDescriptor(a, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W));
    CD(cudnnSetTensor4dDescriptor(c, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, N, C, H, W));
    const float one = 1, zero = 0;
    std::printf("cudnnTransformTensor NCHW -> NHWC: %.4f ms; NHWC -> NCHW: %.4f ms; copy: %.4f ms\n",
                median_ms([&] { cudnnTransformTensor(h, &one, a, x, &zero, c, y); }, true),
                median_ms([&] { cudnnTransformTensor(h, &one, c, x, &zero, a, y); }, true),
                median_ms([&] { cudaMemcpyAsync(y, x, (size_t)N * C * H * W * 4, cudaMemcpyDeviceToDevice); }, true));
  }
  return 0;
}
