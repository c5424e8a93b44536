// The executor: a short coordinator over the compiled program (executor_internal.h). Its constructor compiles
// both plans and plans their memory; run() goes through the run's phases (executor_run.cpp); the rest runs the
// prepared plans for a profiler or a harness.
#include <algorithm>
#include <stdexcept>

#include "kernels/common/cuda_call.h"
#include "kernels/common/event_timing.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/executor/executor_internal.h"
#include "kernels/executor/step_identity.h"
#include "kernels/tuning/tuning_environment.h"

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


// Private to the executor: the compiled program it coordinates.
struct Executor::Impl {
  Impl(const Graph& graph, RunOptions options) : program(graph, std::move(options)) {}
  CompiledProgram program;
};

Executor::Executor(const Graph& graph, const Plan& unfused, const Plan& fused, RunOptions options)
    : impl_(std::make_unique<Impl>(graph, std::move(options))) {
  CompiledProgram& im = impl_->program;
  im.device = query_device(0);
  im.clocks = std::make_unique<ClockMonitor>(im.options.timing.read_clocks ? im.device.ordinal : -1);
  if (im.options.autotune && im.options.force_layout < 0 && !im.options.tuning_cache_dir.empty()) {
    im.tuning = std::make_unique<TuningCache>(im.options.tuning_cache_dir, tuning_environment(im.device.ordinal));
  }
  im.progress("device", 0.0, im.device.name + " (" + im.device.arch() + ")");
  FX_CUDA_CALL(cudaStreamCreateWithFlags(&im.stream, cudaStreamNonBlocking));
  im.progress("generate", 0.0, "the kernels and library calls of both plans");
  im.compile(PlanId::unfused, unfused);
  im.compile(PlanId::fused, fused);
  im.load_kernels();
  im.plan_memory();
}

Executor::~Executor() = default;
Executor::Executor(Executor&&) noexcept = default;
Executor& Executor::operator=(Executor&&) noexcept = default;

std::int64_t Executor::required_bytes() const { return impl_->program.required_bytes(); }

void Executor::prepare() {
  CompiledProgram& im = impl_->program;
  im.attributed([&] {
    im.begin_phase("inputs", false);
    im.allocate();
    im.fill_inputs();
    FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
  });
}

void Executor::launch_plan_once(PlanId plan) {
  CompiledProgram& im = impl_->program;
  im.attributed([&] {
    im.begin_phase("single launches", false);
    im.launch_all(plan);
    FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
  });
}

void Executor::launch_step(PlanId plan, int step) {
  CompiledProgram& im = impl_->program;
  if (step < 0 || static_cast<std::size_t>(step) >= im.plan(plan).steps.size()) {
    throw std::out_of_range("no step " + std::to_string(step) + " in the " + std::string(plan_name(plan)) + " plan");
  }
  im.attributed([&] {
    // No reset of the last step: the previous one may still be running (the caller synchronises).
    im.fault_site.phase = "single launches";
    im.sync_each_step = false;
    im.launch(plan, static_cast<std::size_t>(step));
  });
}

FaultSite Executor::fault_site() const { return impl_->program.fault_site; }

const DeviceInfo& Executor::device() const { return impl_->program.device; }

RunReport Executor::run() {
  CompiledProgram& im = impl_->program;
  im.memory.unbind_all();  // a run writes its own buffers, whatever a harness bound
  struct Release {
    CompiledProgram& im;
    ~Release() { im.release(); }
  } release{im};
  return im.attributed([&] { return run_phases(im); });
}

std::vector<OutputCheck> Executor::prepare_with_inputs(const std::map<std::string, const void*>& inputs) {
  CompiledProgram& im = impl_->program;
  std::map<ValueId, const void*> given;
  for (const auto& [name, ptr] : inputs) {
    const auto v = im.graph.find_value(name);
    if (!v || static_cast<std::size_t>(*v) >= im.graph.inputs().size()) {
      throw std::invalid_argument("'" + name + "' is not an input of graph " + im.graph.name());
    }
    if (!ptr) throw std::invalid_argument("input '" + name + "': a null device pointer");
    given[*v] = ptr;
  }
  im.release();  // a second preparation starts from nothing
  return im.attributed([&] {
    // The caller's inputs may still be being written on its own streams, which the executor's non-blocking
    // stream does not wait for.
    FX_CUDA_CALL(cudaDeviceSynchronize());
    std::vector<OutputCheck> checks;
    prepare_and_verify(im, given, checks);
    FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
    im.begin_phase("launches on the caller's buffers", false);
    return checks;
  });
}

void Executor::enqueue(PlanId plan) {
  CompiledProgram& im = impl_->program;
  if (!im.memory.allocated()) throw std::logic_error("enqueue before prepare_with_inputs");
  im.attributed([&] {
    im.sync_each_step = false;
    im.launch_all(plan);
  });
}

void* Executor::stream() const { return impl_->program.stream; }

std::vector<KernelReport> Executor::plan_kernels(PlanId plan) const {
  const CompiledProgram& im = impl_->program;
  std::vector<KernelReport> out;
  for (std::size_t s = 0; s < im.plan(plan).steps.size(); ++s) out.push_back(kernel_report(im, plan, s));
  return out;
}

std::vector<std::optional<std::string>> Executor::measurement_identities(PlanId plan) const {
  const CompiledProgram& im = impl_->program;
  std::vector<std::optional<std::string>> out;
  for (const Step& st : im.plan(plan).steps) out.push_back(measurement_identity(st, im.buffers(plan)));
  return out;
}

std::vector<SplitGroup> Executor::split_groups(PlanId plan) const {
  return fx::gpu::split_groups(impl_->program.plan(plan));
}

void* Executor::buffer(PlanId plan, const std::string& name) const {
  const CompiledProgram& im = impl_->program;
  if (!im.memory.allocated()) throw std::logic_error("buffer before prepare_with_inputs");
  const auto v = im.graph.find_value(name);
  if (!v) throw std::invalid_argument("graph " + im.graph.name() + " has no value '" + name + "'");
  // A value the plan keeps channels-last lives in its NHWC buffer; its NCHW one is written only where a reader
  // needs it, which a graph output's check always does.
  if (im.memory.nhwc_pointer(plan, *v) && !im.graph.is_output(*v)) {
    throw std::invalid_argument("'" + name + "' is kept channels-last (NHWC) in the " + im.plan(plan).name +
                                " plan; only graph outputs and values in the graph's own layout can be read");
  }
  return im.pointer(plan, *v);
}

namespace {

// The value an output binding names, checked: a graph output the plan writes, to a 256-byte aligned pointer, and
// not one of the parts a horizontal GEMM writes at equal spacing in its own buffer. An output that is a view is
// bound through the value whose buffer it reads (MemoryPlan::bind): the step writing that one writes the caller's.
ValueId bindable_output(const CompiledProgram& im, PlanId plan, const std::string& name, const void* ptr) {
  const CompiledPlan& ps = im.plan(plan);
  const auto v = im.graph.find_value(name);
  if (!v || !im.graph.is_output(*v) || !im.memory.writes(plan, im.memory.storage(plan, *v))) {
    throw std::invalid_argument("'" + name + "' is not a graph output that the " + ps.name + " plan of " +
                                im.graph.name() + " writes");
  }
  if (!ptr || reinterpret_cast<std::uintptr_t>(ptr) % 256 != 0) {
    throw std::invalid_argument("output '" + name + "': " + (ptr ? "a device pointer not aligned to 256 bytes"
                                                                   : "a null device pointer"));
  }
  for (const Step& s : ps.steps) {
    if (!s.call() || s.call()->call().outputs.size() < 2) continue;
    const auto& parts = s.call()->call().outputs;
    if (std::find(parts.begin(), parts.end(), im.memory.storage(plan, *v)) != parts.end()) {
      throw std::invalid_argument("output '" + name + "' is one of the " + std::to_string(parts.size()) +
                                  " parts that " + s.call()->call().name +
                                  " writes at equal spacing in the plan's own buffer; it cannot be bound");
    }
  }
  return *v;
}

}  // namespace

void Executor::bind_outputs(PlanId plan, const std::map<std::string, void*>& outputs) {
  CompiledProgram& im = impl_->program;
  if (!im.memory.allocated()) throw std::logic_error("bind_outputs before prepare_with_inputs");
  std::map<ValueId, void*> bound;
  for (const auto& [name, ptr] : outputs) bound[bindable_output(im, plan, name, ptr)] = ptr;
  // Two outputs in overlapping memory would write over each other.
  std::vector<std::pair<const char*, ValueId>> spans;
  for (const auto& [v, ptr] : bound) spans.push_back({static_cast<const char*>(ptr), v});
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) {
    const auto& [start, v] = spans[i - 1];
    if (spans[i].first < start + im.graph.value_type(v).bytes()) {
      throw std::invalid_argument("outputs '" + im.graph.value_name(v) + "' and '" +
                                  im.graph.value_name(spans[i].second) + "' overlap in the caller's memory");
    }
  }
  im.memory.bind(plan, bound);
}

}  // namespace fx::gpu
