#include "kernels/executor/memory_plan.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>

#include "kernels/common/cuda_call.h"
#include "kernels/executor/executor.h"

namespace fx::gpu {
namespace {

std::size_t align256(std::int64_t b) { return (static_cast<std::size_t>(b) + 255) / 256 * 256; }

}  // namespace

std::size_t placement_gap(std::uint64_t placement, std::size_t index) {
  if (placement == 0) return 0;
  // splitmix64 of (placement, index): gaps that differ from buffer to buffer and from placement to placement.
  std::uint64_t z = placement * 0x9E3779B97F4A7C15ull + (index + 1) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<std::size_t>(z % 16) << 20;
}

MemoryPlan::~MemoryPlan() { release(); }

void MemoryPlan::plan(const Graph& graph, const std::array<std::vector<std::vector<ValueId>>, 2>& step_outputs,
                      std::uint64_t placement, std::size_t sort_workspace_bytes,
                      const std::array<std::map<ValueId, ValueId>, 2>& views) {
  std::size_t at = 0, gaps = 0, buffers = 0;
  auto gap = [&] {
    const std::size_t g = placement_gap(placement, buffers++);
    at += g;
    gaps += g;
  };
  for (ValueId v = 0; v < static_cast<ValueId>(graph.inputs().size()); ++v) {
    gap();
    input_offsets_[v] = at;
    at += align256(graph.value_type(v).bytes());
  }
  for (PlanId p : kPlanIds) {
    auto& offsets = offsets_[plan_index(p)];
    for (const std::vector<ValueId>& outputs : step_outputs[plan_index(p)]) {
      bool first = true;
      for (ValueId v : outputs) {
        if (offsets.count(v)) continue;
        if (first) gap();
        first = false;
        offsets[v] = at;
        at += align256(graph.value_type(v).bytes());
      }
    }
  }
  views_ = views;
  check_views(graph);
  placement_gaps_ = gaps;
  sort_workspace_offset_ = at;
  sort_workspace_bytes_ = sort_workspace_bytes;
  at += align256(static_cast<std::int64_t>(sort_workspace_bytes));
  arena_bytes_ = at;
}

std::int64_t MemoryPlan::nhwc_bytes(const Graph& graph) const {
  std::int64_t bytes = 0;
  for (const auto& buffers : nhwc_buffers_) {
    for (const auto& [v, buffer] : buffers) bytes += graph.value_type(v).bytes();
  }
  return bytes;
}

void MemoryPlan::allocate() {
  if (arena_) return;
  FX_CUDA_CALL(cudaMalloc(reinterpret_cast<void**>(&arena_), std::max<std::size_t>(arena_bytes_, 256)));
}

void MemoryPlan::release() {
  if (arena_) cudaFree(arena_);
  arena_ = nullptr;
  for (auto& buffers : nhwc_buffers_) {
    for (auto& [v, buffer] : buffers) buffer = contraction_detail::DeviceMemory();
  }
  unbind_all();
}

void MemoryPlan::unbind_all() {
  for (auto& bound : bound_) bound.clear();
}

void MemoryPlan::allocate_nhwc_buffers(const Graph& graph) {
  for (auto& buffers : nhwc_buffers_) {
    for (auto& [v, buffer] : buffers) {
      if (!buffer.get()) buffer = contraction_detail::DeviceMemory(static_cast<std::size_t>(graph.value_type(v).bytes()));
    }
  }
}

void MemoryPlan::set_nhwc_buffers(PlanId p, std::map<ValueId, contraction_detail::DeviceMemory> buffers) {
  nhwc_buffers_[plan_index(p)] = std::move(buffers);
}

void MemoryPlan::poison(const Graph& graph, CUstream_st* stream) const {
  for (PlanId p : kPlanIds) {
    for (const auto& [v, off] : offsets_[plan_index(p)]) {
      FX_CUDA_CALL(cudaMemsetAsync(arena_ + off, 0xFF, static_cast<std::size_t>(graph.value_type(v).bytes()), stream));
    }
    for (const auto& [v, buffer] : nhwc_buffers_[plan_index(p)]) {
      if (buffer.get()) FX_CUDA_CALL(cudaMemsetAsync(buffer.get(), 0xFF, buffer.bytes(), stream));
    }
  }
}

ValueId MemoryPlan::storage(PlanId p, ValueId v) const {
  const auto& views = views_[plan_index(p)];
  for (auto it = views.find(v); it != views.end(); it = views.find(v)) v = it->second;
  return v;
}

void MemoryPlan::check_views(const Graph& graph) const {
  for (PlanId p : kPlanIds) {
    const auto& offsets = offsets_[plan_index(p)];
    for (const auto& [view, source] : views_[plan_index(p)]) {
      const std::string where = "the view " + graph.value_name(view) + " of the " + std::string(plan_name(p)) + " plan";
      if (offsets.count(view)) throw std::logic_error(where + " is written by a step");
      const ValueId s = storage(p, view);
      if (!input_offsets_.count(s) && !offsets.count(s)) {
        throw std::logic_error(where + " reads " + graph.value_name(s) + ", which has no buffer");
      }
    }
  }
}

void MemoryPlan::bind(PlanId p, const std::map<ValueId, void*>& bound) {
  std::map<ValueId, void*> by_storage;
  for (const auto& [v, ptr] : bound) {
    if (!by_storage.emplace(storage(p, v), ptr).second) {
      throw std::logic_error("two bound outputs share the buffer of a value of the " + std::string(plan_name(p)) + " plan");
    }
  }
  bound_[plan_index(p)] = std::move(by_storage);
}

void* MemoryPlan::pointer(const Graph& graph, PlanId p, ValueId v) const {
  v = storage(p, v);
  if (auto it = input_offsets_.find(v); it != input_offsets_.end()) return arena_ + it->second;
  const auto& bound = bound_[plan_index(p)];
  if (auto it = bound.find(v); it != bound.end()) return it->second;
  const auto& offsets = offsets_[plan_index(p)];
  if (auto it = offsets.find(v); it != offsets.end()) return arena_ + it->second;
  throw std::logic_error("value " + graph.value_name(v) + " has no buffer in the " + std::string(plan_name(p)) +
                         " plan");
}

void* MemoryPlan::nhwc_pointer(PlanId p, ValueId v) const {
  const auto& buffers = nhwc_buffers_[plan_index(p)];
  const auto it = buffers.find(v);
  return it == buffers.end() ? nullptr : it->second.get();
}

}  // namespace fx::gpu
