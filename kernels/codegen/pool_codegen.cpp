// max_pool2d over NCHW: one thread per output element, a plain loop over its window. The op reads each input
// element about (kernel / stride)^2 times (2.25 for ResNet's 3x3 stride 2); neighbouring threads read
// neighbouring columns, so the loads coalesce and the repeats hit the L1/L2, and the kernel runs near the
// bandwidth of its input once read and output once written.
#include <algorithm>

#include "kernels/codegen/codegen_internal.h"

namespace fx::gpu::codegen {

GeneratedKernel generate_max_pool2d(const Graph& g, NodeId n, const std::string& name) {
  const Node& node = g.node(n);
  const ValueId x = node.inputs[0].value;
  const Shape& xs = g.value_type(x).shape;
  const Shape& ys = node.type.shape;
  const DType t = node.type.dtype;
  const auto [kh, kw] = node.attrs.get_int_pair("kernel_size");
  const auto [sh, sw] = node.attrs.get_int_pair("stride");
  const auto [ph, pw] = node.attrs.get_int_pair("padding");
  const auto [dh, dw] = node.attrs.get_int_pair("dilation");
  GeneratedKernel k;
  k.name = name;
  k.kind = KernelKind::window_pool;
  k.nodes = {n};
  k.inputs = {x};
  k.outputs = {g.value_of(n)};
  k.block = 256;
  const std::int64_t total = numel(ys);
  k.grid = std::clamp<std::int64_t>((total + k.block - 1) / k.block, 1, INT32_MAX);
  k.bytes_moved = bytes_of(g, k.inputs) + bytes_of(g, k.outputs);
  k.layout = "one thread per output element";
  Identifiers ids;
  const std::string in = in_ptr(ids, g, x), out = out_ptr(ids, g, k.outputs[0]);
  Code c;
  c.line(header_comment(g, {n}, "max_pool2d " + std::to_string(kh) + "x" + std::to_string(kw) + ", stride " +
                                    std::to_string(sh) + "x" + std::to_string(sw) + ", one thread per output element"));
  c.line(kernel_signature(g, name, k.block, k.inputs, k.outputs, ids) + " {");
  c.indent();
  c.line("const long long total = " + number(total) + ";");
  c.line("const int H = " + number(xs[2]) + ", W = " + number(xs[3]) + ", P = " + number(ys[2]) + ", Q = " +
         number(ys[3]) + ";");
  c.line("for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {");
  c.indent();
  c.line("const int q = (int)(i % Q), p = (int)((i / Q) % P);");
  c.line("const long long plane = i / ((long long)P * Q);  // n * C + c");
  c.line("const " + storage_type(t) + "* src = " + in + " + plane * H * W;");
  c.line("float m = -__int_as_float(0x7f800000);  // padding is -inf");
  c.line("#pragma unroll");
  c.line("for (int r = 0; r < " + number(kh) + "; ++r) {");
  c.indent();
  c.line("const int h = p * " + number(sh) + " - " + number(ph) + " + r * " + number(dh) + ";");
  c.line("if (h < 0 || h >= H) continue;");
  c.line("#pragma unroll");
  c.line("for (int s = 0; s < " + number(kw) + "; ++s) {");
  c.indent();
  c.line("const int w = q * " + number(sw) + " - " + number(pw) + " + s * " + number(dw) + ";");
  c.line("if (w < 0 || w >= W) continue;");
  c.line("m = fx_max(m, " + from_storage(t, "src[(long long)h * W + w]") + ");  // a NaN in the window wins");
  c.dedent();
  c.line("}");
  c.dedent();
  c.line("}");
  c.line(out + "[i] = " + to_storage(t, "m") + ";");
  c.dedent();
  c.line("}");
  c.dedent();
  c.line("}");
  k.source = device_preamble() + "\n" + c.str();
  return k;
}

}  // namespace fx::gpu::codegen
