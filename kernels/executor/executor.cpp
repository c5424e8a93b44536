// Executor setup: the device, code generation and NVRTC compile of both plans, the memory plan (computed
// before any allocation), seeded inputs and poisoned outputs, and single launches.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>

#include "kernels/codegen/emit.h"
#include "kernels/codegen/test_fault.h"
#include "kernels/common/cuda_call.h"
#include "kernels/common/event_timing.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/executor/executor_internal.h"
#include "kernels/executor/sort_step.h"
#include "kernels/profile/nvtx_range.h"

namespace fx::gpu {

DeviceInfo query_device(int ordinal) {
  int count = 0;
  const cudaError_t r = cudaGetDeviceCount(&count);
  if (r == cudaErrorInsufficientDriver || r == cudaErrorNoDevice || (r == cudaSuccess && count == 0)) {
    cudaGetLastError();
    throw NoDeviceError(std::string("no CUDA device (") + (r == cudaSuccess ? "no device found" : cudaGetErrorString(r)) + ")");
  }
  FX_CUDA_CALL(r);
  cudaDeviceProp p{};
  FX_CUDA_CALL(cudaGetDeviceProperties(&p, ordinal));
  FX_CUDA_CALL(cudaSetDevice(ordinal));
  DeviceInfo d;
  d.ordinal = ordinal;
  d.name = p.name;
  d.sm_count = p.multiProcessorCount;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.memory_bus_bits = p.memoryBusWidth;
  d.l2_bytes = p.l2CacheSize;
  int clock = 0, mem_clock = 0;
  FX_CUDA_CALL(cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, ordinal));
  FX_CUDA_CALL(cudaDeviceGetAttribute(&mem_clock, cudaDevAttrMemoryClockRate, ordinal));
  d.clock_khz = clock;
  d.memory_clock_khz = mem_clock;
  std::size_t free_b = 0, total_b = 0;
  FX_CUDA_CALL(cudaMemGetInfo(&free_b, &total_b));
  d.free_memory = static_cast<std::int64_t>(free_b);
  d.total_memory = static_cast<std::int64_t>(total_b);
  return d;
}

std::string host_bound_note(const PlanReport& p) {
  if (!p.graph_ms || *p.graph_ms <= 0 || p.total_ms <= kHostBoundRatio * *p.graph_ms) return {};
  return "host-bound: launched step by step the plan took " + ms_text(p.total_ms) + ", replayed as a CUDA graph " +
         ms_text(*p.graph_ms) + ": its steps took the host longer to launch (library calls above all) than the GPU "
         "to run them; the graph's time is the GPU's";
}

double tolerance_for(DType t) {
  switch (t) {
    case DType::f32: return 1e-5;
    case DType::f16:
    case DType::bf16: return 1e-2;
    default: return 0.0;  // integers and bool: exact
  }
}

std::size_t placement_gap(std::uint64_t placement, std::size_t index) {
  if (placement == 0) return 0;
  // splitmix64 of (placement, index): gaps that differ from buffer to buffer and from placement to placement.
  std::uint64_t z = placement * 0x9E3779B97F4A7C15ull + (index + 1) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<std::size_t>(z % 16) << 20;
}

namespace {

std::size_t align256(std::int64_t b) { return (static_cast<std::size_t>(b) + 255) / 256 * 256; }

// Inputs that feed log, sqrt, rsqrt, pow's base, reciprocal or a divisor get positive values, so a graph
// that is finite for sensible inputs stays finite (NaN never passes verification).
bool needs_positive(const Graph& g, ValueId v) {
  for (NodeId c : g.consumers(v)) {
    const Node& n = g.node(c);
    if (n.op == "log" || n.op == "sqrt" || n.op == "rsqrt" || n.op == "reciprocal") return true;
    if ((n.op == "pow" || n.op == "div") && !n.inputs.empty()) {
      const std::size_t k = n.op == "pow" ? 0 : 1;
      if (k < n.inputs.size() && n.inputs[k].value == v) return true;
    }
    if (n.op == "batchnorm" && n.inputs.size() > 2 && n.inputs[2].value == v) return true;  // the variance
  }
  return false;
}

std::string fill_source(DType t) {
  using namespace codegen;
  const std::string name = std::string("fx_fill_") + std::string(dtype_name(t));
  std::string value;
  if (is_floating(t)) {
    value = to_storage(t, "lo + (hi - lo) * u");
  } else if (t == DType::boolean) {
    value = "(unsigned char)(bits & 1u)";
  } else {
    value = "(" + storage_type(t) + ")(lo + floorf(u * (hi - lo + 1.0f)))";
  }
  return device_preamble() + "\n// Seeded inputs: element i takes a Philox draw keyed by (seed, i); uniform in [lo, hi).\n"
         "extern \"C\" __global__ void " + name + "(" + storage_type(t) +
         "* out, long long n, unsigned long long seed, float lo, float hi) {\n"
         "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {\n"
         "    const unsigned int bits = fx_philox_bits24(seed, (unsigned long long)i);\n"
         "    const float u = (float)bits * (1.0f / 16777216.0f);\n"
         "    (void)u;\n"
         "    out[i] = " + value + ";\n"
         "  }\n"
         "}\n";
}

// FX_TEST_FAULT_KERNEL (test only, kernels/codegen/test_fault.h) acts on the fused plan alone: the unfused plan
// runs clean first, so the fault lands on a step that is not the run's first.
void apply_test_fault_switch(PlanSteps& ps) {
  std::vector<std::pair<std::string, GeneratedKernel*>> generated;
  for (Step& s : ps.steps) {
    if (!s.call && !s.sort) generated.emplace_back(s.group, &s.kernel);
  }
  if (auto note = codegen::apply_test_fault(generated)) {
    ps.notes.push_back(*note);
    for (auto& [group, k] : generated) k->alternatives.clear();  // the fault is in the default layouts only
  }
}

}  // namespace

Executor::Impl::~Impl() {
  release();
  for (auto& plan : plans) {
    for (auto& s : plan.steps) {
      if (s.library) cudaLibraryUnload(s.library);
      for (const Step::Layout& l : s.alternatives) cudaLibraryUnload(l.library);
    }
  }
  for (auto& [t, lk] : fill_kernels) cudaLibraryUnload(lk.first);
  if (stream) cudaStreamDestroy(stream);
}

std::pair<cudaLibrary_t, cudaKernel_t> Executor::Impl::load(const std::string& source, const std::string& name) {
  const Cubin cubin = compiler.compile(source, name, device.arch());
  cudaLibrary_t lib = nullptr;
  FX_CUDA_CALL(cudaLibraryLoadData(&lib, cubin->data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  cudaKernel_t fn = nullptr;
  try {
    FX_CUDA_CALL(cudaLibraryGetKernel(&fn, lib, name.c_str()));
  } catch (...) {
    cudaLibraryUnload(lib);
    throw;
  }
  return {lib, fn};
}

void Executor::Impl::build_plan(PlanId p, const Plan& plan) {
  PlanSteps& ps = this->plan(p);
  ps.name = std::string(plan_name(p));
  ps.predicted_ms = plan.predicted_time_s() * 1e3;
  ps.bytes = plan.bytes_moved();
  int index = 0;
  for (const Group& group : plan.groups()) {
    if (group.eliminated()) continue;
    std::vector<NodeId> nodes = group.nodes;
    nodes.insert(nodes.end(), group.recomputed.begin(), group.recomputed.end());
    if (append_sort_step(*this, p, group, nodes)) continue;  // CUB, not generated code
    if (has_contraction(graph, nodes)) {  // cuBLASLt/cuDNN calls, then generated kernels for what is left
      append_contraction_steps(*this, p, group, nodes, index++);
      continue;
    }
    if (std::string why = unsupported_reason(graph, nodes); !why.empty()) {
      throw std::invalid_argument("cannot run group " + group.id + ": " + why);
    }
    GroupCode code = generate_group(graph, nodes, group.io.outputs, index++);
    if (!code.note.empty()) ps.notes.push_back(group.id + ": " + code.note);
    for (GeneratedKernel& k : code.kernels) {
      Step s;
      s.group = group.id;
      s.group_predicted_ms = group.cost.time_s * 1e3;
      s.group_predicted_bytes = group.cost.bytes_read + group.cost.bytes_written;
      s.kernel = std::move(k);
      ps.steps.push_back(std::move(s));
    }
  }
  if (p == PlanId::fused) apply_test_fault_switch(ps);
  std::size_t done = 0;
  for (Step& s : ps.steps) {
    if (s.call || s.sort) continue;  // a library call: nothing to compile
    progress("compile", static_cast<double>(done++) / static_cast<double>(ps.steps.size()),
             ps.name + " plan: " + s.kernel.name);
    auto [lib, fn] = load(s.kernel.source, s.kernel.name);
    s.library = lib;
    s.function = fn;
    if (!options.autotune && options.force_layout < 1) continue;  // the default layout only
    for (KernelLayout& alt : s.kernel.alternatives) {
      auto [alib, afn] = load(alt.source, s.kernel.name);
      s.alternatives.push_back({std::move(alt), alib, afn});
    }
    s.kernel.alternatives.clear();  // moved into the step
  }
}

void Executor::Impl::plan_memory() {
  // With a placement (RunOptions::placement), a gap before each input and before each step's outputs; a step's
  // outputs stay back to back (a horizontal GEMM writes its parts at equal spacing).
  std::size_t at = 0, gaps = 0, buffers = 0;
  auto gap = [&] {
    const std::size_t g = placement_gap(options.timing.placement, buffers++);
    at += g;
    gaps += g;
  };
  for (ValueId v = 0; v < static_cast<ValueId>(graph.inputs().size()); ++v) {
    gap();
    input_offsets[v] = at;
    at += align256(graph.value_type(v).bytes());
  }
  for (auto& ps : plans) {
    for (const Step& s : ps.steps) {
      bool first = true;
      for (ValueId v : s.kernel.outputs) {
        if (ps.offsets.count(v)) continue;
        if (first) gap();
        first = false;
        ps.offsets[v] = at;
        at += align256(graph.value_type(v).bytes());
      }
    }
  }
  placement_gaps = gaps;
  sort_workspace_offset = at;  // one workspace for every sort step: steps run one at a time on one stream
  at += align256(static_cast<std::int64_t>(sort_workspace_bytes));
  arena_bytes = at;
}

void Executor::Impl::allocate() {
  if (arena) return;
  std::size_t free_b = 0, total_b = 0;
  FX_CUDA_CALL(cudaMemGetInfo(&free_b, &total_b));
  // Keep room (kMemoryHeadroomBytes). The library calls' buffers and workspaces, the values' NHWC copies and the
  // cache-flush buffer are allocated after the arena: counted in required_bytes().
  const std::size_t headroom = kMemoryHeadroomBytes;
  const auto needed = static_cast<std::size_t>(required_bytes());
  if (needed + headroom > free_b) {
    const std::size_t library = needed - arena_bytes;
    throw std::runtime_error("the run needs " + format_bytes(static_cast<double>(needed)) + " of device memory" +
                             (library ? " (" + format_bytes(static_cast<double>(library)) +
                                            " of it cuBLASLt/cuDNN workspaces, prepared weights and scratch, NHWC copies of values" +
                                            (options.timing.cold_l2 ? ", and the cache-flush buffer" : "") + ")"
                                      : std::string()) +
                             (placement_gaps ? " (" + format_bytes(static_cast<double>(placement_gaps)) +
                                                   " of it the gaps of --placement " +
                                                   std::to_string(options.timing.placement) + ")"
                                             : std::string()) +
                             " (+" +
                             format_bytes(static_cast<double>(headroom)) + " headroom) but only " +
                             format_bytes(static_cast<double>(free_b)) + " of " + format_bytes(static_cast<double>(total_b)) +
                             " is free on " + device.name + "; nothing was allocated");
  }
  FX_CUDA_CALL(cudaMalloc(reinterpret_cast<void**>(&arena), std::max<std::size_t>(arena_bytes, 256)));
}

void Executor::Impl::release() {
  if (arena) cudaFree(arena);
  arena = nullptr;
  release_library_steps(*this);
  for (auto& ps : plans) {
    for (auto& [v, buffer] : ps.nhwc_buffers) buffer = contraction_detail::DeviceMemory();
    ps.bound.clear();
  }
}

void* Executor::Impl::pointer(PlanId p, ValueId v) const {
  if (auto it = input_offsets.find(v); it != input_offsets.end()) return arena + it->second;
  const PlanSteps& ps = plan(p);
  if (auto it = ps.bound.find(v); it != ps.bound.end()) return it->second;
  if (auto it = ps.offsets.find(v); it != ps.offsets.end()) return arena + it->second;
  throw std::logic_error("value " + graph.value_name(v) + " has no buffer in the " + ps.name + " plan");
}

void* Executor::Impl::nhwc_pointer(PlanId p, ValueId v) const {
  const auto it = plan(p).nhwc_buffers.find(v);
  return it == plan(p).nhwc_buffers.end() ? nullptr : it->second.get();
}

void Executor::Impl::allocate_nhwc_buffers() {
  for (auto& ps : plans) {
    for (auto& [v, buffer] : ps.nhwc_buffers) {
      if (!buffer.get()) buffer = contraction_detail::DeviceMemory(static_cast<std::size_t>(graph.value_type(v).bytes()));
    }
  }
}

void Executor::Impl::fill_inputs(const std::map<ValueId, const void*>& given) {
  for (ValueId v = 0; v < static_cast<ValueId>(graph.inputs().size()); ++v) {
    const TensorType& t = graph.value_type(v);
    if (auto it = given.find(v); it != given.end()) {
      FX_CUDA_CALL(cudaMemcpyAsync(pointer(PlanId::unfused, v), it->second, static_cast<std::size_t>(t.bytes()),
                                   cudaMemcpyDeviceToDevice, stream));
      continue;
    }
    if (!fill_kernels.count(t.dtype)) {
      fill_kernels[t.dtype] = load(fill_source(t.dtype), "fx_fill_" + std::string(dtype_name(t.dtype)));
    }
    const bool positive = needs_positive(graph, v);
    float lo = positive ? 0.5f : -2.0f, hi = 2.0f;
    if (!is_floating(t.dtype)) lo = 1.0f, hi = 16.0f;  // integers: never 0, so they can divide
    void* out = pointer(PlanId::unfused, v);
    long long n = t.numel();
    unsigned long long seed = options.seed * 1000003ull + static_cast<unsigned long long>(v);
    void* args[] = {&out, &n, &seed, &lo, &hi};
    const long long blocks = std::min<long long>((n + 255) / 256, 65535);
    FX_CUDA_CALL(cudaLaunchKernel(reinterpret_cast<const void*>(fill_kernels[t.dtype].second),
                                  dim3(static_cast<unsigned>(blocks)), dim3(256), args, 0, stream));
  }
  prepare_library_steps(*this);  // stacked and folded weights are made from the inputs just written
  allocate_nhwc_buffers();
}

void Executor::Impl::poison_outputs() {
  // 0xFF bytes are NaN in f32, f16 and bf16 (and -1 in integers): an element no kernel wrote cannot pass.
  for (auto& ps : plans) {
    for (const auto& [v, off] : ps.offsets) {
      FX_CUDA_CALL(cudaMemsetAsync(arena + off, 0xFF, static_cast<std::size_t>(graph.value_type(v).bytes()), stream));
    }
    for (const auto& [v, buffer] : ps.nhwc_buffers) {
      if (buffer.get()) FX_CUDA_CALL(cudaMemsetAsync(buffer.get(), 0xFF, buffer.bytes(), stream));
    }
  }
}

void Executor::Impl::launch(PlanId p, std::size_t s) {
  const Step& step = plan(p).steps[s];
  LaunchInfo info{p, static_cast<int>(s), step.kernel.name, step.group, plan_index(p) * 1'000'000u + s};
  if (options.before_launch) options.before_launch(info);
  const NvtxRange group_range(step.group), kernel_range(step.kernel.name);  // profilers: kernels by group
  if (step.sort) {
    step.sort->launch(*this, p);
  } else if (step.call) {
    step.call->launch(*this, p, step.call_part);
  } else {
    launch_generated(p, step);
  }
  launched(p, s);
  if (options.after_launch) options.after_launch(info);
}

void Executor::Impl::launch_generated(PlanId p, const Step& step) {
  launch_layout(p, step, step.function, step.kernel.block, step.kernel.grid);
}

// One launch of a generated step with the given compiled layout (the step's own, or one of its alternatives
// while they are timed).
void Executor::Impl::launch_layout(PlanId p, const Step& step, cudaKernel_t function, int block, std::int64_t grid) {
  std::vector<void*> ptrs;
  if (step.conversion) {  // the source, then the destination
    void* nchw = pointer(p, step.conversion->value);
    void* nhwc = nhwc_pointer(p, step.conversion->value);
    if (!nhwc) throw std::logic_error(step.kernel.name + ": the value has no NHWC buffer");
    ptrs = step.conversion->to_nhwc ? std::vector<void*>{nchw, nhwc} : std::vector<void*>{nhwc, nchw};
  } else {
    // A step run channels-last reads and writes the NHWC buffers (its scalars have only the one).
    auto at = [&](ValueId v) {
      if (!step.channels_last || has_one_layout(graph, v)) return pointer(p, v);
      void* nhwc = nhwc_pointer(p, v);
      if (!nhwc) throw std::logic_error(step.kernel.name + ": " + graph.value_name(v) + " has no NHWC buffer");
      return nhwc;
    };
    for (ValueId v : step.kernel.inputs) ptrs.push_back(at(v));
    for (ValueId v : step.kernel.outputs) ptrs.push_back(at(v));
  }
  std::vector<void*> args;
  for (void*& ptr : ptrs) args.push_back(&ptr);
  FX_CUDA_CALL(cudaLaunchKernel(reinterpret_cast<const void*>(function), dim3(static_cast<unsigned>(grid)),
                                dim3(static_cast<unsigned>(block)), args.data(), 0, stream));
}

// Recorded only once the launch call returned: a launch call that fails with a sticky error reports an
// earlier step's fault, which the previous record names.
void Executor::Impl::launched(PlanId p, std::size_t s) {
  const Step& step = plan(p).steps[s];
  fault_site.plan = plan(p).name;
  fault_site.step = static_cast<int>(s);
  fault_site.kernel = step.kernel.name;
  fault_site.group = step.group;
  fault_site.exact = sync_each_step;
  if (sync_each_step) FX_CUDA_CALL(cudaStreamSynchronize(stream));
}

// Each phase starts with the stream idle (the previous one ended in a synchronisation), so a step launched in
// an earlier phase is never blamed for an error seen in this one.
void Executor::Impl::begin_phase(const std::string& phase, bool sync_each) {
  fault_site = FaultSite{};
  fault_site.phase = phase;
  sync_each_step = sync_each;
}

void Executor::Impl::rest_for(double ms) {
  if (!(ms > 0)) return;
  FX_CUDA_CALL(cudaStreamSynchronize(stream));
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

void Executor::Impl::launch_all(PlanId p) {
  const NvtxRange plan_range(plan(p).name);
  for (std::size_t s = 0; s < plan(p).steps.size(); ++s) launch(p, s);
}

Executor::Executor(const Graph& graph, const Plan& unfused, const Plan& fused, RunOptions options)
    : impl_(std::make_unique<Impl>(graph, std::move(options))) {
  impl_->device = query_device(0);
  impl_->clocks = std::make_unique<ClockMonitor>(impl_->options.timing.read_clocks ? impl_->device.ordinal : -1);
  impl_->progress("device", 0.0, impl_->device.name + " (" + impl_->device.arch() + ")");
  FX_CUDA_CALL(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
  impl_->build_plan(PlanId::unfused, unfused);
  impl_->build_plan(PlanId::fused, fused);
  impl_->plan_memory();
}

Executor::~Executor() = default;
Executor::Executor(Executor&&) noexcept = default;
Executor& Executor::operator=(Executor&&) noexcept = default;

std::int64_t Executor::Impl::required_bytes() const {
  std::int64_t nhwc = 0;
  for (const auto& ps : plans) {
    for (const auto& [v, buffer] : ps.nhwc_buffers) nhwc += graph.value_type(v).bytes();
  }
  return static_cast<std::int64_t>(arena_bytes) + library_step_bytes(*this) + nhwc +
         (options.timing.cold_l2 ? static_cast<std::int64_t>(kColdL2Bytes) : 0);
}

std::int64_t Executor::required_bytes() const { return impl_->required_bytes(); }

void Executor::prepare() {
  impl_->attributed([&] {
    impl_->begin_phase("inputs", false);
    impl_->allocate();
    impl_->fill_inputs();
    FX_CUDA_CALL(cudaStreamSynchronize(impl_->stream));
  });
}

void Executor::launch_plan_once(PlanId plan) {
  impl_->attributed([&] {
    impl_->begin_phase("single launches", false);
    impl_->launch_all(plan);
    FX_CUDA_CALL(cudaStreamSynchronize(impl_->stream));
  });
}

void Executor::launch_step(PlanId plan, int step) {
  if (step < 0 || static_cast<std::size_t>(step) >= impl_->plan(plan).steps.size()) {
    throw std::out_of_range("no step " + std::to_string(step) + " in the " + std::string(plan_name(plan)) + " plan");
  }
  impl_->attributed([&] {
    // No reset of the last step: the previous one may still be running (the caller synchronises).
    impl_->fault_site.phase = "single launches";
    impl_->sync_each_step = false;
    impl_->launch(plan, static_cast<std::size_t>(step));
  });
}

FaultSite Executor::fault_site() const { return impl_->fault_site; }

}  // namespace fx::gpu
