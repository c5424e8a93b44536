// Locality-aware group order. In gpt2_block the q, k and v projections all read the first layernorm's output
// (24 MiB): in the plan's order each projection's head-split kernel ran between them, so the k and v GEMMs read
// that output from DRAM (0.048 ms each on an H100) where the q GEMM, right after the layernorm, found it in
// the L2 (0.043 ms); Inductor runs its q and k GEMMs back to back (0.041 ms each;
// tools/microbench/kernel_breakdown.py). Taking first the ready group that reads what the last group read runs
// the three projections back to back.
#include "kernels/executor/schedule.h"

#include <algorithm>
#include <map>
#include <set>

namespace fx::gpu {

std::vector<std::size_t> execution_order(const Graph& g, const Plan& plan) {
  const std::vector<Group>& groups = plan.groups();
  std::vector<std::size_t> launched;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (!groups[i].eliminated()) launched.push_back(i);
  }
  std::map<ValueId, std::size_t> writer;
  for (std::size_t i : launched) {
    for (ValueId v : groups[i].io.outputs) writer[v] = i;
  }
  std::map<std::size_t, std::vector<std::size_t>> successors;
  std::map<std::size_t, int> waiting;  // producers not yet run
  for (std::size_t i : launched) {
    std::set<std::size_t> producers;
    for (ValueId v : groups[i].io.inputs) {
      if (auto it = writer.find(v); it != writer.end() && it->second != i) producers.insert(it->second);
    }
    for (std::size_t p : producers) successors[p].push_back(i);
    waiting[i] = static_cast<int>(producers.size());
  }
  std::set<std::size_t> ready;  // ordered: the plan's order breaks ties
  for (std::size_t i : launched) {
    if (waiting[i] == 0) ready.insert(i);
  }
  std::vector<std::size_t> order;
  const Group* last = nullptr;
  while (!ready.empty()) {
    std::size_t pick = *ready.begin();
    if (last) {
      std::int64_t most = 0;
      for (std::size_t r : ready) {
        std::int64_t shared = 0;
        for (ValueId v : groups[r].io.inputs) {
          if (std::binary_search(last->io.inputs.begin(), last->io.inputs.end(), v)) shared += g.value_type(v).bytes();
        }
        if (shared > most) most = shared, pick = r;
      }
    }
    ready.erase(pick);
    order.push_back(pick);
    last = &groups[pick];
    for (std::size_t s : successors[pick]) {
      if (--waiting[s] == 0) ready.insert(s);
    }
  }
  if (order.size() != launched.size()) return launched;  // a cycle cannot happen in a valid plan; keep its order
  return order;
}

}  // namespace fx::gpu
