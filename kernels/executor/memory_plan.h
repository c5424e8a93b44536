// Internal to kernels/executor: where both plans' values live on the device. One arena holds the graph's inputs
// (shared by both plans), every value each plan's steps write and the sort steps' workspace; values kept
// channels-last between steps have NHWC buffers of their own; a harness may bind graph outputs to its own buffers;
// a view (core/analysis/views.h) has no buffer of its own but its input's.
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
// - A view's value reads its source's buffer: pointer(), bind() and storage() follow it there. No buffer of the
//   arena is ever given to a second value, so a view's bytes stay as its source's writer left them for as long
//   as the plan runs; a view is written by no step, and a value is written once per plan.
class MemoryPlan {
 public:
  MemoryPlan() = default;
  ~MemoryPlan();
  MemoryPlan(const MemoryPlan&) = delete;
  MemoryPlan& operator=(const MemoryPlan&) = delete;

  // The offsets: with a placement (TimingProtocol::placement), a gap before each input and before each step's
  // outputs (placement_gap); a step's outputs stay back to back (a horizontal GEMM writes its parts at equal
  // spacing). `step_outputs[p]` lists the values each step of plan p writes, in launch order; `views[p]` maps
  // each view of plan p to the value whose buffer it reads (an input, a value a step writes, or another view).
  // Throws std::logic_error for a view that a step writes or whose source has no buffer.
  void plan(const Graph& graph, const std::array<std::vector<std::vector<ValueId>>, 2>& step_outputs,
            std::uint64_t placement, std::size_t sort_workspace_bytes,
            const std::array<std::map<ValueId, ValueId>, 2>& views = {});
  // The value whose buffer v is in plan p: v itself, or the value a view (or a chain of views) reads.
  ValueId storage(PlanId p, ValueId v) const;
  bool is_view(PlanId p, ValueId v) const { return views_[plan_index(p)].count(v) != 0; }
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
  // Graph outputs plan p writes into the caller's buffers instead of its own (Executor::bind_outputs); a view's
  // binding is its storage's, which core never lets two graph outputs share (lone_view).
  void bind(PlanId p, const std::map<ValueId, void*>& bound);
  void unbind_all();

 private:
  std::map<ValueId, std::size_t> input_offsets_;
  std::array<std::map<ValueId, std::size_t>, 2> offsets_;  // values each plan writes -> offset in the arena
  std::array<std::map<ValueId, ValueId>, 2> views_;         // each plan's views -> the value they read
  std::array<std::map<ValueId, void*>, 2> bound_;
  std::array<std::map<ValueId, contraction_detail::DeviceMemory>, 2> nhwc_buffers_;
  std::size_t arena_bytes_ = 0, placement_gaps_ = 0;
  std::size_t sort_workspace_offset_ = 0, sort_workspace_bytes_ = 0;  // one for every sort step: one stream
  char* arena_ = nullptr;

  void check_views(const Graph& graph) const;
};

}  // namespace fx::gpu
