// A variant of exp_two_consumers' fused kernel for bench/python/race.py --variant FILE:65536x128: the generator's
// body (fusion-cli codegen sample_graphs/exp_two_consumers.json --json, code a90a176) in Triton's layout for
// Inductor's pointwise kernel of this size (XBLOCK = 1024, 4 warps): a block of 128 threads covers 1024
// elements, each thread two 16-byte accesses 512 elements apart, and no grid-stride loop.
// It tests one candidate cause of the gap race.py measured (docs/benchmarks.md).
// Of the generator's device helpers only fx_vec is used here.
template <typename T, int N>
struct alignas(sizeof(T) * N) fx_vec { T v[N]; };  // N elements moved by one (up to 16-byte) access

extern "C" __global__ void __launch_bounds__(256) fx_g0_y2(
    const float* __restrict__ in_x,
    float* __restrict__ out_y1,
    float* __restrict__ out_y2) {
  const int n = 67108864;  // elements of [8192, 8192]
  #pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int base = (int)blockIdx.x * 1024 + half * 512 + (int)threadIdx.x * 4;
    if (base >= n) break;
    const fx_vec<float, 4> x_v = *reinterpret_cast<const fx_vec<float, 4>*>(in_x + base);
    fx_vec<float, 4> out_y1_v;
    fx_vec<float, 4> out_y2_v;
    #pragma unroll
    for (int v = 0; v < 4; ++v) {
      const float x = x_v.v[v];
      const float a_2 = expf(x);  // a = exp(x)  -> f32[8192, 8192]
      const float y1 = (a_2 * 2.0f);  // y1 = mul(a, 2)  -> f32[8192, 8192]
      const float y2 = (a_2 + 1.0f);  // y2 = add(a, 1)  -> f32[8192, 8192]
      out_y1_v.v[v] = y1;
      out_y2_v.v[v] = y2;
    }
    *reinterpret_cast<fx_vec<float, 4>*>(out_y1 + base) = out_y1_v;
    *reinterpret_cast<fx_vec<float, 4>*>(out_y2 + base) = out_y2_v;
  }
}
