// Row-wise reduction groups: every reduction in the group reduces the same trailing dimensions (R elements
// per row). One block per row; each thread holds kItems elements of every row-level value in registers, so a
// multi-stage pattern (softmax: max, sum of exp, normalise; layernorm: mean, variance, normalise) reads its
// input once and writes its output once. Per-row values (the statistics) are scalars every thread holds.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>
#include <stdexcept>
#include <utility>

#include "kernels/codegen/codegen_internal.h"

namespace fx::gpu::codegen {
namespace {

enum class Level { element, row };

struct RowShape {
  Shape full;            // the reduced tensors' shape
  std::size_t split = 0;  // dims [split, rank) are reduced
  std::int64_t r = 0, rows = 0;
};

// The trailing-dimension structure a reduction node needs, or nullopt when it reduces inner-and-outer axes.
std::optional<RowShape> row_shape_of(const Graph& g, const Node& node) {
  const Shape& f = g.value_type(node.inputs[0].value).shape;
  if (f.empty()) return std::nullopt;
  std::size_t split = f.size() - 1;
  if (node.op_id() == OpId::layernorm) {
    split = static_cast<std::size_t>(*normalize_axis(node.attrs.get_int("axis"), f.size()));
  } else if (node.op_id() == OpId::softmax) {
    if (static_cast<std::size_t>(*normalize_axis(node.attrs.get_int("axis"), f.size())) != f.size() - 1) return std::nullopt;
  } else if (node.op_id() != OpId::rmsnorm) {
    std::vector<int> axes;
    for (auto a : node.attrs.get_ints("axis")) axes.push_back(*normalize_axis(a, f.size()));
    std::sort(axes.begin(), axes.end());
    for (std::size_t k = 0; k < axes.size(); ++k) {
      if (axes[k] != static_cast<int>(f.size() - axes.size() + k)) return std::nullopt;
    }
    split = f.size() - axes.size();
  }
  RowShape rs{f, split, 1, 1};
  for (std::size_t d = 0; d < f.size(); ++d) (d < split ? rs.rows : rs.r) *= f[d];
  return rs;
}

bool is_stat_reduction(const Node& node) { return node.def->reduction == ReductionKind::statistic; }

// Shape s read as a tensor broadcast over `full` (batchnorm parameters align with their channel axis).
Shape effective_shape(const Graph& g, const Node& node, std::size_t k) {
  const Shape& s = g.value_type(node.inputs[k].value).shape;
  if (node.op_id() != OpId::batchnorm || k == 0) return s;
  const auto axis = static_cast<std::size_t>(*normalize_axis(node.attrs.get_int("axis"), node.type.shape.size()));
  Shape e = {s[0]};
  e.resize(node.type.shape.size() - axis, 1);
  return e;
}

class RowEmitter {
 public:
  // reduce_only: the kernel stores one value per row and nothing per element (its streams are read once).
  // row_hint: the row is loaded with fx_load_row (L1 and L2 evict_last).
  RowEmitter(const Graph& g, const std::vector<NodeId>& nodes, RowShape rs, int vec, int threads, int chunks,
             bool reduce_only, bool row_hint)
      : g_(g), nodes_(nodes), rs_(std::move(rs)), vec_(vec), threads_(threads), chunks_(chunks),
        reduce_only_(reduce_only), row_hint_(row_hint), body_(2) {
    for (NodeId n : nodes) in_group_.insert(n);
    exact_ = static_cast<std::int64_t>(vec) * threads * chunks == rs_.r;
  }

  bool classify(std::string& why);
  void emit_node(NodeId n);
  std::string store(ValueId o, std::string& why);

  std::vector<ValueId> inputs;
  std::unordered_set<ValueId> input_set_;  // the same values, for a constant-time "already read?"
  Identifiers ids;
  std::set<std::string> scratch_types;
  Code& body() { return body_; }
  bool exact() const { return exact_; }

 private:
  bool external(ValueId u) const {
    auto p = g_.producer(u);
    return !p || !in_group_.count(*p);
  }
  Level level_of(ValueId u) const { return external(u) ? Level::element : level_.at(*g_.producer(u)); }
  // A reshape the kernel can take: of an element-level value computed here (a reshape keeps the flat index, so
  // row * R + col still names the element), of the rows' element count, and read by nothing in the group
  // (elementwise work after it would index the reshaped shape against the rows). Matches core/fusion/legality.
  bool stored_reshape(NodeId n) const {
    const Node& node = g_.node(n);
    const ValueId in = node.inputs[0].value;
    if (external(in) || level_of(in) != Level::element || node.type.numel() != numel(rs_.full)) return false;
    const auto& cons = g_.consumers(g_.value_of(n));
    return std::none_of(cons.begin(), cons.end(), [&](NodeId c) { return in_group_.count(c) > 0; });
  }
  std::string operand(const Node& node, std::size_t k);
  std::string load_external(ValueId u, const Shape& eff);
  std::string load_per_row(ValueId u);
  std::string mask(const std::string& stmt) const {
    return exact_ ? stmt : "if (col_of(k) < R) " + stmt;
  }
  void loop(const std::string& stmt) {
    body_.line("#pragma unroll");
    body_.line("for (int k = 0; k < kItems; ++k) " + stmt);
  }
  std::string reduce(const std::string& acc, DType t, const std::string& op) {
    const std::string ct = compute_type(t) == "float" ? "float" : "long long";
    scratch_types.insert(ct);
    return "fx_block_reduce(" + acc + ", fx_" + op + "_op(), fx_scratch_" + (ct == "float" ? "f" : "i") + ")";
  }
  void emit_stat(NodeId n);
  void emit_softmax(NodeId n);
  void emit_norm(NodeId n);

  const Graph& g_;
  std::vector<NodeId> nodes_;
  RowShape rs_;
  int vec_, threads_, chunks_;
  bool reduce_only_ = false;
  bool row_hint_ = false;
  bool exact_ = false;
  std::set<NodeId> in_group_;
  std::map<NodeId, Level> level_;
  std::map<std::string, std::string> loaded_;  // external value + shape -> local
  std::map<NodeId, std::string> local_;
  Code body_;
};

bool RowEmitter::classify(std::string& why) {
  for (NodeId n : nodes_) {
    const Node& node = g_.node(n);
    if (node.op_class() == OpClass::reduction) {
      auto rs = row_shape_of(g_, node);
      if (!rs || rs->r != rs_.r || rs->rows != rs_.rows) {
        why = "node " + node.name + " reduces other dimensions than the group's first reduction";
        return false;
      }
      level_[n] = is_stat_reduction(node) ? Level::row : Level::element;
      continue;
    }
    if (node.op_id() == OpId::reshape) {  // a relabelling of the row's elements: stored at the same flat index
      if (!stored_reshape(n)) {
        why = "node " + node.name + " (reshape) is read inside the group or reshapes an input or a per-row value";
        return false;
      }
      level_[n] = Level::element;
      continue;
    }
    if (node.op_class() != OpClass::elementwise) {
      why = "node " + node.name + " (" + node.op + ") is not elementwise";
      return false;
    }
    bool any_row = false, any_element = false;
    for (const Operand& o : node.inputs) {
      if (o.is_scalar()) continue;
      if (external(o.value)) continue;
      (level_of(o.value) == Level::row ? any_row : any_element) = true;
    }
    const bool row_level = any_row && !any_element && node.type.numel() == rs_.rows;
    level_[n] = row_level ? Level::row : Level::element;
    for (const Operand& o : node.inputs) {
      if (row_level && !o.is_scalar() && external(o.value) && g_.value_type(o.value).numel() != 1 &&
          g_.value_type(o.value).numel() != rs_.rows) {
        why = "node " + node.name + " combines a per-row value with " + g_.value_name(o.value) + " " +
              shape_to_string(g_.value_type(o.value).shape);
        return false;
      }
    }
    if (!row_level && broadcast_shapes(node.type.shape, rs_.full) != rs_.full) {
      why = "node " + node.name + " " + shape_to_string(node.type.shape) + " does not broadcast to the rows " +
            shape_to_string(rs_.full);
      return false;
    }
  }
  // A row-level value read by an element-level op must vary with the row only.
  for (NodeId n : nodes_) {
    if (level_[n] != Level::element) continue;
    const Node& node = g_.node(n);
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const Operand& o = node.inputs[k];
      if (o.is_scalar() || external(o.value) || level_of(o.value) != Level::row) continue;
      Shape s = g_.value_type(o.value).shape;
      s.insert(s.begin(), rs_.full.size() - std::min(s.size(), rs_.full.size()), 1);
      for (std::size_t d = 0; d < s.size(); ++d) {
        if ((d < rs_.split && s[d] != rs_.full[d]) || (d >= rs_.split && s[d] != 1)) {
          why = "node " + node.name + " reads the per-row value " + g_.value_name(o.value) + " " +
                shape_to_string(g_.value_type(o.value).shape) + " across columns";
          return false;
        }
      }
    }
  }
  return true;
}

std::string RowEmitter::load_external(ValueId u, const Shape& eff) {
  const std::string key = std::to_string(u) + shape_to_string(eff);
  if (auto f = loaded_.find(key); f != loaded_.end()) return f->second;
  if (input_set_.insert(u).second) inputs.push_back(u);
  const TensorType& t = g_.value_type(u);
  const std::string ptr = in_ptr(ids, g_, u), name = ids.fresh(g_.value_name(u)), ct = compute_type(t.dtype);
  Shape s = eff;
  s.insert(s.begin(), rs_.full.size() - std::min(s.size(), rs_.full.size()), 1);
  const bool outer_ones = std::all_of(s.begin(), s.begin() + static_cast<long>(rs_.split), [](auto d) { return d == 1; });
  const bool inner_full = std::equal(s.begin() + static_cast<long>(rs_.split), s.end(), rs_.full.begin() + static_cast<long>(rs_.split));
  const bool inner_ones = std::all_of(s.begin() + static_cast<long>(rs_.split), s.end(), [](auto d) { return d == 1; });
  if (numel(s) == 1) {
    body_.line("const " + ct + " " + name + " = " + from_storage(t.dtype, ptr + "[0]") + ";");
    return loaded_[key] = name;
  }
  if (inner_ones) {  // one value per row
    const std::string off = broadcast_offset(s, rs_.full, coords_of(rs_.full, "row * R"));
    body_.line("const " + ct + " " + name + " = " + from_storage(t.dtype, ptr + "[" + off + "]") + ";  // per row");
    return loaded_[key] = name;
  }
  body_.line(ct + " " + name + "[kItems];");
  if (inner_full) {
    // The operand's inner dims are the row's, so its part of every row is contiguous: one vector access per
    // chunk, at the row's start in the operand (broadcast over some outer dims, e.g. an attention mask
    // [S, S] added to scores [B, H, S, S], reads row `row % S`).
    std::string base = "row * R + ";
    if (outer_ones) {
      base.clear();
    } else if (s != rs_.full) {
      body_.line("const long long " + name + "_row = " + broadcast_offset(s, rs_.full, coords_of(rs_.full, "row * R")) +
                 ";  // this row's start in the broadcast operand");
      base = name + "_row + ";
    }
    const std::string vt = "fx_vec<" + storage_type(t.dtype) + ", kVec>";
    body_.line(std::string("#pragma unroll  // ") +
               (outer_ones ? "one row of the broadcast operand" : s == rs_.full ? "the row" : "the operand's row") +
               ", one vector access per chunk");
    body_.line("for (int c = 0; c < kChunks; ++c) {");
    body_.indent();
    body_.line("const int col = (c * (int)blockDim.x + (int)threadIdx.x) * kVec;");
    body_.line("fx_vec<" + storage_type(t.dtype) + ", kVec> raw = {};");
    // Broadcast over outer dims (a mask, a layernorm weight): many rows re-read it, so the L2 keeps it. A
    // reduction's own stream is read once: evict-first; a row stored back after its reductions: Triton's
    // evict_last hints (preamble: fx_load_policy).
    const std::string at = "reinterpret_cast<const " + vt + "*>(" + ptr + " + " + base + "col)";
    const bool policy = takes_load_policy(t.dtype, vec_);
    const std::string load = !policy            ? "*" + at
                             : s != rs_.full    ? "fx_load_keep(" + at + ")"
                             : reduce_only_     ? "fx_load_once(" + at + ")"
                             : row_hint_        ? "fx_load_row(" + at + ")"
                                                : "*" + at;
    body_.line((exact_ ? "" : "if (col < R) ") + std::string("raw = ") + load + ";");
    body_.line("#pragma unroll");
    body_.line("for (int v = 0; v < kVec; ++v) " + name + "[c * kVec + v] = " + from_storage(t.dtype, "raw.v[v]") + ";");
    body_.dedent();
    body_.line("}");
  } else {
    const std::string off = broadcast_offset(s, rs_.full, coords_of(rs_.full, "(row * R + col_of(k))"));
    body_.line("#pragma unroll  // broadcast operand: one scalar access per element");
    body_.line("for (int k = 0; k < kItems; ++k) " + name + "[k] = col_of(k) < R ? " +
               from_storage(t.dtype, ptr + "[" + off + "]") + " : " + ct + "(0);");
  }
  return loaded_[key] = name;
}

// An external operand of a per-row op: one element per row (or a single element).
std::string RowEmitter::load_per_row(ValueId u) {
  const std::string key = std::to_string(u) + "/row";
  if (auto f = loaded_.find(key); f != loaded_.end()) return f->second;
  if (input_set_.insert(u).second) inputs.push_back(u);
  const TensorType& t = g_.value_type(u);
  const std::string name = ids.fresh(g_.value_name(u));
  const std::string index = t.numel() == 1 ? "0" : "row";
  body_.line("const " + compute_type(t.dtype) + " " + name + " = " + from_storage(t.dtype, in_ptr(ids, g_, u) + "[" + index + "]") + ";");
  return loaded_[key] = name;
}

// The expression of operand k of an element-level node, inside the per-item loop (item k).
std::string RowEmitter::operand(const Node& node, std::size_t k) {
  const Operand& o = node.inputs[k];
  if (o.is_scalar()) return scalar_operand(g_, node, o.scalar);
  if (external(o.value)) {
    const std::string name = load_external(o.value, effective_shape(g_, node, k));
    Shape s = effective_shape(g_, node, k);
    s.insert(s.begin(), rs_.full.size() - std::min(s.size(), rs_.full.size()), 1);
    const bool per_row = numel(s) == 1 || std::all_of(s.begin() + static_cast<long>(rs_.split), s.end(), [](auto d) { return d == 1; });
    return per_row ? name : name + "[k]";
  }
  const NodeId p = *g_.producer(o.value);
  return level_[p] == Level::row ? local_[p] : local_[p] + "[k]";
}

void RowEmitter::emit_node(NodeId n) {
  const Node& node = g_.node(n);
  const std::string name = local_[n] = ids.fresh(node.name);
  const std::string ct = compute_type(node.type.dtype);
  body_.line("// " + describe_node(g_, n));
  if (is_stat_reduction(node)) return emit_stat(n);
  if (node.op_id() == OpId::softmax) return emit_softmax(n);
  if (node.op_id() == OpId::layernorm || node.op_id() == OpId::rmsnorm) return emit_norm(n);
  if (node.op_id() == OpId::reshape) {  // the same registers under the reshaped name
    local_[n] = local_[*g_.producer(node.inputs[0].value)];
    return;
  }
  std::vector<std::string> args;
  if (level_[n] == Level::row) {
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const Operand& o = node.inputs[k];
      if (o.is_scalar()) {
        args.push_back(scalar_operand(g_, node, o.scalar));
      } else if (external(o.value)) {
        args.push_back(load_per_row(o.value));
      } else {
        args.push_back(local_[*g_.producer(o.value)]);
      }
    }
    body_.line("const " + ct + " " + name + " = " + elementwise_expr(g_, node, args, "row") + ";");
    return;
  }
  for (std::size_t k = 0; k < node.inputs.size(); ++k) args.push_back(operand(node, k));
  const Shape& s = node.type.shape;
  const std::string flat = s == rs_.full ? "row * R + col_of(k)"
                                         : broadcast_offset(s, rs_.full, coords_of(rs_.full, "(row * R + col_of(k))"));
  body_.line(ct + " " + name + "[kItems];");
  loop(name + "[k] = " + elementwise_expr(g_, node, args, flat) + ";");
}

void RowEmitter::emit_stat(NodeId n) {
  const Node& node = g_.node(n);
  const std::string& name = local_[n];
  const DType t = node.type.dtype;
  const StatisticAccumulator stat = statistic_accumulator(node);
  const std::string& at = stat.type;
  const std::string& op = stat.combiner;
  const std::string x = operand(node, 0);
  body_.line(at + " " + name + "_acc = " + stat.identity + ";");
  loop(mask(stat.additive ? name + "_acc += " + x + ";" : name + "_acc = fx_" + op + "(" + name + "_acc, (" + at + ")" + x + ");"));
  std::string r = reduce(name + "_acc", t, op);
  if (node.op_id() == OpId::mean) r = "(" + r + " / (" + at + ")R)";
  body_.line("const " + compute_type(t) + " " + name + " = " + round_to(t, "(" + compute_type(t) + ")" + r) + ";");
}

void RowEmitter::emit_softmax(NodeId n) {
  const Node& node = g_.node(n);
  const std::string& y = local_[n];
  const std::string x = operand(node, 0);
  const DType t = node.type.dtype;
  body_.line("float " + y + "[kItems];");
  body_.line("float " + y + "_max = -__int_as_float(0x7f800000);");
  loop(mask(y + "_max = fx_max(" + y + "_max, " + x + ");"));
  body_.line(y + "_max = " + reduce(y + "_max", t, "max") + ";");
  body_.line("float " + y + "_sum = 0.0f;");
  loop("{ " + y + "[k] = expf(" + x + " - " + y + "_max); " + (exact_ ? "" : "if (col_of(k) < R) ") + y + "_sum += " + y + "[k]; }");
  body_.line("const float " + y + "_inv = 1.0f / " + reduce(y + "_sum", t, "sum") + ";");
  loop(y + "[k] = " + round_to(t, y + "[k] * " + y + "_inv") + ";");
}

void RowEmitter::emit_norm(NodeId n) {
  const Node& node = g_.node(n);
  const std::string& y = local_[n];
  const DType t = node.type.dtype;
  const bool layer = node.op_id() == OpId::layernorm;
  const std::string x = operand(node, 0);
  const std::string gamma = node.inputs.size() > 1 ? operand(node, 1) : "";
  const std::string beta = node.inputs.size() > 2 ? operand(node, 2) : "";
  const std::string eps = literal(node.attrs.get_number("eps"), DType::f32);
  body_.line("float " + y + "[kItems];");
  if (layer) {  // two passes over registers: exact, and no extra memory traffic
    body_.line("float " + y + "_acc = 0.0f;");
    loop(mask(y + "_acc += " + x + ";"));
    body_.line("const float " + y + "_mean = " + reduce(y + "_acc", t, "sum") + " / (float)R;");
    body_.line("float " + y + "_sq = 0.0f;");
    loop(mask("{ const float d = " + x + " - " + y + "_mean; " + y + "_sq += d * d; }"));
    body_.line("const float " + y + "_rstd = rsqrtf(" + reduce(y + "_sq", t, "sum") + " / (float)R + " + eps + ");");
    std::string e = "(" + x + " - " + y + "_mean) * " + y + "_rstd";
    if (!gamma.empty()) e += " * " + gamma;
    if (!beta.empty()) e += " + " + beta;
    loop(y + "[k] = " + round_to(t, e) + ";");
  } else {
    body_.line("float " + y + "_sq = 0.0f;");
    loop(mask(y + "_sq += " + x + " * " + x + ";"));
    body_.line("const float " + y + "_rms = rsqrtf(" + reduce(y + "_sq", t, "sum") + " / (float)R + " + eps + ");");
    loop(y + "[k] = " + round_to(t, x + " * " + y + "_rms * " + gamma) + ";");
  }
}

std::string RowEmitter::store(ValueId o, std::string& why) {
  const NodeId n = *g_.producer(o);
  const TensorType& t = g_.value_type(o);
  const std::string ptr = out_ptr(ids, g_, o);
  if (level_[n] == Level::row) {
    return "if (threadIdx.x == 0) " + ptr + "[row] = " + to_storage(t.dtype, local_[n]) + ";";
  }
  if (numel(t.shape) != numel(rs_.full)) {
    why = "output " + g_.value_name(o) + " " + shape_to_string(t.shape) + " is not row-shaped";
    return {};
  }
  const std::string vt = "fx_vec<" + storage_type(t.dtype) + ", kVec>";
  return "for (int c = 0; c < kChunks; ++c) {\n"
         "      const int col = (c * (int)blockDim.x + (int)threadIdx.x) * kVec;\n"
         "      " + vt + " raw;\n"
         "#pragma unroll\n"
         "      for (int v = 0; v < kVec; ++v) raw.v[v] = " + to_storage(t.dtype, local_[n] + "[c * kVec + v]") + ";\n"
         "      " + (exact_ ? "" : "if (col < R) ") + "*reinterpret_cast<" + vt + "*>(" + ptr + " + row * R + col) = raw;\n"
         "    }";
}

// What every layout of one row kernel shares: the rows, the vector width and the load hints.
struct RowPlan {
  RowShape rs;
  int vec = 1;
  bool reduce_only = false;  // one value per row stored, nothing per element
  bool row_hint = false;     // the row is stored back and no large operand needs the L2 more
};

std::string describe_layout(int threads, std::int64_t chunks, int vec) {
  return std::to_string(threads) + " threads per row, " + std::to_string(chunks) + " vector access" +
         (chunks == 1 ? "" : "es") + " each (" + std::to_string(chunks * vec) + " elements per thread)";
}

// The kernel in one layout: `threads` per row (a multiple of 32), `chunks` vector accesses each. `note`, when
// given, is one more comment line above the entry point.
std::optional<GeneratedKernel> row_kernel(const Graph& g, const std::vector<NodeId>& nodes,
                                          const std::vector<ValueId>& outputs, const std::string& name,
                                          const RowPlan& plan, int threads, std::int64_t chunks,
                                          const std::string& note, std::string& why) {
  const RowShape& rs = plan.rs;
  const int vec = plan.vec;
  RowEmitter em(g, nodes, rs, vec, threads, static_cast<int>(chunks), plan.reduce_only, plan.row_hint);
  if (!em.classify(why)) return std::nullopt;
  for (NodeId n : nodes) em.emit_node(n);
  std::vector<std::string> stores;
  for (ValueId o : outputs) {
    stores.push_back(em.store(o, why));
    if (stores.back().empty()) return std::nullopt;
  }

  GeneratedKernel k;
  k.name = name;
  k.kind = KernelKind::row_reduction;
  k.nodes = nodes;
  k.inputs = em.inputs;
  k.outputs = outputs;
  k.block = threads;
  k.grid = std::clamp<std::int64_t>(rs.rows, 1, INT32_MAX);
  k.bytes_moved = bytes_of(g, k.inputs) + bytes_of(g, k.outputs);
  k.layout = describe_layout(threads, chunks, vec);
  const std::string idx = rs.rows * rs.r * 2 < INT32_MAX ? "int" : "long long";
  Code c = translation_unit();
  c.line(header_comment(g, nodes, "row-wise: one block per row of " + std::to_string(rs.r) + " elements, " +
                                      std::to_string(chunks * vec) + " per thread kept in registers"));
  if (!note.empty()) c.line("// " + note);
  c.line(kernel_signature(g, name, threads, k.inputs, outputs, em.ids), " {");
  c.indent();
  c.line("constexpr int kVec = " + std::to_string(vec) + ";     // elements per vector access");
  c.line("constexpr int kChunks = " + std::to_string(chunks) + ";  // vector accesses per thread per row");
  c.line("constexpr int kItems = kVec * kChunks;");
  c.line("const " + idx + " R = " + number(rs.r) + ";  // row length");
  c.line("const " + idx + " rows = " + number(rs.rows) + ";");
  for (const auto& t : em.scratch_types) {
    c.line("__shared__ " + t + " fx_scratch_" + (t == "float" ? "f" : "i") + "[32];");
  }
  c.line(std::string("// Item k of a thread is column col_of(k): chunks of kVec consecutive columns, ") +
         (em.exact() ? "and the row is covered exactly." : "masked past the row's end."));
  c.line("auto col_of = [](int k) { return ((k / kVec) * (int)blockDim.x + (int)threadIdx.x) * kVec + k % kVec; };");
  c.line("(void)col_of;");
  c.line("for (" + idx + " row = blockIdx.x; row < rows; row += gridDim.x) {");
  c.append(em.body());
  for (const auto& s : stores) c.line("  " + s);
  c.line("}");
  c.dedent();
  c.line("}");
  k.source = std::move(c).take();
  return k;
}

}  // namespace

std::optional<GeneratedKernel> generate_row_reduction(const Graph& g, const std::vector<NodeId>& nodes,
                                                      const std::vector<ValueId>& outputs, const std::string& name,
                                                      const CodegenOptions& options, std::string& why) {
  std::optional<RowShape> rs;
  for (NodeId n : nodes) {
    if (g.node(n).op_class() == OpClass::reduction) {
      rs = row_shape_of(g, g.node(n));
      if (!rs) {
        why = "node " + g.node(n).name + " does not reduce the innermost dimensions";
        return std::nullopt;
      }
      break;
    }
  }
  if (!rs) {
    why = "no reduction in the group";
    return std::nullopt;
  }
  // Elements per vector: one 16-byte access of the widest row-level tensor, dividing the row.
  RowPlan plan{*rs};
  plan.vec = static_cast<int>(std::min<std::int64_t>(8, 16 / widest_bytes(g, nodes, outputs)));
  while (plan.vec > 1 && rs->r % plan.vec != 0) plan.vec /= 2;
  const std::int64_t vectors = (rs->r + plan.vec - 1) / plan.vec;
  // Threads per row: enough for kChunkTarget vector accesses each. Two per thread instead of one means fewer
  // threads and fewer block-reduction steps per row; more than two leaves wide rows short of threads.
  // A pure reduction (one value per row stored) keeps fewer values per thread and more threads in flight.
  plan.reduce_only = true;
  for (ValueId o : outputs) plan.reduce_only = plan.reduce_only && g.value_type(o).numel() == rs->rows;
  constexpr int kChunkTarget = 2;
  const std::int64_t per = (vectors + kChunkTarget - 1) / kChunkTarget;
  auto warps_for = [](std::int64_t threads, int most) {
    return static_cast<int>(std::clamp<std::int64_t>((threads + 31) / 32 * 32, 32, most));
  };
  int threads = warps_for(per, plan.reduce_only ? 512 : 256);
  std::int64_t chunks = (vectors + threads - 1) / threads;
  if (chunks * plan.vec > std::max(16, kChunkTarget * plan.vec)) {  // long rows: more threads before more registers
    threads = warps_for(vectors, 1024);
    chunks = (vectors + threads - 1) / threads;
  }
  if (chunks * plan.vec > options.max_row_items) {
    why = "a row of " + std::to_string(rs->r) + " elements does not fit in registers (" +
          std::to_string(chunks * plan.vec) + " per thread per value)";
    return std::nullopt;
  }
  // The row a kernel stores back is loaded with Triton's evict_last hints (fx_load_row), except when a large
  // operand broadcast over rows (an attention mask read for every batch and head) must stay in the L2: with the
  // streaming rows marked evict_last too, the mask would lose its place. Small ones (a layernorm's weights)
  // stay either way.
  constexpr std::int64_t kLargeBroadcastBytes = std::int64_t{1} << 20;
  bool large_broadcast = false;
  for (ValueId v : group_inputs(g, nodes)) {
    const TensorType& t = g.value_type(v);
    large_broadcast = large_broadcast || (t.numel() < numel(rs->full) && t.bytes() >= kLargeBroadcastBytes);
  }
  plan.row_hint = !plan.reduce_only && !large_broadcast;
  // Half and twice the threads, timed against this one by the executor (RunOptions::autotune): on their own
  // shapes they can differ by a few percent, so the run measures instead of the generator guessing. Only
  // layouts that keep the row in registers and leave no warp idle.
  std::vector<std::pair<int, std::int64_t>> others;
  for (const int other : {threads / 2, threads * 2}) {
    const int t = warps_for(other, 1024);
    const std::int64_t c = (vectors + t - 1) / t;
    if (t != threads && c * plan.vec <= options.max_row_items && t <= (vectors + 31) / 32 * 32) others.emplace_back(t, c);
  }
  std::vector<std::string> described;
  for (const auto& [t, c] : others) described.push_back(describe_layout(t, c, plan.vec));
  const std::string note = layout_note(describe_layout(threads, chunks, plan.vec), described);
  std::optional<GeneratedKernel> k = row_kernel(g, nodes, outputs, name, plan, threads, chunks, note, why);
  if (!k) return k;
  for (const auto& [t, c] : others) {
    std::optional<GeneratedKernel> alt = row_kernel(g, nodes, outputs, name, plan, t, c, {}, why);
    if (!alt) throw std::logic_error(name + ": a row layout failed where the first succeeded: " + why);
    k->alternatives.push_back({alt->layout, std::move(alt->source), alt->block, alt->grid});
  }
  return k;
}

}  // namespace fx::gpu::codegen
