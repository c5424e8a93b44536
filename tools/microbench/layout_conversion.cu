// Micro-benchmark behind docs/benchmarks.md (conv_bn_relu, channels-last): the NCHW <-> NHWC conversions of
// the sample's activation (f32 [32, 64, 56*56]) as shared-memory tiled transposes of several tile shapes,
// threads per block and access widths, against a copy of the same bytes. Each is timed after a 256 MB flush
// and back to back (medians of 50). Build and run on the GPU machine:
//   nvcc -O3 -arch=sm_90 -std=c++17 tools/microbench/layout_conversion.cu -o /tmp/lc && /tmp/lc
#include "common.cuh"

namespace {

constexpr long long B = 32, C = 64, HW = 56 * 56;

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
    for (int i = threadIdx.x; i < TR * kPerRow; i += THREADS) {
      const int r = i / kPerRow, c = (i % kPerRow) * V;
      if (r0 + r >= rows) continue;
      if (V == 4 && c0 + c + 3 < cols) {
        const float4 v = *reinterpret_cast<const float4*>(&src[(r0 + r) * cols + c0 + c]);
        tile[r][c] = v.x; tile[r][c + 1] = v.y; tile[r][c + 2] = v.z; tile[r][c + 3] = v.w;
      } else {
        for (int k = 0; k < V; ++k) {
          if (c0 + c + k < cols) tile[r][c + k] = src[(r0 + r) * cols + c0 + c + k];
        }
      }
    }
    __syncthreads();
    constexpr int kPerCol = TR / V;  // threads along an output row (input rows) in phase 2
    for (int i = threadIdx.x; i < TC * kPerCol; i += THREADS) {
      const int c = i / kPerCol, r = (i % kPerCol) * V;
      if (c0 + c >= cols) continue;
      if (V == 4 && r0 + r + 3 < rows) {
        *reinterpret_cast<float4*>(&dst[(c0 + c) * rows + r0 + r]) =
            make_float4(tile[r][c], tile[r + 1][c], tile[r + 2][c], tile[r + 3][c]);
      } else {
        for (int k = 0; k < V; ++k) {
          if (r0 + r + k < rows) dst[(c0 + c) * rows + r0 + r + k] = tile[r + k][c];
        }
      }
    }
    __syncthreads();
  }
}

template <int TR, int TC, int THREADS, int V>
void race(const char* what, const float* in, float* out, long long rows, long long cols, int grid_cap) {
  const long long tiles = B * ((rows + TR - 1) / TR) * ((cols + TC - 1) / TC);
  const int grid = static_cast<int>(grid_cap > 0 ? std::min<long long>(tiles, grid_cap) : tiles);
  auto f = [&] { tiled<TR, TC, THREADS, V><<<grid, THREADS>>>(in, out, B, rows, cols); };
  std::printf("  %-44s tile %3dx%-3d %4d threads v%d grid %6d: flushed %.4f ms, back to back %.4f ms\n", what, TR, TC,
              THREADS, V, grid, median_ms(f, true), median_ms(f, false));
}

template <int TR, int TC, int THREADS, int V>
void both(const float* x, float* y, int grid_cap = 0) {
  race<TR, TC, THREADS, V>("NCHW -> NHWC ([32, 64, 3136] -> [32, 3136, 64])", x, y, C, HW, grid_cap);
  race<TR, TC, THREADS, V>("NHWC -> NCHW ([32, 3136, 64] -> [32, 64, 3136])", x, y, HW, C, grid_cap);
}

}  // namespace

int main() {
  const size_t bytes = B * C * HW * sizeof(float);
  float *x, *y;
  CK(cudaMalloc(&x, bytes)); CK(cudaMalloc(&y, bytes)); CK(cudaMalloc(&g_flush, 256u << 20));
  CK(cudaMemset(x, 0, bytes));
  const long long n4 = static_cast<long long>(bytes / 16);
  auto copy = [&] { copy4<<<static_cast<unsigned>((n4 + 255) / 256), 256>>>((const float4*)x, (float4*)y, n4); };
  std::printf("copy of the same 25.7 MB: flushed %.4f ms, back to back %.4f ms\n", median_ms(copy, true),
              median_ms(copy, false));
  both<64, 64, 512, 1>(x, y);  // the generated kernel's shape (kTile 64, 32 x 16 threads)
  both<64, 64, 256, 1>(x, y);
  both<32, 32, 256, 1>(x, y);
  both<32, 64, 256, 1>(x, y);
  both<64, 32, 256, 1>(x, y);
  both<64, 64, 256, 4>(x, y);
  both<64, 64, 512, 4>(x, y);
  both<32, 128, 256, 4>(x, y);
  both<128, 32, 256, 4>(x, y);
  both<64, 64, 256, 4>(x, y, 132 * 8);  // persistent: 8 blocks per SM
  return 0;
}
