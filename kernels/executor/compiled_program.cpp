// The compiled program: code generation and NVRTC compile of both plans, their memory plan (computed before any
// allocation), seeded inputs, and single launches with their fault attribution.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "core/fusion/kernel_names.h"
#include "kernels/codegen/emit.h"
#include "kernels/codegen/test_fault.h"
#include "kernels/common/cuda_call.h"
#include "kernels/common/event_timing.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/executor/executor_internal.h"
#include "kernels/executor/sort_step.h"
#include "kernels/profile/nvtx_range.h"

namespace fx::gpu {

namespace {

// The operand of an op that must be positive for a finite result: log, sqrt, rsqrt and reciprocal's argument,
// pow's base, div's divisor, batchnorm's variance.
std::optional<std::size_t> positive_operand(OpId op) {
  switch (op) {
    case OpId::log:
    case OpId::sqrt:
    case OpId::rsqrt:
    case OpId::reciprocal:
    case OpId::pow: return 0;
    case OpId::div: return 1;
    case OpId::batchnorm: return 2;
    default: return std::nullopt;
  }
}

// Inputs that feed an operand positive_operand names get positive values, so a graph that is finite for
// sensible inputs stays finite (NaN never passes verification).
bool needs_positive(const Graph& g, ValueId v) {
  for (NodeId c : g.consumers(v)) {
    const Node& n = g.node(c);
    const auto k = positive_operand(n.op_id());
    if (k && *k < n.inputs.size() && n.inputs[*k].value == v) return true;
  }
  return false;
}

std::string fill_kernel_name(DType t) { return "fx_fill_" + std::string(dtype_name(t)); }

std::string fill_source(DType t) {
  using namespace codegen;
  const std::string name = fill_kernel_name(t);
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
void apply_test_fault_switch(CompiledPlan& ps) {
  std::vector<std::pair<std::string, GeneratedKernel*>> generated;
  for (Step& s : ps.steps) {
    if (s.generated()) generated.emplace_back(s.group, &s.kernel);
  }
  if (auto note = codegen::apply_test_fault(generated)) {
    ps.notes.push_back(*note);
    for (auto& [group, k] : generated) k->alternatives.clear();  // the fault is in the default layouts only
  }
}

// The steps of a group of elementwise, reduction and layout nodes: generated kernels, compiled later.
void append_generated_steps(const Graph& graph, CompiledPlan& ps, const Group& group, const std::vector<NodeId>& nodes,
                            const std::string& kernel_name) {
  if (std::string why = unsupported_reason(graph, nodes); !why.empty()) {
    throw std::invalid_argument("cannot run group " + group.id + ": " + why);
  }
  GroupCode code = generate_group(graph, nodes, group.io.outputs, kernel_name);
  if (!code.note.empty()) ps.notes.push_back(group.id + ": " + code.note);
  for (GeneratedKernel& k : code.kernels) {
    Step s = step_of_group(group);
    s.kernel = std::move(k);
    ps.steps.push_back(std::move(s));
  }
}

}  // namespace

std::string views_note(const std::vector<std::string>& names) {
  std::string list;
  const std::size_t shown = std::min<std::size_t>(names.size(), 4);
  for (std::size_t i = 0; i < shown; ++i) list += (i ? ", " : "") + names[i];
  if (names.size() > shown) list += " and " + std::to_string(names.size() - shown) + " more";
  return std::to_string(names.size()) + (names.size() == 1 ? " view launches" : " views launch") +
         " nothing (" + list + "): a reshape of a row-major tensor reads its input's buffer as it is, so no kernel, "
         "no time and no HBM traffic";
}

Step step_of_group(const Group& group, StepAction action) {
  Step s;
  s.group = group.id;
  s.group_predicted_ms = group.cost.time_s * 1e3;
  s.group_predicted_bytes = group.cost.bytes_read + group.cost.bytes_written;
  s.action = std::move(action);
  return s;
}

CompiledProgram::~CompiledProgram() {
  release();
  if (stream) cudaStreamDestroy(stream);
}

namespace {

LoadedKernel load_cubin(const Cubin& cubin, const std::string& name) {
  cudaLibrary_t lib = nullptr;
  FX_CUDA_CALL(cudaLibraryLoadData(&lib, cubin->data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  cudaKernel_t fn = nullptr;
  try {
    FX_CUDA_CALL(cudaLibraryGetKernel(&fn, lib, name.c_str()));
  } catch (...) {
    cudaLibraryUnload(lib);
    throw;
  }
  return LoadedKernel(lib, fn);
}

// A generated step's kernel, and its other layouts where the run tunes or forces one.
void add_generated_loads(Step& s, GeneratedLaunch& g, bool layouts, std::vector<KernelLoad>& batch) {
  batch.push_back({{s.kernel.source, s.kernel.name}, &g.loaded});
  if (!layouts) return;
  g.alternatives.reserve(g.alternatives.size() + s.kernel.alternatives.size());  // `into` points into it
  for (KernelLayout& alt : s.kernel.alternatives) {
    GeneratedLaunch::Layout& l = g.alternatives.emplace_back();
    l.layout = std::move(alt);
    batch.push_back({{l.layout.source, s.kernel.name}, &l.loaded});
  }
  s.kernel.alternatives.clear();  // moved into the step
}

}  // namespace

LoadedKernel CompiledProgram::load(const std::string& source, const std::string& name) {
  return load_cubin(compiler.compile(source, name, device.arch()), name);
}

void CompiledProgram::load_all(const std::vector<KernelLoad>& batch, const CompileProgress& told) {
  std::vector<CompileRequest> requests;
  requests.reserve(batch.size());
  for (const KernelLoad& k : batch) requests.push_back(k.request);
  const std::vector<Cubin> cubins = compiler.compile_all(requests, device.arch(), told);
  for (std::size_t i = 0; i < batch.size(); ++i) *batch[i].into = load_cubin(cubins[i], batch[i].request.kernel_name);
}

void CompiledProgram::compile(PlanId p, const Plan& plan) {
  CompiledPlan& ps = this->plan(p);
  ps.name = std::string(plan_name(p));
  ps.predicted_ms = plan.predicted_time_s() * 1e3;
  ps.bytes = plan.bytes_moved();
  std::vector<std::string> views;
  for (int index = 0; index < static_cast<int>(plan.groups().size()); ++index) {
    const Group& group = plan.groups()[static_cast<std::size_t>(index)];
    if (group.eliminated()) continue;
    if (group.is_view()) {  // no kernel: its value is its source's buffer (memory_plan.h)
      ps.views[graph.value_of(group.nodes.front())] = group.view_of;
      views.push_back(graph.node(group.nodes.front()).name);
      continue;
    }
    if (!group.copy_reason.empty()) ps.notes.push_back(group.id + ": a copy, not a view: " + group.copy_reason);
    std::vector<NodeId> nodes = group.nodes;
    nodes.insert(nodes.end(), group.recomputed.begin(), group.recomputed.end());
    if (append_sort_step(*this, p, group, nodes, kernel_stem(plan, index))) continue;  // CUB, not generated code
    if (has_contraction(graph, nodes)) {  // cuBLASLt/cuDNN calls, then generated kernels for what is left
      append_contraction_steps(*this, p, group, nodes, kernel_stem(plan, index));
    } else {
      append_generated_steps(graph, ps, group, nodes, generated_kernel_name(plan, index));
    }
  }
  if (!views.empty()) ps.notes.push_back(views_note(views));
  if (p == PlanId::fused) apply_test_fault_switch(ps);
}

// NVRTC compiles the kernels both plans generated in one batch, several at once: each generated step's kernel
// (and, when the run tunes or forces a layout, its other layouts), the channels-last conversions of
// convolutions and the inputs' fill kernels.
void CompiledProgram::load_kernels() {
  const bool layouts = options.autotune || options.force_layout >= 1;
  std::vector<KernelLoad> batch;
  for (CompiledPlan& ps : plans) {
    for (Step& s : ps.steps) {
      if (GeneratedLaunch* g = s.generated()) add_generated_loads(s, *g, layouts, batch);
      if (LibraryStep* call = s.call()) call->add_nhwc_loads(batch);
    }
  }
  // The seeded inputs' fill kernels (fill_inputs), one per input dtype.
  for (ValueId v = 0; v < static_cast<ValueId>(graph.inputs().size()); ++v) {
    const DType t = graph.value_type(v).dtype;
    if (fill_kernels.count(t)) continue;
    batch.push_back({{fill_source(t), fill_kernel_name(t)}, &fill_kernels[t]});
  }
  const std::string what = std::to_string(batch.size()) + " kernels (both plans, each in the layouts tuning times)";
  const std::size_t threads = std::min(batch.size(), NvrtcCompiler::max_threads());
  progress("compile", 0.0, what + (threads > 1 ? ", up to " + std::to_string(threads) + " at once" : ""));
  load_all(batch, [&](std::size_t done, std::size_t total) {
    progress("compile", 0.1 * static_cast<double>(done) / static_cast<double>(total),
             what + ": " + std::to_string(done) + " of the " + std::to_string(total) +
                 " not in memory loaded (from the disk cache, or compiled)");
  });
}

void CompiledProgram::plan_memory() {
  std::array<std::vector<std::vector<ValueId>>, 2> outputs;
  std::array<std::map<ValueId, ValueId>, 2> views;
  for (PlanId p : kPlanIds) {
    for (const Step& s : plan(p).steps) outputs[plan_index(p)].push_back(s.kernel.outputs);
    views[plan_index(p)] = plan(p).views;
  }
  memory.plan(graph, outputs, options.timing.placement, sort_workspace_bytes, views);
}

// Checks free memory for everything the run allocates (required_bytes), then allocates the arena. The library
// calls' buffers and workspaces, the values' NHWC copies and the cache-flush buffer come after it.
void CompiledProgram::allocate() {
  if (memory.allocated()) return;
  std::size_t free_b = 0, total_b = 0;
  FX_CUDA_CALL(cudaMemGetInfo(&free_b, &total_b));
  const std::size_t headroom = kMemoryHeadroomBytes;
  const auto needed = static_cast<std::size_t>(required_bytes());
  if (needed + headroom > free_b) {
    const std::size_t library = needed - memory.arena_bytes(), gaps = memory.placement_gaps();
    throw std::runtime_error("the run needs " + format_bytes(static_cast<double>(needed)) + " of device memory" +
                             (library ? " (" + format_bytes(static_cast<double>(library)) +
                                            " of it cuBLASLt/cuDNN workspaces, prepared weights and scratch, NHWC copies of values" +
                                            (options.timing.cold_l2 ? ", and the cache-flush buffer" : "") + ")"
                                      : std::string()) +
                             (gaps ? " (" + format_bytes(static_cast<double>(gaps)) + " of it the gaps of --placement " +
                                         std::to_string(options.timing.placement) + ")"
                                   : std::string()) +
                             " (+" +
                             format_bytes(static_cast<double>(headroom)) + " headroom) but only " +
                             format_bytes(static_cast<double>(free_b)) + " of " + format_bytes(static_cast<double>(total_b)) +
                             " is free on " + device.name + "; nothing was allocated");
  }
  memory.allocate();
}

void CompiledProgram::release() {
  memory.release();
  release_library_steps(*this);
}

void CompiledProgram::fill_inputs(const std::map<ValueId, const void*>& given) {
  for (ValueId v = 0; v < static_cast<ValueId>(graph.inputs().size()); ++v) {
    const TensorType& t = graph.value_type(v);
    if (auto it = given.find(v); it != given.end()) {
      FX_CUDA_CALL(cudaMemcpyAsync(pointer(PlanId::unfused, v), it->second, static_cast<std::size_t>(t.bytes()),
                                   cudaMemcpyDeviceToDevice, stream));
      continue;
    }
    if (!fill_kernels.count(t.dtype)) fill_kernels[t.dtype] = load(fill_source(t.dtype), fill_kernel_name(t.dtype));
    const bool positive = needs_positive(graph, v);
    float lo = positive ? 0.5f : -2.0f, hi = 2.0f;
    if (!is_floating(t.dtype)) lo = 1.0f, hi = 16.0f;  // integers: never 0, so they can divide
    void* out = pointer(PlanId::unfused, v);
    long long n = t.numel();
    unsigned long long seed = options.seed * 1000003ull + static_cast<unsigned long long>(v);
    void* args[] = {&out, &n, &seed, &lo, &hi};
    const long long blocks = std::min<long long>((n + 255) / 256, 65535);
    FX_CUDA_CALL(cudaLaunchKernel(reinterpret_cast<const void*>(fill_kernels[t.dtype].function()),
                                  dim3(static_cast<unsigned>(blocks)), dim3(256), args, 0, stream));
  }
  prepare_library_steps(*this);  // stacked and folded weights are made from the inputs just written
  memory.allocate_nhwc_buffers(graph);
}

void CompiledProgram::launch(PlanId p, std::size_t s) {
  const Step& step = plan(p).steps[s];
  LaunchInfo info{p, static_cast<int>(s), step.kernel.name, step.group, plan_index(p) * 1'000'000u + s};
  if (options.before_launch) options.before_launch(info);
  const NvtxRange group_range(step.group), kernel_range(step.kernel.name);  // profilers: kernels by group
  step.launch(buffers(p), stream);
  launched(p, s);
  if (options.after_launch) options.after_launch(info);
}

// Recorded only once the launch call returned: a launch call that fails with a sticky error reports an
// earlier step's fault, which the previous record names.
void CompiledProgram::launched(PlanId p, std::size_t s) {
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
void CompiledProgram::begin_phase(const std::string& phase, bool sync_each) {
  fault_site = FaultSite{};
  fault_site.phase = phase;
  sync_each_step = sync_each;
}

void CompiledProgram::rest_for(double ms) {
  if (!(ms > 0)) return;
  FX_CUDA_CALL(cudaStreamSynchronize(stream));
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

void CompiledProgram::launch_all(PlanId p) {
  const NvtxRange plan_range(plan(p).name);
  for (std::size_t s = 0; s < plan(p).steps.size(); ++s) launch(p, s);
}

std::int64_t CompiledProgram::required_bytes() const {
  return static_cast<std::int64_t>(memory.arena_bytes()) + library_step_bytes(*this) + memory.nhwc_bytes(graph) +
         (options.timing.cold_l2 ? static_cast<std::int64_t>(kColdL2Bytes) : 0);
}

}  // namespace fx::gpu
