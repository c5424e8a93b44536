// max_pool2d: one thread per output element, a plain loop over its window. The op reads each input element
// about (kernel / stride)^2 times (2.25 for ResNet's 3x3 stride 2); the repeats hit the L1/L2, and the kernel
// runs near the bandwidth of its input once read and output once written.
//
// Two layouts of the same values. NCHW (row-major [N, C, H, W]): neighbouring threads compute neighbouring
// output columns of one plane. Channels-last ([N, H, W, C] in memory, the shapes unchanged): neighbouring
// threads compute neighbouring channels of one output position, so each load of a warp is one contiguous run of
// channels. The executor runs the channels-last one where the pool's input is kept NHWC between cuDNN's
// channels-last convolutions (kernels/executor/channels_last.h): in ResNet's stem, conv1's output (103 MB at
// batch 32) is then pooled where it lies instead of being converted to NCHW for the pool and the pool's output
// converted back for layer1.
#include <algorithm>

#include "kernels/codegen/codegen_internal.h"

namespace fx::gpu::codegen {

GeneratedKernel generate_max_pool2d(const Graph& g, NodeId n, const std::string& name, bool channels_last) {
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
  k.layout = channels_last ? "one thread per output element, channels-last (NHWC): a warp reads 32 neighbouring channels"
                           : "one thread per output element";
  Identifiers ids;
  const std::string in = in_ptr(ids, g, x), out = out_ptr(ids, g, k.outputs[0]);
  Code c = translation_unit();
  c.line(header_comment(g, {n}, "max_pool2d " + std::to_string(kh) + "x" + std::to_string(kw) + ", stride " +
                                    std::to_string(sh) + "x" + std::to_string(sw) + ", " + k.layout));
  c.line(kernel_signature(g, name, k.block, k.inputs, k.outputs, ids), " {");
  c.indent();
  c.line("const long long total = " + number(total) + ";");
  c.line("const int " + std::string(channels_last ? "C = " + number(xs[1]) + ", " : "") + "H = " + number(xs[2]) +
         ", W = " + number(xs[3]) + ", P = " + number(ys[2]) + ", Q = " + number(ys[3]) + ";");
  c.line("for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {");
  c.indent();
  std::string element;  // the input element at row h, column w of the window
  if (channels_last) {
    c.line("const int ch = (int)(i % C), q = (int)((i / C) % Q), p = (int)((i / ((long long)C * Q)) % P);");
    c.line("const long long image = i / ((long long)C * Q * P);");
    c.line("const " + storage_type(t) + "* src = " + in + " + image * H * W * C + ch;  // [N, H, W, C]");
    element = "src[((long long)h * W + w) * C]";
  } else {
    c.line("const int q = (int)(i % Q), p = (int)((i / Q) % P);");
    c.line("const long long plane = i / ((long long)P * Q);  // n * C + c");
    c.line("const " + storage_type(t) + "* src = " + in + " + plane * H * W;");
    element = "src[(long long)h * W + w]";
  }
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
  c.line("m = fx_max(m, " + from_storage(t, element) + ");  // a NaN in the window wins");
  c.dedent();
  c.line("}");
  c.dedent();
  c.line("}");
  c.line(out + "[i] = " + to_storage(t, "m") + ";");
  c.dedent();
  c.line("}");
  c.dedent();
  c.line("}");
  k.source = std::move(c).take();
  return k;
}

}  // namespace fx::gpu::codegen
