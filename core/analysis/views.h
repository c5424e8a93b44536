// Views: an op that moves no byte (OpDef::view, a reshape of a row-major tensor) run alone in its group
// launches no kernel and moves nothing; its output is its input's buffer read with another shape. The cost
// model charges it nothing, the plan counts no kernel for it, and the executor gives its output its input's
// buffer (kernels/executor/memory_plan.h). A graph output stays a copy where sharing a buffer would make two
// graph tensors one: outputs are handed to the caller as buffers of their own, and inputs are the caller's.
#pragma once

#include <string>

#include "core/graph/graph.h"

namespace fx {

struct ViewVerdict {
  ValueId source = -1;      // the value whose buffer the output shares; -1 where the node is no view or copies
  std::string copy_reason;  // a view op that still runs as a copy kernel, and why; empty otherwise
  bool is_view() const { return source >= 0; }
};

// The verdict on node n alone in a group that recomputes nothing.
ViewVerdict lone_view(const Graph& g, NodeId n);

// The value whose bytes v holds when every view op above it is a view: v's producers followed up through view
// ops to a graph input or the output of an op that is no view.
ValueId view_root(const Graph& g, ValueId v);

}  // namespace fx
