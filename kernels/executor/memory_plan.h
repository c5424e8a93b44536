// Internal to kernels/executor: where both plans' values live on the device. One arena holds the graph's inputs
// (shared by both plans), every value each plan's steps write and the sort steps' workspace; values kept
// channels-last between steps have NHWC buffers of their own; a harness may bind graph outputs to its own buffers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "core/graph/graph.h"
#include "kernels/contraction/device_memory.h"
#include "kernels/executor/plan_id.h"

struct CUstream_st;

namespace fx::gpu {

// The rules that keep it consistent:
// - Offsets are fixed by plan(), before anything is allocated, and never change afterwards: a step tuning adds
//   writes values that already have one, or NHWC buffers of their own (set_nhwc_buffers).
// - The arena is null outside a preparation: allocate() makes it, release() frees it with the NHWC buffers and
//   drops every binding, so each preparation starts from nothing.
// - A binding (bind) is only ever made on an allocated plan, for values the plan writes.
class MemoryPlan {
 public:
  MemoryPlan() = default;
  ~MemoryPlan();
  MemoryPlan(const MemoryPlan&) = delete;
  MemoryPlan& operator=(const MemoryPlan&) = delete;

  // The offsets: with a placement (TimingProtocol::placement), a gap before each input and before each step's
  // outputs (placement_gap); a step's outputs stay back to back (a horizontal GEMM writes its parts at equal
  // spacing). `step_outputs[p]` lists the values each step of plan p writes, in launch order.
  void plan(const Graph& graph, const std::array<std::vector<std::vector<ValueId>>, 2>& step_outputs,
            std::uint64_t placement, std::size_t sort_workspace_bytes);
  std::size_t arena_bytes() const { return arena_bytes_; }
  std::size_t placement_gaps() const { return placement_gaps_; }  // the bytes the placement's gaps add
  // Bytes of the NHWC buffers the plans have (allocated or not).
  std::int64_t nhwc_bytes(const Graph& graph) const;

  bool allocated() const { return arena_ != nullptr; }
  void allocate();  // the arena; the caller has checked free memory
  void release();
  // Allocates the NHWC buffers not allocated yet (after the arena, at each preparation).
  void allocate_nhwc_buffers(const Graph& graph);
  // 0xFF bytes in every value the plans write (NaN in f32, f16 and bf16, -1 in integers): an element no kernel
  // wrote cannot pass the verification.
  void poison(const Graph& graph, CUstream_st* stream) const;

  void* pointer(const Graph& graph, PlanId p, ValueId v) const;  // throws std::logic_error for a value it has not
  void* nhwc_pointer(PlanId p, ValueId v) const;                 // null where the value has none
  void* sort_workspace() const { return arena_ + sort_workspace_offset_; }
  std::size_t sort_workspace_bytes() const { return sort_workspace_bytes_; }
  bool writes(PlanId p, ValueId v) const { return offsets_[plan_index(p)].count(v) != 0; }

  // Values of plan p kept channels-last (keep_channels_last), each with its NHWC buffer.
  void set_nhwc_buffers(PlanId p, std::map<ValueId, contraction_detail::DeviceMemory> buffers);
  // Graph outputs plan p writes into the caller's buffers instead of its own (Executor::bind_outputs).
  void bind(PlanId p, std::map<ValueId, void*> bound) { bound_[plan_index(p)] = std::move(bound); }
  void unbind_all();

 private:
  std::map<ValueId, std::size_t> input_offsets_;
  std::array<std::map<ValueId, std::size_t>, 2> offsets_;  // values each plan writes -> offset in the arena
  std::array<std::map<ValueId, void*>, 2> bound_;
  std::array<std::map<ValueId, contraction_detail::DeviceMemory>, 2> nhwc_buffers_;
  std::size_t arena_bytes_ = 0, placement_gaps_ = 0;
  std::size_t sort_workspace_offset_ = 0, sort_workspace_bytes_ = 0;  // one for every sort step: one stream
  char* arena_ = nullptr;
};

}  // namespace fx::gpu
