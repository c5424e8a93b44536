// A variant of exp_two_consumers' fused kernel for bench/python/race.py --variant FILE:2: the generator's
// 8-byte layout (fusion-cli codegen sample_graphs/exp_two_consumers.json --json, code a90a176) with one edit:
// exp(x) as Triton computes it on f32 (ex2.approx.f32 of x * log2(e)) instead of expf.
// It tests one candidate cause of the gap race.py measured (docs/benchmarks.md).
// Of the generator's device helpers only fx_vec is used here.
template <typename T, int N>
struct alignas(sizeof(T) * N) fx_vec { T v[N]; };  // N elements moved by one (up to 16-byte) access

extern "C" __global__ void __launch_bounds__(256) fx_g0_y2(
    const float* __restrict__ in_x,
    float* __restrict__ out_y1,
    float* __restrict__ out_y2) {
  const int n = 67108864;  // elements of [8192, 8192]
  for (int base = ((int)blockIdx.x * blockDim.x + threadIdx.x) * 2; base < n; base += (int)gridDim.x * blockDim.x * 2) {
    const fx_vec<float, 2> x_v = *reinterpret_cast<const fx_vec<float, 2>*>(in_x + base);
    fx_vec<float, 2> out_y1_v;
    fx_vec<float, 2> out_y2_v;
    #pragma unroll
    for (int v = 0; v < 2; ++v) {
      const int i = base + v;
      const float x = x_v.v[v];
      float a_2;  // exp(x) as Triton lowers tl.exp on f32: ex2.approx of x * log2(e)
      asm("ex2.approx.f32 %0, %1;" : "=f"(a_2) : "f"(x * 1.4426950408889634f));  // a = exp(x)  -> f32[8192, 8192]
      const float y1 = (a_2 * 2.0f);  // y1 = mul(a, 2)  -> f32[8192, 8192]
      const float y2 = (a_2 + 1.0f);  // y2 = add(a, 1)  -> f32[8192, 8192]
      out_y1_v.v[v] = y1;
      out_y2_v.v[v] = y2;
    }
    *reinterpret_cast<fx_vec<float, 2>*>(out_y1 + base) = out_y1_v;
    *reinterpret_cast<fx_vec<float, 2>*>(out_y2 + base) = out_y2_v;
  }
}
