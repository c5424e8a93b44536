// Elementwise groups: any DAG of elementwise, broadcast and layout ops becomes one loop over the output's
// elements. Each value is computed where it is needed from the coordinates of the element being written
// ("contexts"): broadcasting drops coordinates, transpose permutes them, reshape keeps the flat index, slice
// shifts one, concat branches. Each thread handles kVec consecutive output elements and stores them with one
// 16-byte access, or 8-byte in the alternative layouts the executor times against it (the alignment holds
// because the innermost dimension is a multiple of kVec). Tensors read
// at the output's own index (or broadcast along it) are loaded the same way; tensors read through a layout
// op are loaded element by element at their remapped index. Storing 16 bytes and giving each thread kVec
// independent loads in flight moves a head-split permute ([B,S,H,D] -> [B,H,S,D]) at copy speed, which one
// element per thread does not reach.
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "kernels/codegen/elementwise_emitter.h"

namespace fx::gpu::codegen {
namespace {

// Elements per thread: one access of at most `access_bytes` to the widest tensor touched, when the innermost
// dimension allows.
int choose_vec(std::int64_t widest, const Shape& root, int access_bytes) {
  if (root.empty()) return 1;
  int vec = static_cast<int>(std::clamp<std::int64_t>(access_bytes / widest, 1, 8));
  while (vec > 1 && root.back() % vec != 0) vec /= 2;
  return vec;
}

constexpr int kBlock = 256;      // threads per block of the default layouts
constexpr int kWideBlock = 512;  // of the wide-block layout

std::string describe_layout(int vec, std::int64_t widest, int block = kBlock) {
  std::string s = vec == 1 ? "1 element per thread"
                           : std::to_string(vec) + " elements per thread (" + std::to_string(vec * widest) + "-byte accesses)";
  return block == kBlock ? s : s + ", " + std::to_string(block) + " threads per block";
}

// `note`, when given, is one more comment line above the entry point.
GeneratedKernel elementwise_kernel(const Graph& g, const std::vector<NodeId>& nodes, const std::vector<ValueId>& outputs,
                                   const std::string& name, int vec, int block, const std::string& note = {}) {
  const Shape root = g.value_type(outputs.front()).shape;
  const std::int64_t n = numel(root);
  const std::string idx = n * 2 < INT32_MAX ? "int" : "long long";
  ElementwiseEmitter em(g, nodes, root, vec, idx);
  const Ctx ctx = em.root_ctx();
  std::vector<std::string> results;
  for (ValueId o : outputs) results.push_back(em.value(o, ctx));

  GeneratedKernel k;
  k.name = name;
  k.kind = KernelKind::elementwise;
  k.nodes = nodes;
  k.outputs = outputs;
  k.block = block;
  const std::int64_t threads = (n + vec - 1) / vec;
  k.grid = std::clamp<std::int64_t>((threads + k.block - 1) / k.block, 1, INT32_MAX);
  Identifiers& ids = em.ids;
  std::vector<std::string> outs;
  for (ValueId o : outputs) outs.push_back(out_ptr(ids, g, o));
  k.inputs = em.inputs;
  k.bytes_moved = bytes_of(g, k.inputs) + bytes_of(g, k.outputs);

  const std::string header = header_comment(
      g, nodes, vec > 1 ? "elementwise, " + std::to_string(vec) + " elements per thread (one vector store; one vector load per tensor read at the output's index)"
                        : "elementwise, one element per thread, indices remapped per tensor");
  // What comes before the body and after it; the body's own buffer (room reserved by a wide concat) becomes
  // the source, so its text is not copied again.
  const std::string signature = kernel_signature(g, name, k.block, k.inputs, outputs, ids);
  Code c = translation_unit(header.size() + signature.size() + em.pre().str().size());
  c.line(header);
  if (!note.empty()) c.line("// ", note);
  c.line(signature, " {");
  c.indent();
  c.line("const " + idx + " n = " + number(n) + ";  // elements of " + shape_to_string(root));
  const std::string step = vec > 1 ? " * " + std::to_string(vec) : "";
  const std::string loop_var = vec > 1 ? "base" : "i";
  c.line("for (" + idx + " " + loop_var + " = ((" + idx + ")blockIdx.x * blockDim.x + threadIdx.x)" + step + "; " + loop_var +
         " < n; " + loop_var + " += (" + idx + ")gridDim.x * blockDim.x" + step + ") {");
  c.indent();
  if (vec > 1) {
    c.append(em.pre());
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      c.line("fx_vec<" + storage_type(g.value_type(outputs[o]).dtype) + ", " + std::to_string(vec) + "> " + outs[o] + "_v;");
    }
    c.line("#pragma unroll");
    c.line("for (int v = 0; v < " + std::to_string(vec) + "; ++v) {");
    c.indent();
    c.line("const " + idx + " i = base + v;");
  }
  Code tail(c.depth());
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const std::string value = to_storage(g.value_type(outputs[o]).dtype, results[o]);
    tail.line(outs[o], vec > 1 ? "_v.v[v] = " : "[i] = ", value, ";");
  }
  if (vec > 1) {
    tail.dedent();
    tail.line("}");
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      tail.line("*reinterpret_cast<fx_vec<" + storage_type(g.value_type(outputs[o]).dtype) + ", " + std::to_string(vec) +
                ">*>(" + outs[o] + " + base) = " + outs[o] + "_v;");
    }
  }
  tail.dedent();
  tail.line("}");
  tail.dedent();
  tail.line("}");
  k.source = std::move(em.body()).take();
  k.source.insert(0, c.str());
  k.source += tail.str();
  return k;
}

}  // namespace

// The default layout moves 16 bytes per access of the widest tensor; the alternatives move 8 (Inductor's
// choice for large f32 pointwise kernels: 512 elements per block of 256 threads), with 256 threads per block
// and, for kernels of at least kWideBlocks blocks, with 512. The three are within a fraction of a percent of
// each other and no one wins on every kernel, so the run times them.
GeneratedKernel generate_elementwise(const Graph& g, const std::vector<NodeId>& nodes,
                                     const std::vector<ValueId>& outputs, const std::string& name) {
  const Shape& root = g.value_type(outputs.front()).shape;
  const std::int64_t widest = widest_bytes(g, nodes, outputs);
  const int vec = choose_vec(widest, root, 16);
  const int narrower = choose_vec(widest, root, 8);
  // Wider blocks only pay off once the grid fills the device many times over; below that they halve the
  // blocks in flight.
  constexpr std::int64_t kWideBlocks = 4096;
  std::vector<std::pair<int, int>> others;  // (elements per thread, threads per block)
  if (narrower < vec) others.emplace_back(narrower, kBlock);
  if (numel(root) / narrower >= kWideBlocks * kWideBlock) others.emplace_back(narrower, kWideBlock);
  std::vector<std::string> described;
  for (const auto& [v, b] : others) described.push_back(describe_layout(v, widest, b));
  // Said where people read the source (fusion-cli codegen, the GUI's source view).
  GeneratedKernel k = elementwise_kernel(g, nodes, outputs, name, vec, kBlock,
                                         layout_note(describe_layout(vec, widest), described));
  k.layout = describe_layout(vec, widest);
  for (std::size_t i = 0; i < others.size(); ++i) {
    GeneratedKernel alt = elementwise_kernel(g, nodes, outputs, name, others[i].first, others[i].second);
    k.alternatives.push_back({described[i], std::move(alt.source), alt.block, alt.grid});
  }
  return k;
}

}  // namespace fx::gpu::codegen
