// A reduction and a reduction over the remaining axes of its result as one kernel (core/fusion/chained_reduction.h
// says which groups qualify): one block per outer row; each warp takes segments of that row in turn, streams the
// segment's elements with its lanes on consecutive elements (coalesced), reduces them with warp shuffles and keeps
// the per-segment values the outer reduction reads in shared memory; the block then reduces those. The input is read
// once, and the inner reduction's result never leaves the chip unless it is an output.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <variant>

#include "core/fusion/chained_reduction.h"
#include "kernels/codegen/codegen_internal.h"

namespace fx::gpu::codegen {
namespace {

constexpr int kChainBlock = 256;  // 8 warps: 8 segments of a row in flight per block

class ChainEmitter {
 public:
  ChainEmitter(const Graph& g, const std::vector<NodeId>& nodes, const ChainedReduction& plan) : g_(g), plan_(plan) {
    for (std::size_t i = 0; i < nodes.size(); ++i) level_[nodes[i]] = plan.level[i];
    // The template's own locals: a node named like one of them gets another identifier.
    for (const char* local : {"rows", "M", "I", "lane", "warp", "warps", "row", "m", "seg", "j", "e"}) ids.fresh(local);
  }

  void emit(NodeId n) {
    const Node& node = g_.node(n);
    local_[n] = ids.fresh(node.name);
    if (node.op_class() == OpClass::reduction) return level_[n] == ChainLevel::segment ? inner(n) : outer(n);
    Code& code = section(level_[n]);
    std::vector<std::string> args;
    for (const Operand& o : node.inputs) {
      args.push_back(o.is_scalar() ? scalar_operand(g_, node, o.scalar) : operand(node.type.shape, o.value, level_[n]));
    }
    code.line("const " + compute_type(node.type.dtype) + " " + local_[n] + " = " +
              elementwise_expr(g_, node, args, index_of(level_[n])) + ";  // " + describe_node(g_, n));
  }

  void store(ValueId o) {
    const NodeId n = *g_.producer(o);
    const TensorType& t = g_.value_type(o);
    const bool segment = level_[n] == ChainLevel::segment;
    section(level_[n]).line(std::string(segment ? "if (lane == 0) " : "if (threadIdx.x == 0) ") + out_ptr(ids, g_, o) +
                            "[" + index_of(level_[n]) + "] = " + to_storage(t.dtype, local_[n]) + ";");
  }

  void stage(NodeId n) {
    const std::string array = staged_name(n);
    shared.line("__shared__ " + compute_type(g_.node(n).type.dtype) + " " + array + "[" + number(plan_.segments) +
                "];  // per segment of the row: " + describe_node(g_, n));
    segment.line("if (lane == 0) " + array + "[m] = " + local_[n] + ";");
  }

  std::vector<ValueId> inputs;
  Identifiers ids;
  Code shared{1}, init{3}, element{4}, segment{3}, row{2};
  bool float_scratch = false, integer_scratch = false;

 private:
  static std::string index_of(ChainLevel l) {
    return l == ChainLevel::element ? "e" : l == ChainLevel::segment ? "seg" : "row";
  }
  Code& section(ChainLevel l) { return l == ChainLevel::element ? element : l == ChainLevel::segment ? segment : row; }
  std::string staged_name(NodeId n) { return ids.get(Identifiers::Kind::staged_array, n, "seg_", g_.node(n).name); }

  // An operand read at `level` where the reader iterates over `shape`: a value of the group, or a load broadcast to
  // that shape (whose flat index at this level is e, seg or row).
  std::string operand(const Shape& shape, ValueId v, ChainLevel level) {
    if (const auto p = g_.producer(v); p && level_.count(*p)) return local_[*p];
    const std::string key = std::to_string(v) + "@" + index_of(level) + shape_to_string(shape);
    if (const auto f = loaded_.find(key); f != loaded_.end()) return f->second;
    if (input_set_.insert(v).second) inputs.push_back(v);
    const TensorType& t = g_.value_type(v);
    const std::string at = index_of(level);
    const std::string offset = t.numel() == numel(shape) ? at : broadcast_offset(t.shape, shape, coords_of(shape, at));
    const std::string name = ids.fresh(g_.value_name(v));
    section(level).line("const " + compute_type(t.dtype) + " " + name + " = " +
                        from_storage(t.dtype, in_ptr(ids, g_, v) + "[" + offset + "]") + ";");
    return loaded_[key] = name;
  }

  // Accumulated over the segment's elements by each lane, then across the warp: every lane holds the result.
  void inner(NodeId n) {
    const Node& node = g_.node(n);
    const std::string& y = local_[n];
    const StatisticAccumulator stat = statistic_accumulator(node);
    const std::string& at = stat.type;
    const std::string& op = stat.combiner;
    const ValueId in = node.inputs[0].value;
    const std::string x = operand(g_.value_type(in).shape, in, ChainLevel::element);
    const std::string acc = ids.fresh(y + "_acc");
    init.line(at + " " + acc + " = " + stat.identity + ";");
    element.line(stat.additive ? acc + " += " + x + ";" : acc + " = fx_" + op + "(" + acc + ", (" + at + ")" + x + ");");
    std::string r = "fx_warp_reduce(" + acc + ", fx_" + op + "_op())";
    if (node.op_id() == OpId::mean) r = "(" + r + " / (" + at + ")I)";
    segment.line("const " + compute_type(node.type.dtype) + " " + y + " = " +
                 round_to(node.type.dtype, "(" + compute_type(node.type.dtype) + ")" + r) + ";  // " + describe_node(g_, n));
  }

  // Over the row's per-segment values in shared memory, by the whole block.
  void outer(NodeId n) {
    const Node& node = g_.node(n);
    const std::string& y = local_[n];
    const StatisticAccumulator stat = statistic_accumulator(node);
    const std::string& at = stat.type;
    const std::string& op = stat.combiner;
    const NodeId source = *g_.producer(node.inputs[0].value);
    (at == "float" ? float_scratch : integer_scratch) = true;
    const std::string acc = ids.fresh(y + "_acc");
    row.line(at + " " + acc + " = " + stat.identity + ";");
    const std::string read = "(" + at + ")" + staged_name(source) + "[m]";
    row.line("for (int m = (int)threadIdx.x; m < M; m += (int)blockDim.x) " +
             (stat.additive ? acc + " += " + read + ";" : acc + " = fx_" + op + "(" + acc + ", " + read + ");"));
    std::string r = "fx_block_reduce(" + acc + ", fx_" + op + "_op(), fx_scratch_" + (at == "float" ? "f" : "i") + ")";
    if (node.op_id() == OpId::mean) r = "(" + r + " / (" + at + ")M)";
    row.line("const " + compute_type(node.type.dtype) + " " + y + " = " +
             round_to(node.type.dtype, "(" + compute_type(node.type.dtype) + ")" + r) + ";  // " + describe_node(g_, n));
  }

  const Graph& g_;
  const ChainedReduction& plan_;
  std::map<NodeId, ChainLevel> level_;
  std::map<NodeId, std::string> local_;
  std::map<std::string, std::string> loaded_;
  std::set<ValueId> input_set_;
};

}  // namespace

std::optional<GeneratedKernel> generate_chained_reduction(const Graph& g, const std::vector<NodeId>& nodes,
                                                          const std::vector<ValueId>& outputs, const std::string& name,
                                                          std::string& why) {
  const ChainVerdict verdict = plan_chained_reduction(g, nodes);
  if (const auto* refused = std::get_if<FusionDecision>(&verdict)) why = refused->message;
  const auto* plan = std::get_if<ChainedReduction>(&verdict);
  if (!plan) return std::nullopt;
  ChainEmitter em(g, nodes, *plan);
  for (NodeId n : nodes) em.emit(n);
  for (NodeId n : plan->staged) em.stage(n);
  for (ValueId o : outputs) em.store(o);

  GeneratedKernel k;
  k.name = name;
  k.kind = KernelKind::row_reduction;
  k.nodes = nodes;
  k.inputs = em.inputs;
  k.outputs = outputs;
  k.block = kChainBlock;
  k.grid = std::clamp<std::int64_t>(plan->rows, 1, INT32_MAX);
  k.bytes_moved = bytes_of(g, k.inputs) + bytes_of(g, k.outputs);
  k.layout = "one block per row of " + std::to_string(plan->segments) + " segments, a warp per segment";
  const std::int64_t elements = plan->rows * plan->segments * plan->inner;
  const std::string idx = elements * 2 < INT32_MAX ? "int" : "long long";
  Code c = translation_unit();
  c.line(header_comment(g, nodes, "chained reduction: one block per row of " + std::to_string(plan->segments) +
                                      " segments of " + std::to_string(plan->inner) +
                                      " elements, a warp per segment, the segments' values kept in shared memory"));
  c.line(kernel_signature(g, name, k.block, k.inputs, outputs, em.ids), " {");
  c.indent();
  c.line("const " + idx + " rows = " + number(plan->rows) + ";");
  c.line("const int M = " + number(plan->segments) + ";  // segments per row");
  c.line("const " + idx + " I = " + number(plan->inner) + ";  // elements per segment");
  c.append(em.shared);
  if (em.float_scratch) c.line("__shared__ float fx_scratch_f[32];");
  if (em.integer_scratch) c.line("__shared__ long long fx_scratch_i[32];");
  c.line("const int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5, warps = (int)blockDim.x >> 5;");
  c.line("for (" + idx + " row = blockIdx.x; row < rows; row += gridDim.x) {");
  c.indent();
  c.line("for (int m = warp; m < M; m += warps) {");
  c.indent();
  c.line("const " + idx + " seg = row * M + m;");
  c.append(em.init);
  c.line("for (" + idx + " j = lane; j < I; j += 32) {");
  c.indent();
  c.line("const " + idx + " e = seg * I + j;");
  c.append(em.element);
  c.dedent();
  c.line("}");
  c.append(em.segment);
  c.dedent();
  c.line("}");
  c.line("__syncthreads();  // every segment's values are in shared memory");
  c.append(em.row);
  c.line("__syncthreads();  // before the next row overwrites them");
  c.dedent();
  c.line("}");
  c.dedent();
  c.line("}");
  k.source = std::move(c).take();
  return k;
}

}  // namespace fx::gpu::codegen
