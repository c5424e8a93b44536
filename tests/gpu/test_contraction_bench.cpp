// Timings of the contraction library on the sample-graph shapes, for the report and for comparison with
// docs/benchmarks.md. Runs only with FX_RUN_BENCH=1; prints one line per case:
//   BENCH <name> <median ms>
// Medians of 20 runs after warm-up, timed with CUDA events around each run on one stream.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "kernels/common/stream_gate.h"
#include "kernels/contraction/conv.h"
#include "kernels/contraction/horizontal_matmul.h"
#include "kernels/contraction/matmul.h"
#include "tests/gpu/test_contraction_support.h"

namespace {

using fx::DType;
using fx::gpu::MatmulEpilogue;
using fx::gpu::MatmulProblem;

constexpr int kWarmup = 5;
constexpr int kRuns = 20;

bool bench_requested() {
  const char* v = std::getenv("FX_RUN_BENCH");
  return v && std::string(v) == "1";
}

#define FX_BENCH_PREAMBLE()                                                          \
  FX_SKIP_WITHOUT_CUDA_DEVICE();                                                     \
  if (!bench_requested()) GTEST_SKIP() << "set FX_RUN_BENCH=1 to run the benchmarks"

class Stream {
 public:
  Stream() { cudaStreamCreate(&s_); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

// Median milliseconds of `launch` on `stream`; prints the BENCH line and returns the median.
double bench(const std::string& name, const std::string& what, cudaStream_t stream,
             const std::function<void()>& launch) {
  for (int i = 0; i < kWarmup; ++i) launch();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms(kRuns);
  for (float& t : ms) {
    cudaEventRecord(start, stream);
    launch();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    cudaEventElapsedTime(&t, start, stop);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  const double median = (ms[kRuns / 2 - 1] + ms[kRuns / 2]) / 2.0;
  std::printf("BENCH %s %.4f\n", name.c_str(), median);
  std::printf("      (%s)\n", what.c_str());
  std::fflush(stdout);
  return median;
}

// Device data for timing only: random values, so no shortcut on zeros.
fx::test::DeviceArray device_random(std::size_t count, DType t, unsigned seed) {
  std::vector<float> v(count);
  std::uint32_t state = seed * 2654435761u + 1u;
  for (float& f : v) {  // xorshift: fast enough for the 128 MiB operands
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    f = static_cast<float>(state) * (1.0f / 4294967296.0f) - 0.5f;
  }
  return std::move(fx::test::upload(v, t).device);
}

void bench_matmul(const std::string& name, std::int64_t m, std::int64_t n, std::int64_t k, DType t, bool tf32,
                  MatmulEpilogue epilogue) {
  MatmulProblem p{.m = m, .n = n, .k = k};
  p.a_type = p.b_type = p.c_type = t;
  p.allow_tf32 = tf32;
  p.epilogue = epilogue;
  const auto x = device_random(static_cast<std::size_t>(m * k), t, 1);
  const auto w = device_random(static_cast<std::size_t>(k * n), t, 2);
  const auto b = device_random(static_cast<std::size_t>(n), t, 3);
  fx::test::DeviceArray y(static_cast<std::size_t>(m * n * fx::dtype_size(t)));
  Stream stream;
  fx::gpu::Matmul matmul;
  const void* bias = fx::gpu::epilogue_has_bias(epilogue) ? b.get() : nullptr;
  bench(name, fx::gpu::describe_matmul(p), stream.get(),
        [&] { matmul.run(p, x.get(), w.get(), bias, y.get(), stream.get()); });
}

TEST(ContractionBench, ReluBiasF32Tf32_8192x4096x4096) {
  FX_BENCH_PREAMBLE();
  bench_matmul("matmul_f32_tf32_8192x4096x4096_gemm_only", 8192, 4096, 4096, DType::f32, true, MatmulEpilogue::none);
  bench_matmul("matmul_f32_tf32_8192x4096x4096_relu_bias", 8192, 4096, 4096, DType::f32, true,
               MatmulEpilogue::relu_bias);
}

TEST(ContractionBench, GeluTanhBiasBf16_8192x4096x4096) {
  FX_BENCH_PREAMBLE();
  bench_matmul("matmul_bf16_8192x4096x4096_gemm_only", 8192, 4096, 4096, DType::bf16, false, MatmulEpilogue::none);
  bench_matmul("matmul_bf16_8192x4096x4096_gelu_tanh_bias", 8192, 4096, 4096, DType::bf16, false,
               MatmulEpilogue::gelu_tanh_bias);
}

TEST(ContractionBench, ReluBiasBf16_512x1024x1024) {
  FX_BENCH_PREAMBLE();
  bench_matmul("matmul_bf16_512x1024x1024_gemm_only", 512, 1024, 1024, DType::bf16, false, MatmulEpilogue::none);
  bench_matmul("matmul_bf16_512x1024x1024_relu_bias", 512, 1024, 1024, DType::bf16, false, MatmulEpilogue::relu_bias);
}

TEST(ContractionBench, QkvBf16_8192x4096_3x1024) {
  FX_BENCH_PREAMBLE();
  const std::int64_t m = 8192, k = 4096, n = 1024;
  const auto x = device_random(static_cast<std::size_t>(m * k), DType::bf16, 4);
  std::vector<fx::test::DeviceArray> w, y;
  std::vector<fx::gpu::HorizontalPart> parts;
  for (unsigned i = 0; i < 3; ++i) {
    w.push_back(device_random(static_cast<std::size_t>(k * n), DType::bf16, 5 + i));
    y.emplace_back(static_cast<std::size_t>(m * n * 2));
    parts.push_back({w.back().get(), n, nullptr});
  }
  Stream stream;
  fx::gpu::Matmul matmul;
  MatmulProblem single{.m = m, .n = n, .k = k};
  single.a_type = single.b_type = single.c_type = DType::bf16;
  bench("qkv_bf16_three_gemms", "3 x " + fx::gpu::describe_matmul(single), stream.get(), [&] {
    for (int i = 0; i < 3; ++i) matmul.run(single, x.get(), w[i].get(), nullptr, y[i].get(), stream.get());
  });
  const fx::gpu::HorizontalMatmul merged(parts, k, DType::bf16, stream.get());
  const MatmulProblem p = merged.problem(m);
  fx::test::DeviceArray out(static_cast<std::size_t>(m * merged.total_n() * 2));
  bench("qkv_bf16_one_gemm_concatenated", "1 x " + fx::gpu::describe_matmul(p), stream.get(),
        [&] { merged.run(matmul, p, x.get(), out.get(), stream.get()); });
}

void bench_conv(const std::string& name, fx::gpu::ConvEpilogue epilogue, bool tf32) {
  fx::gpu::Conv2dProblem p{.n = 32, .c = 64, .h = 56, .w = 56, .k = 64, .r = 3, .s = 3};
  p.pad_h = p.pad_w = 1;
  p.allow_tf32 = tf32;
  p.epilogue = epilogue;
  const auto x = device_random(32 * 64 * 56 * 56, DType::f32, 9);
  const auto w = device_random(64 * 64 * 9, DType::f32, 10);
  const auto b = device_random(64, DType::f32, 11);
  fx::test::DeviceArray y(32 * 64 * 56 * 56 * sizeof(float));
  Stream stream;
  fx::gpu::Conv2d conv;
  const void* bias = epilogue == fx::gpu::ConvEpilogue::none ? nullptr : b.get();
  conv.run(p, x.get(), w.get(), bias, y.get(), stream.get());  // the first call picks the algorithm
  bench(name, fx::gpu::describe_conv2d(p) + ", algorithm " + conv.algorithm(p), stream.get(),
        [&] { conv.run(p, x.get(), w.get(), bias, y.get(), stream.get()); });
}

// Host microseconds per Conv2d::run (the stream held back by a StreamGate while 200 launches are enqueued, so
// the host's own cost is measured alone) and GPU microseconds per launch (events around the same 200 launches,
// which the GPU runs back to back once the gate opens), for resnet18's convolution shapes at batch 32 as its fused plan runs them (NHWC, bias + ReLU, TF32),
// through the graph API and the legacy API. Prints
//   BENCH conv_host_us_<api>_<shape> <host us> (gpu <us>)
void bench_conv_host_time(fx::gpu::ConvApi api, const char* api_name) {
  struct Shape {
    const char* name;
    std::int64_t c, hw, k, r, stride, pad;
  };
  const Shape shapes[] = {{"conv1_7x7s2_3to64_224", 3, 224, 64, 7, 2, 3},
                          {"layer1_3x3_64to64_56", 64, 56, 64, 3, 1, 1},
                          {"layer2_1x1s2_64to128_56", 64, 56, 128, 1, 2, 0},
                          {"layer2_3x3_128to128_28", 128, 28, 128, 3, 1, 1},
                          {"layer3_3x3_256to256_14", 256, 14, 256, 3, 1, 1},
                          {"layer4_3x3_512to512_7", 512, 7, 512, 3, 1, 1}};
  constexpr int kLaunches = 200;
  for (const Shape& sh : shapes) {
    fx::gpu::Conv2dProblem p{.n = 32, .c = sh.c, .h = sh.hw, .w = sh.hw, .k = sh.k, .r = sh.r, .s = sh.r};
    p.stride_h = p.stride_w = sh.stride;
    p.pad_h = p.pad_w = sh.pad;
    p.allow_tf32 = true;
    p.epilogue = fx::gpu::ConvEpilogue::relu_bias;
    p.nhwc = true;
    const auto out = fx::gpu::conv2d_output_shape(p);
    const auto x = device_random(static_cast<std::size_t>(p.n * p.c * p.h * p.w), DType::f32, 12);
    const auto w = device_random(static_cast<std::size_t>(p.k * p.c * p.r * p.s), DType::f32, 13);
    const auto b = device_random(static_cast<std::size_t>(p.k), DType::f32, 14);
    fx::test::DeviceArray y(static_cast<std::size_t>(out.n * out.k * out.p * out.q) * sizeof(float));
    Stream stream;
    fx::gpu::Conv2d conv(api);
    auto launch = [&] { conv.run(p, x.get(), w.get(), b.get(), y.get(), stream.get()); };
    for (int i = 0; i < kWarmup; ++i) launch();
    cudaStreamSynchronize(stream.get());
    std::vector<double> host_us, gpu_us;
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    for (int rep = 0; rep < 5; ++rep) {
      {
        // Both the host's time and the GPU's behind the gate: the GPU starts on the launches once all are
        // enqueued, so the events see its time alone (without the gate, launches that cost the host more than
        // the GPU takes would put the host's time between the events as well).
        fx::gpu::StreamGate gate(stream.get());
        cudaEventRecord(start, stream.get());
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < kLaunches; ++i) launch();
        host_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                          kLaunches);
        cudaEventRecord(stop, stream.get());
      }
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      gpu_us.push_back(1e3 * ms / kLaunches);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    std::sort(host_us.begin(), host_us.end());
    std::sort(gpu_us.begin(), gpu_us.end());
    std::printf("BENCH conv_host_us_%s_%s %.1f (gpu %.1f) %s\n", api_name, sh.name, host_us[2], gpu_us[2],
                conv.algorithm(p).c_str());
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  }
}

TEST(ContractionBench, ConvHostTimePerLaunch) {
  FX_BENCH_PREAMBLE();
  bench_conv_host_time(fx::gpu::ConvApi::graph, "graph");
  bench_conv_host_time(fx::gpu::ConvApi::legacy, "legacy");
}

TEST(ContractionBench, Conv3x3_32x64x56x56_k64) {
  FX_BENCH_PREAMBLE();
  bench_conv("conv_f32_32x64x56x56_k64_3x3_unfused", fx::gpu::ConvEpilogue::none, false);
  bench_conv("conv_f32_32x64x56x56_k64_3x3_bias_relu_fused", fx::gpu::ConvEpilogue::relu_bias, false);
  bench_conv("conv_tf32_32x64x56x56_k64_3x3_unfused", fx::gpu::ConvEpilogue::none, true);
  bench_conv("conv_tf32_32x64x56x56_k64_3x3_bias_relu_fused", fx::gpu::ConvEpilogue::relu_bias, true);
}

}  // namespace
