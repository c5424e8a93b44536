// The roofline cost model of one kernel (a fusion group): bytes that must cross HBM, FLOPs, and a predicted
// time = max(bytes / bandwidth, flops / peak) + launch overhead.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/cost/device_description.h"
#include "core/graph/graph.h"

namespace fx {

struct GroupCost {
  std::int64_t bytes_read = 0;     // each distinct tensor read once
  std::int64_t bytes_written = 0;  // outputs used outside the group, and graph outputs
  int tensors_read = 0;
  int tensors_written = 0;
  double flops = 0;
  double memory_time_s = 0;
  double compute_time_s = 0;
  double launch_s = 0;
  double time_s = 0;               // 0 for an eliminated group (nothing to write: all consumers recompute it)
                                   // and for a view (core/analysis/views.h: its output is its input's buffer)
  bool compute_bound() const { return compute_time_s > memory_time_s; }
  std::int64_t bytes_moved() const { return saturating_add(bytes_read, bytes_written); }
  GroupCost& operator+=(const GroupCost& o) {
    bytes_read = saturating_add(bytes_read, o.bytes_read);
    bytes_written = saturating_add(bytes_written, o.bytes_written);
    tensors_read += o.tensors_read;
    tensors_written += o.tensors_written;
    flops += o.flops;
    memory_time_s += o.memory_time_s;
    compute_time_s += o.compute_time_s;
    launch_s += o.launch_s;
    time_s += o.time_s;
    return *this;
  }
};

// The values a group reads from memory and writes back.
struct GroupIo {
  std::vector<ValueId> inputs;   // sorted by value id
  std::vector<ValueId> outputs;  // sorted by value id
};

class CostModel {
 public:
  explicit CostModel(DeviceDescription device) : device_(std::move(device)) {}
  const DeviceDescription& device() const { return device_; }

  // `nodes` are computed by the group; `recomputed` are producers it recomputes instead of reading
  // (rematerialisation); `io` says which values cross memory (see plan.h for how it is derived). A view op
  // alone (lone_view) costs nothing.
  GroupCost cost(const Graph& g, const GroupIo& io, std::span<const NodeId> nodes,
                 std::span<const NodeId> recomputed) const;
  // Cost of each node run alone (the unfused plan).
  GroupCost single(const Graph& g, NodeId n) const;

  double time_of(std::int64_t bytes, double flops, DType dtype, bool tensor_cores) const;

 private:
  DeviceDescription device_;
};

// "5 reads + 3 writes = 2 GiB" for people.
std::string describe_traffic(const GroupCost& c);

}  // namespace fx
