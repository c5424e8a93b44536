// The rearrangement of a convolution's x for its space-to-depth form (codegen.h, generate_space_to_depth). Each
// thread writes one pixel of the channels-last output, its channels as 16-byte stores, so a warp's stores are one
// contiguous run; for each of the block's input rows, the warp's loads are neighbouring columns of one plane.
#include <algorithm>
#include <climits>
#include <stdexcept>

#include "kernels/codegen/codegen_internal.h"

namespace fx::gpu {

GeneratedKernel generate_space_to_depth(DType t, const SpaceToDepthShape& s, const std::string& name) {
  using codegen::number;
  for (std::int64_t v : {s.n, s.c, s.h, s.w, s.factor, s.out_h, s.out_w, s.out_c}) {
    if (v < 1) throw std::invalid_argument("space to depth " + name + ": sizes must be positive");
  }
  if (s.out_c < s.c * s.factor * s.factor) {
    throw std::invalid_argument("space to depth " + name + ": " + std::to_string(s.out_c) +
                                " output channels cannot hold " + std::to_string(s.c * s.factor * s.factor));
  }
  GeneratedKernel k;
  k.name = name;
  k.kind = KernelKind::elementwise;
  k.block = 256;
  const std::int64_t pixels = s.n * s.out_h * s.out_w;
  k.grid = std::clamp<std::int64_t>((pixels + k.block - 1) / k.block, 1, INT32_MAX);
  k.bytes_moved = (s.n * s.c * s.h * s.w + pixels * s.out_c) * dtype_size(t);
  // A pixel's channels leave as 16-byte stores where they fill them (out_c a multiple of 8: f32, f16, bf16).
  const std::int64_t pixel_bytes = s.out_c * dtype_size(t);
  const bool wide = pixel_bytes % 16 == 0;
  const std::string f = number(s.factor);
  k.layout = "one thread per output pixel" + std::string(wide ? " (16-byte stores)" : "") + ": " + f + "x" + f +
             " blocks of " + number(s.c) + " channels as " + number(s.c * s.factor * s.factor) +
             (s.out_c > s.c * s.factor * s.factor ? " (padded to " + number(s.out_c) + ")" : "") + " channels, channels-last";
  const std::string type = codegen::storage_type(t);
  codegen::Code c = codegen::translation_unit();
  c.line("// Kernel: a convolution's x, [N, C, H, W], rearranged into " + f + "x" + f +
         " blocks, [N, H', W', C'] (space to depth). A thread");
  c.line("// writes one pixel's channels; for one input row the threads of a warp read neighbouring columns.");
  c.line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(k.block) + ") " + name + "(");
  c.line("    const " + type + "* __restrict__ src, " + type + "* __restrict__ dst) {");
  c.indent();
  c.line("const long long pixels = " + number(pixels) + ";");
  c.line("const int C = " + number(s.c) + ", H = " + number(s.h) + ", W = " + number(s.w) + ", F = " + f +
         ", OH = " + number(s.out_h) + ", OW = " + number(s.out_w) + ";");
  c.line("for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < pixels; i += (long long)gridDim.x * blockDim.x) {");
  c.indent();
  c.line("const int q = (int)(i % OW), p = (int)((i / OW) % OH);");
  c.line("const long long image = i / ((long long)OW * OH);");
  c.line("__align__(16) " + type + " v[" + number(s.out_c) + "];");
  c.line("#pragma unroll");
  c.line("for (int ch = 0; ch < " + number(s.out_c) + "; ++ch) {");
  c.indent();
  c.line("const int plane = ch / (F * F), h = p * F + (ch / F) % F - " + number(s.pad_h) + ", w = q * F + ch % F - " +
         number(s.pad_w) + ";");
  c.line("v[ch] = plane < C && h >= 0 && h < H && w >= 0 && w < W ? src[((image * C + plane) * H + h) * W + w] : " +
         codegen::to_storage(t, "0.0f") + ";");
  c.dedent();
  c.line("}");
  if (wide) {
    c.line("uint4* out = reinterpret_cast<uint4*>(dst + i * " + number(s.out_c) + ");");
    c.line("#pragma unroll");
    c.line("for (int j = 0; j < " + number(pixel_bytes / 16) + "; ++j) out[j] = reinterpret_cast<const uint4*>(v)[j];");
  } else {
    c.line("#pragma unroll");
    c.line("for (int ch = 0; ch < " + number(s.out_c) + "; ++ch) dst[i * " + number(s.out_c) + " + ch] = v[ch];");
  }
  c.dedent();
  c.line("}");
  c.dedent();
  c.line("}");
  k.source = std::move(c).take();
  return k;
}

}  // namespace fx::gpu
