#include "core/analysis/views.h"

namespace fx {

ValueId view_root(const Graph& g, ValueId v) {
  for (auto p = g.producer(v); p && g.node(*p).def->view; p = g.producer(v)) v = g.node(*p).inputs[0].value;
  return v;
}

ViewVerdict lone_view(const Graph& g, NodeId n) {
  const Node& node = g.node(n);
  ViewVerdict verdict;
  if (!node.def->view || node.inputs.empty() || node.inputs[0].is_scalar()) return verdict;
  const ValueId out = g.value_of(n), in = node.inputs[0].value;
  if (g.is_output(out)) {
    const std::string& name = g.value_name(out);
    const ValueId root = view_root(g, in);
    if (g.is_input(root)) {
      verdict.copy_reason = name + " is a graph output holding the bytes of graph input " + g.value_name(root) +
                            ": it is copied, so that the output does not share the caller's input buffer";
      return verdict;
    }
    if (g.is_output(root)) {
      verdict.copy_reason = name + " is a graph output holding the bytes of graph output " + g.value_name(root) +
                            ": it is copied, so that each output has a buffer of its own";
      return verdict;
    }
    for (ValueId o : g.outputs()) {
      if (o == out || view_root(g, o) != root) continue;
      verdict.copy_reason = name + " and " + g.value_name(o) + " are graph outputs holding the bytes of " +
                            g.value_name(root) + ": " + name + " is copied, so that each output has a buffer of its own";
      return verdict;
    }
  }
  verdict.source = in;
  return verdict;
}

}  // namespace fx
