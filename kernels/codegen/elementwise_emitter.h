// Internal to kernels/codegen: the emitter behind elementwise kernels. It computes each value where it is
// needed from the coordinates of the element being written ("contexts"), one local per value and context.
// Shared by the plain elementwise loop and the shared-memory tiled transpose.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernels/codegen/codegen_internal.h"

namespace fx::gpu::codegen {

// Where a value is being read: coordinates in the value's own shape (or its flat index).
struct Ctx {
  Shape shape;
  std::string flat;                 // may be empty: derived from coords
  std::vector<std::string> coords;  // may be empty: derived from flat
  std::optional<Shape> aligned;     // vector mode: the shape this ctx broadcasts from, aligned to the root

  std::string flat_expr() const { return !flat.empty() ? flat : flat_of(shape, coords); }
  std::vector<std::string> coord_exprs() const { return !coords.empty() ? coords : coords_of(shape, flat); }
  std::string key() const {
    std::string k;
    append_key(k);
    return k;
  }
  void append_key(std::string& k) const {
    for (std::int64_t d : shape) k.append(std::to_string(d)) += ',';
    k.append("|").append(flat);
    for (const auto& c : coords) k.append("|").append(c);
  }
};

inline bool same_right_aligned(const Shape& s, const Shape& d) {
  if (numel(s) != numel(d)) return false;
  Shape a = s, b = d;
  while (!a.empty() && a.front() == 1) a.erase(a.begin());
  while (!b.empty() && b.front() == 1) b.erase(b.begin());
  return a == b;
}

class ElementwiseEmitter {
 public:
  ElementwiseEmitter(const Graph& g, const std::vector<NodeId>& nodes, const Shape& root, int vec, std::string index_type)
      : g_(g), root_(root), vec_(vec), index_type_(std::move(index_type)), pre_(2), body_(vec > 1 ? 3 : 2) {
    for (NodeId n : nodes) in_group_.insert(n);
  }

  Ctx root_ctx() const { return Ctx{root_, "i", {}, root_}; }

  // Returns a C expression (usually a local's name) for value u read at ctx.
  std::string value(ValueId u, const Ctx& ctx) {
    if (auto st = staged.find(u); st != staged.end() && ctx.key() == staged_at) return st->second;
    std::string key = std::to_string(u);
    key += '@';
    ctx.append_key(key);
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      if (auto f = it->find(key); f != it->end()) return f->second;
    }
    std::string name = compute(u, ctx);
    scopes_.back().emplace(std::move(key), name);
    return name;
  }

  // Starts a new loop body (the tiled transpose has two): locals of the previous one are out of scope.
  void begin_phase(int depth) {
    scopes_.assign(1, {});
    body_ = Code(depth);
  }

  std::vector<ValueId> inputs;  // external values read, in first-use order
  Identifiers ids;
  // Values already on chip (a shared-memory tile): read at the context keyed `staged_at`, value u is the
  // expression staged[u] instead of being computed.
  std::map<ValueId, std::string> staged;
  std::string staged_at;
  Code& pre() { return pre_; }
  Code& body() { return body_; }

 private:
  bool external(ValueId u) const {
    auto p = g_.producer(u);
    return !p || !in_group_.count(*p);
  }

  void note_input(ValueId u) {
    bool inserted = false;
    input_set_.find_or_insert(static_cast<std::uint32_t>(u), inserted);
    if (inserted) inputs.push_back(u);
  }

  std::string compute(ValueId u, const Ctx& ctx) {
    if (external(u)) return load(u, ctx);
    const NodeId n = *g_.producer(u);
    const Node& node = g_.node(n);
    if (node.op_id() == OpId::concat) return concat(n, ctx);
    std::vector<std::string> args;
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      const Operand& o = node.inputs[k];
      if (o.is_scalar()) {
        args.push_back(scalar_operand(g_, node, o.scalar));
        continue;
      }
      args.push_back(value(o.value, operand_ctx(node, k, ctx)));
    }
    std::string expr = node.op_class() == OpClass::layout ? args[0] : elementwise_expr(g_, node, args, ctx.flat_expr());
    const std::string local = ids.fresh(node.name);
    body_.line("const ", compute_type(node.type.dtype), " ", local, " = ", expr, ";  // ", describe_node(g_, n));
    return local;
  }

  // The ctx at which operand k of `node` is read when node is read at ctx.
  Ctx operand_ctx(const Node& node, std::size_t k, const Ctx& ctx) const {
    const Shape& s = g_.value_type(node.inputs[k].value).shape;
    const auto c = ctx.coord_exprs();
    if (node.op_id() == OpId::batchnorm && k >= 1) {
      const auto axis = static_cast<std::size_t>(*normalize_axis(node.attrs.get_int("axis"), node.type.shape.size()));
      Ctx r{s, {}, {c[axis]}, std::nullopt};
      if (ctx.aligned) {
        Shape a = {s[0]};
        a.resize(node.type.shape.size() - axis, 1);
        r.aligned = a;
      }
      return r;
    }
    if (node.op_id() == OpId::transpose) {
      auto perm = node.attrs.get_ints("perm");
      std::vector<std::string> in(s.size());
      for (std::size_t d = 0; d < perm.size(); ++d) in[static_cast<std::size_t>(*normalize_axis(perm[d], s.size()))] = c[d];
      return Ctx{s, {}, in, std::nullopt};
    }
    if (node.op_id() == OpId::reshape) {
      // A reshape keeps the flat index. Read at the output's own element (ctx aligned to the root, not
      // broadcast), its operand is read at the root's index too, so vector mode loads it as the root.
      const bool at_root = ctx.aligned && *ctx.aligned == root_;
      return Ctx{s, ctx.flat_expr(), {}, at_root ? std::optional<Shape>(root_) : std::nullopt};
    }
    if (node.op_id() == OpId::slice) {
      const auto axis = static_cast<std::size_t>(*normalize_axis(node.attrs.get_int("axis"), s.size()));
      const std::int64_t dim = s[axis], step = node.attrs.get_int("step");
      std::int64_t start = node.attrs.get_int("start");
      start = std::clamp(start < 0 ? start + dim : start, std::int64_t{0}, dim);
      auto in = c;
      std::string scaled = step == 1 ? c[axis] : c[axis] + " * " + number(step);
      in[axis] = start == 0 ? scaled : "(" + number(start) + " + " + scaled + ")";
      return Ctx{s, {}, in, std::nullopt};
    }
    // Broadcasting (numpy alignment): broadcast dimensions read coordinate 0.
    if (s == ctx.shape) return ctx;
    if (numel(s) == 1) return Ctx{s, "0", {}, ctx.aligned ? std::optional<Shape>(s) : std::nullopt};
    std::vector<std::string> in(s.size());
    for (std::size_t d = 0; d < s.size(); ++d) in[d] = s[d] == 1 ? "0" : c[c.size() - s.size() + d];
    return Ctx{s, {}, in, ctx.aligned ? std::optional<Shape>(s) : std::nullopt};
  }

  std::string concat(NodeId n, const Ctx& ctx) {
    const Node& node = g_.node(n);
    const auto axis = static_cast<std::size_t>(*normalize_axis(node.attrs.get_int("axis"), node.type.shape.size()));
    const std::string local = ids.fresh(node.name);
    ids.reserve(2 * node.inputs.size(), node.inputs.size());  // each operand a pointer and a local at most
    input_set_.reserve(node.inputs.size());
    const auto c = ctx.coord_exprs();
    body_.line(compute_type(node.type.dtype), " ", local, ";  // ", describe_node(g_, n));
    // One operand's context at a time, reused: its shape, and the concat axis shifted by the operand's offset.
    Ctx operand{{}, {}, c, std::nullopt};
    std::int64_t offset = 0;
    const std::size_t start = body_.str().size();
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      // The operands' lines are alike: room for all of them at twice the first one's size, so a wide concat's
      // text is written once instead of copied at every doubling (untouched room costs no memory).
      if (k == 1) body_.reserve(2 * (body_.str().size() - start) * node.inputs.size());
      const Shape& s = g_.value_type(node.inputs[k].value).shape;
      const std::string end = number(offset + s[axis]);
      if (k == 0) {
        body_.line("if (", c[axis], " < ", end, ") {");
      } else if (k + 1 == node.inputs.size()) {
        body_.line("} else {");
      } else {
        body_.line("} else if (", c[axis], " < ", end, ") {");
      }
      body_.indent();
      scopes_.emplace_back();
      operand.shape = s;
      if (offset) operand.coords[axis].assign("(").append(c[axis]).append(" - ").append(number(offset)).append(")");
      body_.line(local, " = ", value(node.inputs[k].value, operand), ";");
      scopes_.pop_back();
      body_.dedent();
      offset += s[axis];
    }
    body_.line("}");
    return local;
  }

  std::string load(ValueId u, const Ctx& ctx) {
    note_input(u);
    const TensorType& t = g_.value_type(u);
    const std::string ptr = in_ptr(ids, g_, u);
    const std::string local = ids.fresh(g_.value_name(u));
    const std::string raw = vec_ > 1 && ctx.aligned ? hoisted(u, *ctx.aligned, ptr) : ptr + "[" + ctx.flat_expr() + "]";
    body_.line("const ", compute_type(t.dtype), " ", local, " = ", from_storage(t.dtype, raw), ";");
    return local;
  }

  // Vector mode: loads once per kVec elements, before the per-element loop.
  std::string hoisted(ValueId u, const Shape& aligned, const std::string& ptr) {
    const TensorType& t = g_.value_type(u);
    const auto key = std::make_pair(u, shape_to_string(aligned));
    if (auto f = hoisted_.find(key); f != hoisted_.end()) return f->second;
    const std::string offset =
        same_right_aligned(aligned, root_) ? "base" : broadcast_offset(aligned, root_, coords_of(root_, "base"));
    const bool full_last = !aligned.empty() && aligned.size() <= root_.size() && aligned.back() == root_.back();
    std::string expr;
    if (same_right_aligned(aligned, root_) || full_last) {
      const std::string var = ids.fresh(g_.value_name(u), "_v");
      const std::string vt = "fx_vec<" + storage_type(t.dtype) + ", " + std::to_string(vec_) + ">";
      const std::string at = "reinterpret_cast<const " + vt + "*>(" + ptr + " + " + offset + ")";
      // Broadcast over outer dims: every thread that shares the inner coordinates re-reads it (fx_load_keep).
      const bool shared = numel(aligned) < numel(root_) && takes_load_policy(t.dtype, vec_);
      pre_.line("const " + vt + " " + var + " = " + (shared ? "fx_load_keep(" + at + ")" : "*" + at) + ";" +
                (shared ? "  // broadcast: kept in L2" : ""));
      expr = var + ".v[v]";
    } else {
      // Broadcast along the innermost dimension: one value serves all kVec elements.
      const std::string var = ids.fresh(g_.value_name(u), "_s");
      pre_.line("const " + storage_type(t.dtype) + " " + var + " = " + ptr + "[" + offset + "];");
      expr = var;
    }
    return hoisted_[key] = expr;
  }

  const Graph& g_;
  Shape root_;
  int vec_;
  std::string index_type_;
  std::set<NodeId> in_group_;
  KeyTable input_set_;  // `inputs` as a set: a concat of 100,000s stays linear
  std::vector<std::map<std::string, std::string>> scopes_{1};
  std::map<std::pair<ValueId, std::string>, std::string> hoisted_;
  Code pre_, body_;
};

}  // namespace fx::gpu::codegen
