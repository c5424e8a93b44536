// What must hold for a fused-plan file checked against its graph: the plan that loads is one the engine could
// run: every recomputed producer listed once, outside its group, elementwise and not random, feeding the
// group, and the group with what it recomputes legal as one kernel; only elementwise work is ever eliminated;
// and the plan belongs to its own graph and to no other (the test the CLI's --plan and dot --plan apply).
// Shared by tests/fuzz/fuzz_plan.cpp and tests/core/test_fuzz_regressions.cpp.
#pragma once

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/cost/device_description.h"
#include "core/fusion/engine.h"
#include "core/fusion/legality.h"
#include "tests/fuzz/graph_properties.h"

namespace fx::fuzz {

inline std::optional<std::string> check_group_recomputed(const Graph& g, const Group& grp, const EngineOptions& o) {
  std::set<NodeId> seen(grp.nodes.begin(), grp.nodes.end());
  for (NodeId r : grp.recomputed) {
    const Node& node = g.node(r);
    if (!seen.insert(r).second) return grp.id + " recomputes '" + node.name + "' twice or recomputes its own node";
    if (node.op_class() != OpClass::elementwise || node.def->random) {
      return grp.id + " recomputes '" + node.name + "' (" + node.op + "), which cannot be recomputed";
    }
    const auto& readers = g.consumers(g.value_of(r));
    if (std::none_of(readers.begin(), readers.end(), [&](NodeId c) { return seen.count(c) > 0; }) &&
        std::none_of(grp.recomputed.begin(), grp.recomputed.end(),
                     [&](NodeId other) { return std::count(readers.begin(), readers.end(), other) > 0; })) {
      return grp.id + " recomputes '" + node.name + "', which feeds nothing in it";
    }
  }
  std::vector<NodeId> all(seen.begin(), seen.end());
  std::sort(all.begin(), all.end(), [&](NodeId a, NodeId b) { return g.topo_position(a) < g.topo_position(b); });
  if (const FusionDecision d = check_group(g, all, o); !d.fuse) return grp.id + " with what it recomputes is illegal";
  return std::nullopt;
}

inline std::optional<std::string> check_plan_against_graph(const FusionEngine& e) {
  const Graph& g = e.graph();
  for (const Group& grp : e.plan().groups()) {
    if (auto bad = check_group_recomputed(g, grp, e.options())) return bad;
    if (grp.eliminated() && grp.op_class != OpClass::elementwise) {
      return grp.id + " (" + std::string(op_class_name(grp.op_class)) + ") is eliminated: only elementwise work can be";
    }
  }
  if (!first_difference(g, g).empty()) return "a graph differs from itself";
  // The same graph renamed is another graph: a plan must not pass for it.
  GraphSpec renamed;
  renamed.name = g.name() + " (another)";
  renamed.inputs = g.inputs();
  for (const Node& n : g.nodes()) {
    NodeSpec s;
    s.name = n.name;
    s.op = n.op;
    for (const Operand& o : n.inputs) {
      if (o.is_scalar()) s.inputs.emplace_back(o.scalar);
      else s.inputs.emplace_back(g.value_name(o.value));
    }
    s.attrs = n.attrs;
    if (n.def->needs_declared_type) {
      s.shape = n.type.shape;
      s.dtype = n.type.dtype;
    }
    renamed.nodes.push_back(std::move(s));
  }
  for (ValueId v : g.outputs()) renamed.outputs.push_back(g.value_name(v));
  auto other = build_graph(renamed);
  if (!other) return "the graph does not rebuild from its own spec:\n" + format_diagnostics(other.errors());
  if (first_difference(g, *other).empty()) return "a renamed graph passes as the plan's graph";
  return std::nullopt;
}

inline std::optional<std::string> check_plan_document(std::string_view text) {
  auto engine = FusionEngine::load_fused_graph(text, DeviceDescription::h100_sxm());
  if (!engine) return check_failed_load(text, engine.errors());
  if (auto bad = check_plan_against_graph(*engine)) return "as loaded: " + *bad;
  engine->auto_fuse();
  if (auto bad = check_plan_against_graph(*engine)) return "after auto-fuse: " + *bad;
  return std::nullopt;
}

}  // namespace fx::fuzz
