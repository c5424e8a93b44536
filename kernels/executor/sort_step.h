// Internal to kernels/executor: sort and topk nodes as steps of a plan, run by CUB's segmented sort
// (kernels/sort). The fusion engine never fuses them, so each is a group of its own in both plans.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/fusion/plan.h"
#include "kernels/executor/executor_internal.h"
#include "kernels/sort/cub_sort.h"

namespace fx::gpu {

class SortStep {
 public:
  SortStep(RowSort sort, ValueId input, ValueId output) : sort_(sort), input_(input), output_(output) {}
  const RowSort& sort() const { return sort_; }
  std::string describe() const;  // for the report: "CUB segmented radix sort, 64 rows of 1000, top 10"
  void launch(const PlanBuffers& b, cudaStream_t stream) const;

 private:
  RowSort sort_;
  ValueId input_, output_;
};

// When the group is a sort or topk node, adds its step to plan p (and grows the shared workspace) and
// returns true; false for any other group. Throws std::invalid_argument for a sort it cannot run (an axis
// with more than one element after it, or a sort fused with other nodes). The step is named "cub_" + stem.
bool append_sort_step(CompiledProgram& im, PlanId p, const Group& group, const std::vector<NodeId>& nodes,
                      const std::string& stem);

}  // namespace fx::gpu
