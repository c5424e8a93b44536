// The slow, always-correct reduction: one thread per reduced fibre, plain loops over the reduced elements.
// Used for reductions over leading or middle axes and for rows too long to keep in registers.
#include <algorithm>

#include "kernels/codegen/codegen_internal.h"

namespace fx::gpu::codegen {
namespace {

struct Fibres {
  Shape kept, reduced;
  std::vector<bool> is_reduced;  // per input dim
};

Fibres fibres_of(const Node& node, const Shape& f) {
  std::vector<bool> red(f.size(), false);
  if (node.op_id() == OpId::softmax) {
    red[static_cast<std::size_t>(*normalize_axis(node.attrs.get_int("axis"), f.size()))] = true;
  } else if (node.op_id() == OpId::layernorm) {
    for (auto d = static_cast<std::size_t>(*normalize_axis(node.attrs.get_int("axis"), f.size())); d < f.size(); ++d) red[d] = true;
  } else if (node.op_id() == OpId::rmsnorm) {
    red.back() = true;
  } else {
    for (auto a : node.attrs.get_ints("axis")) red[static_cast<std::size_t>(*normalize_axis(a, f.size()))] = true;
  }
  Fibres fb{{}, {}, red};
  for (std::size_t d = 0; d < f.size(); ++d) (red[d] ? fb.reduced : fb.kept).push_back(f[d]);
  return fb;
}

// Offset in the input of (fibre o, reduced index j).
std::string offset_expr(const Shape& f, const Fibres& fb) {
  auto kc = coords_of(fb.kept, "o");
  auto rc = coords_of(fb.reduced, "j");
  std::vector<std::string> c(f.size());
  std::size_t ki = 0, ri = 0;
  for (std::size_t d = 0; d < f.size(); ++d) c[d] = fb.is_reduced[d] ? rc[ri++] : kc[ki++];
  return flat_of(f, c);
}

}  // namespace

GeneratedKernel generate_generic_reduction(const Graph& g, NodeId n, const std::string& name) {
  const Node& node = g.node(n);
  const ValueId x = node.inputs[0].value;
  const Shape& f = g.value_type(x).shape;
  const DType t = node.type.dtype;
  const Fibres fb = fibres_of(node, f);
  const std::int64_t fibres = numel(fb.kept), len = numel(fb.reduced);
  GeneratedKernel k;
  k.name = name;
  k.kind = KernelKind::generic_reduction;
  k.nodes = {n};
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    if (std::find(k.inputs.begin(), k.inputs.end(), node.inputs[i].value) == k.inputs.end()) k.inputs.push_back(node.inputs[i].value);
  }
  k.outputs = {g.value_of(n)};
  k.block = 128;
  k.grid = std::clamp<std::int64_t>((fibres + k.block - 1) / k.block, 1, INT32_MAX);
  k.bytes_moved = bytes_of(g, k.inputs) + bytes_of(g, k.outputs);
  Identifiers ids;
  std::vector<std::string> in;
  for (std::size_t i = 0; i < node.inputs.size(); ++i) in.push_back(in_ptr(ids, g, node.inputs[i].value));
  const std::string out = out_ptr(ids, g, k.outputs[0]);
  const std::string off = offset_expr(f, fb);
  const std::string xj = from_storage(g.value_type(x).dtype, in[0] + "[" + off + "]");
  const std::string at = compute_type(t) == "float" ? "float" : "long long";
  Code c = translation_unit();
  c.line(header_comment(g, {n}, "generic reduction: one thread per fibre of " + std::to_string(len) + " elements"));
  c.line(kernel_signature(g, name, k.block, k.inputs, k.outputs, ids), " {");
  c.indent();
  c.line("const long long fibres = " + number(fibres) + ", len = " + number(len) + ";");
  c.line("for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < fibres; o += (long long)gridDim.x * blockDim.x) {");
  c.indent();
  const std::string loop = "for (long long j = 0; j < len; ++j) ";
  if (node.op_id() == OpId::sum || node.op_id() == OpId::mean) {
    c.line(at + " acc = 0;");
    c.line(loop + "acc += (" + at + ")" + xj + ";");
    if (node.op_id() == OpId::mean) c.line("acc /= (" + at + ")len;");
    c.line(out + "[o] = " + to_storage(t, round_to(t, "(" + compute_type(t) + ")acc")) + ";");
  } else if (node.op_id() == OpId::max || node.op_id() == OpId::min) {
    c.line(compute_type(t) + " acc;");
    c.line("{ const long long j = 0; acc = " + xj + "; }");
    c.line(loop + "acc = fx_" + node.op + "(acc, " + xj + ");");
    c.line(out + "[o] = " + to_storage(t, "acc") + ";");
  } else if (node.op_id() == OpId::softmax) {
    c.line("float row_max = -__int_as_float(0x7f800000);");
    c.line(loop + "row_max = fx_max(row_max, " + xj + ");");
    c.line("float row_sum = 0.0f;");
    c.line(loop + "row_sum += expf(" + xj + " - row_max);");
    c.line("const float inv_sum = 1.0f / row_sum;");
    c.line(loop + out + "[" + off + "] = " + to_storage(t, round_to(t, "expf(" + xj + " - row_max) * inv_sum")) + ";");
  } else {  // layernorm / rmsnorm over trailing dims: j is also the affine parameters' index
    const bool layer = node.op_id() == OpId::layernorm;
    const std::string eps = literal(node.attrs.get_number("eps"), DType::f32);
    c.line("float mean = 0.0f;");
    if (layer) c.line(loop + "mean += " + xj + ";"), c.line("mean /= (float)len;");
    c.line("float sq = 0.0f;");
    c.line(loop + "{ const float d = " + xj + " - mean; sq += d * d; }");
    c.line("const float rstd = rsqrtf(sq / (float)len + " + eps + ");");
    std::string e = "(" + xj + " - mean) * rstd";
    if (in.size() > 1) e += " * " + from_storage(t, in[1] + "[j]");
    if (in.size() > 2) e += " + " + from_storage(t, in[2] + "[j]");
    c.line(loop + out + "[" + off + "] = " + to_storage(t, round_to(t, e)) + ";");
  }
  c.dedent();
  c.line("}");
  c.dedent();
  c.line("}");
  k.source = std::move(c).take();
  return k;
}

}  // namespace fx::gpu::codegen
