// Micro-benchmark behind docs/benchmarks.md (conv_bn_relu, channels-last): the NCHW <-> NHWC conversions of
// the sample's activation (f32 [32, 64, 56*56]) as shared-memory tiled transposes of several tile shapes,
// threads per block and access widths, and as register transposes (no shared memory), against a copy of the
// same bytes. Each is timed in the two places the plan runs them (medians of 50):
//   flushed: after a 256 MB flush, the source in DRAM (x to NHWC, the plan's first kernel);
//   after producer: after the flush, a copy kernel writes the source just before (y back to NCHW, which reads
//     the convolution's output from the L2, dirty);
//   back to back: everything warm.
// Every variant's output is checked against a host transpose. Build and run on the GPU machine:
//   nvcc -O3 -arch=sm_90 -std=c++17 bench/microbench/layout_conversion.cu -o /tmp/lc && /tmp/lc
// conversion_torch.py times torch.compile's conversions in the same three places.
#include "common.cuh"

namespace {

constexpr long long C = 64, HW = 56 * 56;
long long B = 32;  // batch: 32 for the conversions, 1 for the square transpose at the end

// [batch, rows, cols] -> [batch, cols, rows]. A block takes a TR x TC tile of the input (rows r0.., cols c0..):
// phase 1 reads rows with consecutive threads along cols (V floats each), phase 2 writes the output's rows
// (input cols) with consecutive threads along input rows (V floats each).
template <int TR, int TC, int THREADS, int V>
__global__ void __launch_bounds__(THREADS) tiled(const float* __restrict__ in, float* __restrict__ out, long long batch,
                                                 long long rows, long long cols) {
  __shared__ float tile[TR][TC + 1];
  const long long tiles_r = (rows + TR - 1) / TR, tiles_c = (cols + TC - 1) / TC;
  for (long long t = blockIdx.x; t < batch * tiles_r * tiles_c; t += gridDim.x) {
    const long long b = t / (tiles_r * tiles_c), rem = t % (tiles_r * tiles_c);
    const long long r0 = (rem / tiles_c) * TR, c0 = (rem % tiles_c) * TC;
    const float* src = in + b * rows * cols;
    float* dst = out + b * rows * cols;
    constexpr int kPerRow = TC / V;  // threads along a tile row in phase 1
#pragma unroll
    for (int i = threadIdx.x; i < TR * kPerRow; i += THREADS) {
      const int r = i / kPerRow, c = (i % kPerRow) * V;
      if (r0 + r >= rows) continue;
      if (V == 4 && c0 + c + 3 < cols) {
        const float4 v = *reinterpret_cast<const float4*>(&src[(r0 + r) * cols + c0 + c]);
        tile[r][c] = v.x; tile[r][c + 1] = v.y; tile[r][c + 2] = v.z; tile[r][c + 3] = v.w;
      } else if (V == 2 && c0 + c + 1 < cols) {
        const float2 v = *reinterpret_cast<const float2*>(&src[(r0 + r) * cols + c0 + c]);
        tile[r][c] = v.x; tile[r][c + 1] = v.y;
      } else {
        for (int k = 0; k < V; ++k) {
          if (c0 + c + k < cols) tile[r][c + k] = src[(r0 + r) * cols + c0 + c + k];
        }
      }
    }
    __syncthreads();
    constexpr int kPerCol = TR / V;  // threads along an output row (input rows) in phase 2
#pragma unroll
    for (int i = threadIdx.x; i < TC * kPerCol; i += THREADS) {
      const int c = i / kPerCol, r = (i % kPerCol) * V;
      if (c0 + c >= cols) continue;
      if (V == 4 && r0 + r + 3 < rows) {
        *reinterpret_cast<float4*>(&dst[(c0 + c) * rows + r0 + r]) =
            make_float4(tile[r][c], tile[r + 1][c], tile[r + 2][c], tile[r + 3][c]);
      } else if (V == 2 && r0 + r + 1 < rows) {
        *reinterpret_cast<float2*>(&dst[(c0 + c) * rows + r0 + r]) = make_float2(tile[r][c], tile[r + 1][c]);
      } else {
        for (int k = 0; k < V; ++k) {
          if (r0 + r + k < rows) dst[(c0 + c) * rows + r0 + r + k] = tile[r + k][c];
        }
      }
    }
    __syncthreads();
  }
}

// The same conversion without shared memory: each thread loads a V x V block (V rows of the input, V floats
// each), transposes it in registers and stores V rows of the output, V floats each. A warp's lanes are LC along
// the input's cols and 32 / LC along its rows, so a load instruction reads LC * V * 4 contiguous bytes of each of
// 32 / LC rows and a store writes (32 / LC) * V * 4 contiguous bytes of each of LC * V output rows. A block has
// WARPS warps stacked along rows; rows and cols must be multiples of the block's tile (checked by the caller).
template <int V, int LC, int WARPS>
__global__ void __launch_bounds__(WARPS * 32) regs(const float* __restrict__ in, float* __restrict__ out,
                                                   long long batch, long long rows, long long cols) {
  using Vec = typename std::conditional<V == 4, float4, float2>::type;
  constexpr int kLR = 32 / LC, kTC = LC * V, kTR = kLR * V * WARPS;
  const long long tiles_r = rows / kTR, tiles_c = cols / kTC;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (long long t = blockIdx.x; t < batch * tiles_r * tiles_c; t += gridDim.x) {
    const long long b = t / (tiles_r * tiles_c), rem = t % (tiles_r * tiles_c);
    const long long r = (rem / tiles_c) * kTR + (warp * kLR + lane / LC) * V;
    const long long c = (rem % tiles_c) * kTC + (lane % LC) * V;
    const float* src = in + b * rows * cols;
    float* dst = out + b * rows * cols;
    float v[V][V];
#pragma unroll
    for (int i = 0; i < V; ++i) {
      const Vec x = *reinterpret_cast<const Vec*>(&src[(r + i) * cols + c]);
      const float* xs = reinterpret_cast<const float*>(&x);
#pragma unroll
      for (int j = 0; j < V; ++j) v[i][j] = xs[j];
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      Vec y;
      float* ys = reinterpret_cast<float*>(&y);
#pragma unroll
      for (int i = 0; i < V; ++i) ys[i] = v[i][j];
      *reinterpret_cast<Vec*>(&dst[(c + j) * rows + r]) = y;
    }
  }
}


// The generated kernel's structure (kernels/codegen/transpose_codegen.cpp): one T x T tile per block, W warps,
// 32-bit indices, sizes known at compile time; a lane moves V consecutive floats (one V-wide access) along the
// fast dim of each phase, the warp's lanes spread over min(32, T / V) of them and 32 / that many rows.
// kRows/kCols: the input's [rows, cols] per batch item.
template <int T, int W, int V, int kRows, int kCols, bool kStream>
__global__ void __launch_bounds__(W * 32) gen(const float* __restrict__ in, float* __restrict__ out) {
  using Vec = typename std::conditional<V == 4, float4, typename std::conditional<V == 2, float2, float>::type>::type;
  constexpr int kFast = (T / V < 32 ? T / V : 32), kSlow = 32 / kFast;
  __shared__ float tile[T][T + 1];
  constexpr int tiles_r = (kRows + T - 1) / T, tiles_c = (kCols + T - 1) / T;
  const int t = blockIdx.x;
  const int b = t / (tiles_r * tiles_c), rem = t % (tiles_r * tiles_c);
  const int r0 = (rem / tiles_c) * T, c0 = (rem % tiles_c) * T;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int fast = (lane % kFast) * V, slow = warp * kSlow + lane / kFast;
  const float* src = in + b * kRows * kCols;
  float* dst = out + b * kRows * kCols;
#pragma unroll
  for (int r = slow; r < T; r += W * kSlow) {
#pragma unroll
    for (int c = fast; c < T; c += kFast * V) {
      if (r0 + r >= kRows || c0 + c >= kCols) continue;
      Vec v;
      if constexpr (kStream) {  // evict-first: the source is read once
        v = __ldcs(reinterpret_cast<const Vec*>(&src[(r0 + r) * kCols + c0 + c]));
      } else {
        v = *reinterpret_cast<const Vec*>(&src[(r0 + r) * kCols + c0 + c]);
      }
      const float* vs = reinterpret_cast<const float*>(&v);
#pragma unroll
      for (int k = 0; k < V; ++k) tile[r][c + k] = vs[k];
    }
  }
  __syncthreads();
#pragma unroll
  for (int c = slow; c < T; c += W * kSlow) {
#pragma unroll
    for (int r = fast; r < T; r += kFast * V) {
      if (c0 + c >= kCols || r0 + r >= kRows) continue;
      Vec v;
      float* vs = reinterpret_cast<float*>(&v);
#pragma unroll
      for (int k = 0; k < V; ++k) vs[k] = tile[r + k][c];
      *reinterpret_cast<Vec*>(&dst[(c0 + c) * kRows + r0 + r]) = v;
    }
  }
}

float* g_x = nullptr;       // the source: [32, 64, 3136] or [32, 3136, 64]
float* g_y = nullptr;       // the destination
float* g_keep = nullptr;    // the source's values, which "after producer" copies into g_x before each run
std::vector<float> g_host;  // the source's values on the host

// Times f in the three places; checks its output against the host transpose of [B, rows, cols].
void report(const char* what, long long rows, long long cols, const std::function<void()>& f) {
  const size_t n = B * rows * cols;
  CK(cudaMemset(g_y, 0, n * 4));
  f();
  std::vector<float> got(n);
  CK(cudaMemcpy(got.data(), g_y, n * 4, cudaMemcpyDeviceToHost));
  long long bad = 0;
  for (long long b = 0; b < B; ++b)
    for (long long r = 0; r < rows; ++r)
      for (long long c = 0; c < cols; ++c) bad += got[(b * cols + c) * rows + r] != g_host[(b * rows + r) * cols + c];
  const long long n4 = static_cast<long long>(n / 4);
  auto produce = [&] { copy4<<<static_cast<unsigned>((n4 + 255) / 256), 256>>>((const float4*)g_keep, (float4*)g_x, n4); };
  std::printf("  %-40s flushed %.4f  after producer %.4f  back to back %.4f ms%s\n", what, median_ms(f, true),
              median_ms(f, true, produce), median_ms(f, false), bad ? "  WRONG OUTPUT" : "");
}

template <int TR, int TC, int THREADS, int V>
void tiled_both(int grid_cap = 0) {
  for (const auto& shape : {std::pair{C, HW}, std::pair{HW, C}}) {
    const long long rows = shape.first, cols = shape.second;
    const long long tiles = B * ((rows + TR - 1) / TR) * ((cols + TC - 1) / TC);
    const int grid = static_cast<int>(grid_cap > 0 ? std::min<long long>(tiles, grid_cap) : tiles);
    char what[128];
    std::snprintf(what, sizeof what, "%s smem %dx%d %d thr v%d%s", rows == C ? "to NHWC" : "to NCHW", TR, TC,
                  THREADS, V, grid_cap ? " persistent" : "");
    report(what, rows, cols, [&] { tiled<TR, TC, THREADS, V><<<grid, THREADS>>>(g_x, g_y, B, rows, cols); });
  }
}

template <int V, int LC, int WARPS>
void regs_both() {
  constexpr int kTC = LC * V, kTR = (32 / LC) * V * WARPS;
  for (const auto& shape : {std::pair{C, HW}, std::pair{HW, C}}) {
    const long long rows = shape.first, cols = shape.second;
    if (rows % kTR || cols % kTC) continue;
    const int grid = static_cast<int>(B * (rows / kTR) * (cols / kTC));
    char what[128];
    std::snprintf(what, sizeof what, "%s regs %dx%d v%d lanes %dx%d %dw", rows == C ? "to NHWC" : "to NCHW", kTR,
                  kTC, V, 32 / LC, LC, WARPS);
    report(what, rows, cols, [&] { regs<V, LC, WARPS><<<grid, WARPS * 32>>>(g_x, g_y, B, rows, cols); });
  }
}


template <int T, int W, int V, int kRows, int kCols, bool kStream = false>
void gen_one() {
  const int grid = static_cast<int>(B * ((kRows + T - 1) / T) * ((kCols + T - 1) / T));
  char what[128];
  std::snprintf(what, sizeof what, "%s gen %dx%d %dw v%d%s", kRows == C ? "to NHWC" : kRows == HW ? "to NCHW" : "square",
                T, T, W, V, kStream ? " ldcs" : "");
  report(what, kRows, kCols, [&] { gen<T, W, V, kRows, kCols, kStream><<<grid, W * 32>>>(g_x, g_y); });
}

template <int T, int W, int V, bool kStream = false>
void gen_both() {
  gen_one<T, W, V, C, HW, kStream>();
  gen_one<T, W, V, HW, C, kStream>();
}

}  // namespace

int main() {
  const size_t n = B * C * HW, bytes = n * sizeof(float);
  CK(cudaMalloc(&g_x, bytes)); CK(cudaMalloc(&g_y, bytes)); CK(cudaMalloc(&g_keep, bytes));
  CK(cudaMalloc(&g_flush, 256u << 20));
  g_host.resize(n);
  for (size_t i = 0; i < n; ++i) g_host[i] = static_cast<float>((i * 2654435761u) % 1000003u);
  CK(cudaMemcpy(g_x, g_host.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(g_keep, g_x, bytes, cudaMemcpyDeviceToDevice));
  const long long n4 = static_cast<long long>(bytes / 16);
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s; [32, 64, 3136] f32 <-> [32, 3136, 64], 25.7 MB each way\n", prop.name);
  auto copy = [&] { copy4<<<static_cast<unsigned>((n4 + 255) / 256), 256>>>((const float4*)g_x, (float4*)g_y, n4); };
  auto produce = [&] { copy4<<<static_cast<unsigned>((n4 + 255) / 256), 256>>>((const float4*)g_keep, (float4*)g_x, n4); };
  std::printf("  %-40s flushed %.4f  after producer %.4f  back to back %.4f ms\n", "copy of the same bytes",
              median_ms(copy, true), median_ms(copy, true, produce), median_ms(copy, false));
  gen_both<64, 16, 1>();  // the generated kernel (kTile 64, 16 warps)
  gen_both<64, 8, 1>();
  gen_both<64, 4, 1>();
  gen_both<32, 4, 1>();
  gen_both<32, 8, 1>();
  gen_both<32, 4, 2>();
  gen_both<32, 4, 4>();  // Triton's shape for this conversion (32 x 32, 4 warps, 16-byte accesses)
  gen_both<32, 4, 4, true>();
  gen_both<32, 2, 4>();
  gen_both<32, 8, 4>();
  gen_both<64, 4, 4>();
  gen_both<64, 8, 4>();
  gen_both<64, 16, 4>();
  gen_both<64, 8, 2>();
  gen_both<64, 16, 2>();
  tiled_both<64, 64, 256, 2>();
  tiled_both<64, 64, 256, 4>();
  tiled_both<64, 64, 512, 4>();
  tiled_both<32, 128, 256, 4>();
  tiled_both<128, 32, 256, 4>();
  tiled_both<64, 64, 256, 4>(132 * 8);  // persistent: 8 blocks per SM
  regs_both<2, 8, 4>();
  regs_both<2, 4, 4>();
  // transpose_chain's shape: [8192, 8192] f32 (256 MiB each way), the generated kernel's layouts and others.
  CK(cudaFree(g_x)); CK(cudaFree(g_y)); CK(cudaFree(g_keep));
  B = 1;
  constexpr int kSide = 8192;
  const size_t sq = size_t{kSide} * kSide;
  CK(cudaMalloc(&g_x, sq * 4)); CK(cudaMalloc(&g_y, sq * 4)); CK(cudaMalloc(&g_keep, sq * 4));
  g_host.resize(sq);
  for (size_t i = 0; i < sq; ++i) g_host[i] = static_cast<float>((i * 2654435761u) % 1000003u);
  CK(cudaMemcpy(g_x, g_host.data(), sq * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(g_keep, g_x, sq * 4, cudaMemcpyDeviceToDevice));
  const long long sq4 = static_cast<long long>(sq / 4);
  auto sq_copy = [&] { copy4<<<static_cast<unsigned>((sq4 + 255) / 256), 256>>>((const float4*)g_x, (float4*)g_y, sq4); };
  std::printf("square [8192, 8192] f32:\n  %-40s flushed %.4f  back to back %.4f ms\n", "copy of the same bytes",
              median_ms(sq_copy, true), median_ms(sq_copy, false));
  gen_one<64, 16, 1, kSide, kSide>();
  gen_one<64, 8, 1, kSide, kSide>();
  gen_one<64, 4, 4, kSide, kSide>();
  gen_one<64, 8, 4, kSide, kSide>();
  gen_one<64, 16, 4, kSide, kSide>();
  gen_one<64, 8, 2, kSide, kSide>();
  gen_one<64, 16, 2, kSide, kSide>();
  gen_one<32, 4, 4, kSide, kSide>();
  gen_one<32, 8, 1, kSide, kSide>();
  gen_one<64, 4, 4, kSide, kSide, true>();
  return 0;
}
