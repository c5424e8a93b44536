// Contraction groups as executor steps: cuBLASLt/cuDNN calls planned by contraction_plan.cpp, their one-time
// preparation (stacked weights for horizontal GEMMs, batchnorm folded into conv weights), and their launches.
#include "kernels/executor/contraction_step.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <utility>

#include "kernels/codegen/codegen.h"
#include "kernels/common/cuda_call.h"
#include "kernels/contraction/batchnorm_fold.h"
#include "kernels/executor/executor_internal.h"

namespace fx::gpu {
namespace {

std::vector<float> download_f32(const Executor::Impl& im, ValueId v) {
  const TensorType& t = im.graph.value_type(v);
  if (t.dtype != DType::f32) throw std::logic_error("folding reads f32 parameters only");
  std::vector<float> host(static_cast<std::size_t>(t.numel()));
  FX_CUDA_CALL(cudaMemcpy(host.data(), im.pointer(PlanId::unfused, v), host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return host;
}

contraction_detail::DeviceMemory upload(const std::vector<float>& host) {
  contraction_detail::DeviceMemory mem(host.size() * sizeof(float));
  FX_CUDA_CALL(cudaMemcpy(mem.get(), host.data(), mem.bytes(), cudaMemcpyHostToDevice));
  return mem;
}

std::int64_t bytes_of(const Graph& g, const std::vector<ValueId>& values) {
  std::int64_t b = 0;
  for (ValueId v : values) b += g.value_type(v).bytes();
  return b;
}

ContractionRuntime& runtime(Executor::Impl& im) {
  if (!im.contraction) im.contraction = std::make_shared<ContractionRuntime>();
  return *im.contraction;
}

// Bytes of the NHWC copies of a convolution's x and y (the channels-last way's scratch).
std::pair<std::size_t, std::size_t> nhwc_scratch_bytes(const Conv2dProblem& p) {
  const Conv2dOutputShape out = conv2d_output_shape(p);
  const auto element = static_cast<std::size_t>(dtype_size(p.type));
  return {static_cast<std::size_t>(p.n * p.c * p.h * p.w) * element,
          static_cast<std::size_t>(out.n * out.k * out.p * out.q) * element};
}

}  // namespace

LibraryStep::~LibraryStep() {
  for (const auto& libs : nhwc_lib_) {
    for (cudaLibrary_t lib : libs) cudaLibraryUnload(lib);
  }
}

std::string LibraryStep::describe(const Executor::Impl& im, PlanId plan, CallPart part) const {
  if (part == CallPart::to_nhwc) return "x converted NCHW -> NHWC for cuDNN's channels-last convolution";
  if (part == CallPart::to_nchw) return "y converted NHWC -> NCHW after cuDNN's channels-last convolution";
  if (call_.kind != LibraryCallKind::conv2d && im.contraction && im.contraction->matmul) {
    const MatmulProblem p = gemm_problem(im, plan);
    const std::string choice = im.contraction->matmul->algorithm_choice(p);
    return choice.empty() ? call_.description : call_.description + "; " + choice;
  }
  if (call_.kind != LibraryCallKind::conv2d || !im.contraction || !im.contraction->conv) return call_.description;
  const bool nhwc = part == CallPart::conv_nhwc;
  const std::string text = !nhwc          ? call_.description
                           : plan_buffers_ ? call_.description + "; NHWC (x and y in the plan's NHWC buffers, converted only for readers that need NCHW)"
                                           : call_.description + "; NHWC (x and y converted by the steps around it)";
  const std::string algo = im.contraction->conv->algorithm(nhwc ? nhwc_problem_ : call_.conv);
  return algo.empty() ? text : text + "; algorithm " + algo;
}

bool LibraryStep::offers_nhwc(const Graph& g) const {
  return call_.kind == LibraryCallKind::conv2d && call_.conv.groups == 1 && !call_.conv.nhwc && g.is_input(call_.w);
}

void LibraryStep::load_nhwc(Executor::Impl& im, int group_index) {
  if (!offers_nhwc(im.graph) || !nhwc_fn_[0].empty()) return;
  nhwc_problem_ = call_.conv;
  nhwc_problem_.nhwc = true;
  const Conv2dProblem& p = call_.conv;
  const Conv2dOutputShape out = conv2d_output_shape(p);
  const std::string& conv = im.graph.node(call_.nodes.front()).name;
  nhwc_kernels_[0] = generate_layout_transpose(p.type, p.n, p.c, p.h * p.w, group_index, conv + "_x_to_nhwc");
  nhwc_kernels_[1] = generate_layout_transpose(p.type, out.n, out.p * out.q, out.k, group_index, conv + "_y_to_nchw");
  for (int i = 0; i < 2; ++i) {
    const GeneratedKernel& k = nhwc_kernels_[i];
    std::vector<const std::string*> sources = {&k.source};
    for (const KernelLayout& alt : k.alternatives) sources.push_back(&alt.source);
    for (const std::string* source : sources) {
      auto [lib, fn] = im.load(*source, k.name);
      nhwc_lib_[i].push_back(lib);
      nhwc_fn_[i].push_back(fn);
    }
  }
}

std::size_t LibraryStep::conversion_layouts() const {
  return 1 + std::max(nhwc_kernels_[0].alternatives.size(), nhwc_kernels_[1].alternatives.size());
}

namespace {

// Layout j of a conversion (0: its installed one; a conversion with fewer layouts runs its last).
const KernelLayout* alternative(const GeneratedKernel& k, std::size_t j) {
  j = std::min(j, k.alternatives.size());
  return j == 0 ? nullptr : &k.alternatives[j - 1];
}

const std::string& layout_description(const GeneratedKernel& k, std::size_t j) {
  const KernelLayout* alt = alternative(k, j);
  return alt ? alt->description : k.layout;
}

}  // namespace

std::string LibraryStep::conversion_layout_name(std::size_t j) const {
  const std::string &x = layout_description(nhwc_kernels_[0], j), &y = layout_description(nhwc_kernels_[1], j);
  return x == y ? "both conversions in " + x : "x's conversion in " + x + ", y's in " + y;
}

void LibraryStep::install_conversion_layout(std::size_t j) {
  for (int i = 0; i < 2; ++i) {
    GeneratedKernel& k = nhwc_kernels_[i];
    const std::size_t own = std::min(j, k.alternatives.size());
    if (own == 0) continue;
    swap_layout(k, k.alternatives[own - 1]);
    std::swap(nhwc_lib_[i][0], nhwc_lib_[i][own]);
    std::swap(nhwc_fn_[i][0], nhwc_fn_[i][own]);
  }
}

void LibraryStep::drop_nhwc() {
  nhwc_dropped_ = true;
  free_nhwc();
}

void LibraryStep::use_plan_nhwc_buffers() {
  plan_buffers_ = true;
  x_nhwc_ = contraction_detail::DeviceMemory();
  y_nhwc_ = contraction_detail::DeviceMemory();
}

void LibraryStep::free_nhwc() {
  weights_nhwc_ = contraction_detail::DeviceMemory();
  x_nhwc_ = contraction_detail::DeviceMemory();
  y_nhwc_ = contraction_detail::DeviceMemory();
}

const GeneratedKernel& LibraryStep::conversion(CallPart part) const {
  if (part != CallPart::to_nhwc && part != CallPart::to_nchw) throw std::logic_error("not a conversion part");
  return nhwc_kernels_[part == CallPart::to_nhwc ? 0 : 1];
}

cudaKernel_t LibraryStep::conversion_function(CallPart part) const {
  conversion(part);  // throws for a part that is not a conversion
  const auto& fns = nhwc_fn_[part == CallPart::to_nhwc ? 0 : 1];
  if (fns.empty()) throw std::logic_error(call_.name + ": conversions not compiled");
  return fns[0];
}

void LibraryStep::describe_conversion(CallPart part, Step& step) const {
  const GeneratedKernel& k = conversion(part);
  step.kernel.name = k.name;
  step.kernel.kind = k.kind;
  step.kernel.layout = k.layout;
  step.kernel.block = k.block;
  step.kernel.grid = k.grid;
  step.layout_choice = k.layout + ": chosen with the convolution's layout (its line gives the times)";
}

std::pair<void*, void*> LibraryStep::nhwc_x_y(const Executor::Impl& im, PlanId plan) const {
  if (!plan_buffers_) return {x_nhwc_.get(), y_nhwc_.get()};
  return {im.nhwc_pointer(plan, call_.x), im.nhwc_pointer(plan, call_.outputs[0])};
}

std::int64_t LibraryStep::prepared_bytes(const Graph& g) const {
  if (call_.kind == LibraryCallKind::horizontal_matmul) {
    return g.value_type(call_.b[0]).bytes() * static_cast<std::int64_t>(call_.b.size());
  }
  if (call_.kind != LibraryCallKind::conv2d) return 0;
  const Conv2dProblem& p = call_.conv;
  const std::int64_t weight_bytes = g.value_type(call_.w).bytes();
  std::int64_t bytes = 0;
  if (call_.prepared_bias()) bytes += p.k * static_cast<std::int64_t>(sizeof(float));
  if (call_.folded_batchnorm) bytes += weight_bytes;
  if (!nhwc_fn_[0].empty() && !nhwc_dropped_) {
    const auto [x, y] = nhwc_scratch_bytes(p);
    bytes += weight_bytes + (plan_buffers_ ? 0 : static_cast<std::int64_t>(x + y));
  }
  return bytes;
}

void LibraryStep::release_prepared() {
  weights_ = contraction_detail::DeviceMemory();
  bias_ = contraction_detail::DeviceMemory();
  free_nhwc();
}

void LibraryStep::prepare(Executor::Impl& im) {
  release_prepared();  // a second preparation (the profile pass) replaces the buffers, never holds both
  const Graph& g = im.graph;
  if (call_.kind == LibraryCallKind::horizontal_matmul) {
    // The weights stacked [P, K, N] once, so one strided-batched GEMM reads part i at i * K * N.
    const auto part_bytes = static_cast<std::size_t>(g.value_type(call_.b[0]).bytes());
    weights_ = contraction_detail::DeviceMemory(part_bytes * call_.b.size());
    for (std::size_t i = 0; i < call_.b.size(); ++i) {
      FX_CUDA_CALL(cudaMemcpyAsync(static_cast<char*>(weights_.get()) + i * part_bytes, im.pointer(PlanId::unfused, call_.b[i]),
                                   part_bytes, cudaMemcpyDeviceToDevice, im.stream));
    }
    return;
  }
  if (call_.kind != LibraryCallKind::conv2d) return;
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));  // the seeded inputs are written on the executor's stream
  if (call_.prepared_bias()) {
    std::vector<float> bias(static_cast<std::size_t>(call_.conv.k), 0.0f);
    for (ValueId term : call_.bias_terms) {
      const std::vector<float> t = download_f32(im, term);
      for (std::size_t i = 0; i < bias.size(); ++i) bias[i] += t[i];
    }
    if (call_.folded_batchnorm) {
      const Node& bn = g.node(*call_.folded_batchnorm);
      const std::vector<float> mean = download_f32(im, bn.inputs[1].value),
                               var = download_f32(im, bn.inputs[2].value),
                               gamma = download_f32(im, bn.inputs[3].value),
                               beta = download_f32(im, bn.inputs[4].value);
      const FoldedConv folded = fold_batchnorm(download_f32(im, call_.w), call_.conv.k, bias,
                                               BatchNormParams{mean, var, gamma, beta, bn.attrs.get_number("eps")});
      weights_ = upload(folded.weight);
      bias = folded.bias;
    }
    bias_ = upload(bias);
  }
  if (!nhwc_fn_[0].empty() && !nhwc_dropped_) prepare_nhwc(im);
}

// The weights the NCHW call reads (folded or the graph's), permuted [K, C, R, S] -> [K, R, S, C] on the host,
// and scratch for the NHWC copies of x and y.
void LibraryStep::prepare_nhwc(Executor::Impl& im) {
  const Conv2dProblem& p = call_.conv;
  const auto element = static_cast<std::size_t>(dtype_size(p.type));
  const auto k = static_cast<std::size_t>(p.k), c = static_cast<std::size_t>(p.c),
             rs = static_cast<std::size_t>(p.r * p.s);
  std::vector<char> oihw(k * c * rs * element), ohwi(oihw.size());
  const void* w = call_.folded_batchnorm ? weights_.get() : im.pointer(PlanId::unfused, call_.w);
  FX_CUDA_CALL(cudaMemcpy(oihw.data(), w, oihw.size(), cudaMemcpyDeviceToHost));
  for (std::size_t o = 0; o < k; ++o) {
    for (std::size_t i = 0; i < c; ++i) {
      for (std::size_t f = 0; f < rs; ++f) {
        std::copy_n(&oihw[((o * c + i) * rs + f) * element], element, &ohwi[((o * rs + f) * c + i) * element]);
      }
    }
  }
  weights_nhwc_ = contraction_detail::DeviceMemory(ohwi.size());
  FX_CUDA_CALL(cudaMemcpy(weights_nhwc_.get(), ohwi.data(), ohwi.size(), cudaMemcpyHostToDevice));
  if (plan_buffers_) return;
  const auto [x_bytes, y_bytes] = nhwc_scratch_bytes(p);
  x_nhwc_ = contraction_detail::DeviceMemory(x_bytes);
  y_nhwc_ = contraction_detail::DeviceMemory(y_bytes);
}

void LibraryStep::launch(Executor::Impl& im, PlanId plan, CallPart part, std::size_t layout) const {
  ContractionRuntime& rt = runtime(im);
  if (part != CallPart::whole && !nhwc_ready()) throw std::logic_error(call_.name + ": NHWC launched before preparation");
  if (part == CallPart::to_nhwc || part == CallPart::to_nchw) {
    const int i = part == CallPart::to_nhwc ? 0 : 1;
    const auto [x, y] = nhwc_x_y(im, plan);
    void* src = i == 0 ? im.pointer(plan, call_.x) : y;
    void* dst = i == 0 ? x : im.pointer(plan, call_.outputs[0]);
    if (!src || !dst) throw std::logic_error(call_.name + ": a conversion launched without its NHWC buffer");
    void* args[] = {&src, &dst};
    const GeneratedKernel& k = nhwc_kernels_[i];
    const std::size_t j = std::min(layout, k.alternatives.size());
    const KernelLayout* alt = alternative(k, j);
    FX_CUDA_CALL(cudaLaunchKernel(reinterpret_cast<const void*>(nhwc_fn_[i][j]),
                                  dim3(static_cast<unsigned>(alt ? alt->grid : k.grid)),
                                  dim3(static_cast<unsigned>(alt ? alt->block : k.block)), args, 0, im.stream));
    return;
  }
  if (call_.kind == LibraryCallKind::conv2d) {
    if (!rt.conv) rt.conv = std::make_unique<Conv2d>();
    const bool nhwc = part == CallPart::conv_nhwc;
    const void* w = nhwc ? weights_nhwc_.get() : call_.folded_batchnorm ? weights_.get() : im.pointer(plan, call_.w);
    const void* bias = nullptr;
    if (call_.conv.epilogue != ConvEpilogue::none) {
      bias = call_.prepared_bias() ? bias_.get() : im.pointer(plan, call_.bias_terms[0]);
    }
    if (!w || (call_.prepared_bias() && !bias)) throw std::logic_error(call_.name + " launched before preparation");
    if (nhwc) {
      const auto [x, y] = nhwc_x_y(im, plan);
      if (!x || !y) throw std::logic_error(call_.name + ": NHWC launched without its NHWC buffers");
      rt.conv->run(nhwc_problem_, x, w, bias, y, im.stream);
    } else {
      rt.conv->run(call_.conv, im.pointer(plan, call_.x), w, bias, im.pointer(plan, call_.outputs[0]), im.stream);
    }
    return;
  }
  if (!rt.matmul) rt.matmul = std::make_unique<Matmul>();
  const GemmOperands o = gemm_operands(im, plan);
  rt.matmul->run(gemm_problem(im, plan), o.a, o.b, o.bias, o.c, im.stream);
}

LibraryStep::GemmOperands LibraryStep::gemm_operands(const Executor::Impl& im, PlanId plan) const {
  if (!is_gemm()) throw std::logic_error(call_.name + " is not a GEMM");
  const void* b = call_.kind == LibraryCallKind::matmul ? im.pointer(plan, call_.b[0]) : weights_.get();
  if (!b) throw std::logic_error(call_.name + " launched before preparation");
  return {im.pointer(plan, call_.a), b, call_.bias ? im.pointer(plan, *call_.bias) : nullptr,
          im.pointer(plan, call_.outputs[0])};
}

MatmulProblem LibraryStep::gemm_problem(const Executor::Impl& im, PlanId plan) const {
  return call_.kind == LibraryCallKind::matmul ? call_.matmul : horizontal_problem(im, plan);
}

std::size_t LibraryStep::gemm_finalists(const Executor::Impl& im, PlanId plan) const {
  if (!is_gemm() || !im.contraction || !im.contraction->matmul) return 0;
  const GemmOperands o = gemm_operands(im, plan);
  return im.contraction->matmul->finalist_count(gemm_problem(im, plan), o.a, o.b, o.bias, o.c);
}

Matmul& LibraryStep::searched_matmul(const Executor::Impl& im) const {
  if (!im.contraction || !im.contraction->matmul) throw std::logic_error(call_.name + ": no finalists before its first launch");
  return *im.contraction->matmul;
}

void LibraryStep::launch_finalist(Executor::Impl& im, PlanId plan, std::size_t i) const {
  const GemmOperands o = gemm_operands(im, plan);
  searched_matmul(im).run_finalist(i, gemm_problem(im, plan), o.a, o.b, o.bias, o.c, im.stream);
}

void LibraryStep::choose_finalist(Executor::Impl& im, PlanId plan, std::size_t i, const std::vector<double>& ms,
                                  const std::string& timed_as) const {
  const GemmOperands o = gemm_operands(im, plan);
  searched_matmul(im).choose_finalist(i, gemm_problem(im, plan), o.a, o.b, o.bias, o.c, ms, timed_as);
}

// Horizontal: the part outputs sit at equal spacing in the arena (plan_memory places one step's outputs back to
// back), which becomes the output batch stride; consumers then read each part in place.
MatmulProblem LibraryStep::horizontal_problem(const Executor::Impl& im, PlanId plan) const {
  const char* c0 = static_cast<const char*>(im.pointer(plan, call_.outputs[0]));
  const std::int64_t element = dtype_size(call_.matmul.c_type);
  const std::ptrdiff_t spacing =
      call_.outputs.size() > 1 ? static_cast<const char*>(im.pointer(plan, call_.outputs[1])) - c0 : 0;
  for (std::size_t i = 0; i < call_.outputs.size(); ++i) {
    if (static_cast<const char*>(im.pointer(plan, call_.outputs[i])) - c0 != spacing * static_cast<std::ptrdiff_t>(i) ||
        spacing % element != 0) {
      throw std::logic_error(call_.name + ": part outputs are not equally spaced in the arena");
    }
  }
  MatmulProblem p = call_.matmul;
  p.batch_stride_c = spacing / element;
  return p;
}

void name_step_after(const Graph& g, const LibraryCall& call, Step& s) {
  s.kernel.name = call.name;
  s.kernel.nodes = call.nodes;
  s.kernel.inputs = call.inputs;
  s.kernel.outputs = call.outputs;
  s.kernel.bytes_moved = bytes_of(g, call.inputs) + bytes_of(g, call.outputs);
}

void append_contraction_steps(Executor::Impl& im, PlanId p, const Group& group, const std::vector<NodeId>& nodes,
                              int group_index) {
  const Graph& g = im.graph;
  PlanSteps& ps = im.plan(p);
  im.tolerances = tf32_output_tolerances(g);
  ContractionGroupPlan cp = plan_contraction_group(g, nodes, group.io.outputs, group_index);
  auto base_step = [&] {
    Step s;
    s.group = group.id;
    s.group_predicted_ms = group.cost.time_s * 1e3;
    s.group_predicted_bytes = group.cost.bytes_read + group.cost.bytes_written;
    return s;
  };
  std::string launches;
  for (LibraryCall& call : cp.calls) {
    Step s = base_step();
    name_step_after(g, call, s);
    launches += (launches.empty() ? "" : " + ") + call.name + " (" + call.description + ")";
    s.call = std::make_shared<LibraryStep>(std::move(call));
    // The channels-last way is compiled only when the run times layouts or forces it.
    const int forced = im.options.force_layout;
    if (((im.options.autotune && forced < 0) || forced >= 1) && s.call->offers_nhwc(g)) {
      s.call->load_nhwc(im, group_index);
    }
    ps.steps.push_back(std::move(s));
  }
  std::size_t generated = 0;
  if (!cp.rest.empty()) {
    GroupCode code = generate_group(g, cp.rest, cp.rest_outputs, group_index);
    if (!code.note.empty()) cp.notes.push_back(code.note);
    for (GeneratedKernel& k : code.kernels) {
      Step s = base_step();
      s.kernel = std::move(k);
      ps.steps.push_back(std::move(s));
      ++generated;
    }
  }
  const std::size_t total = cp.calls.size() + generated;
  if (total > 1) {
    std::string rest_nodes;
    for (NodeId n : cp.rest) rest_nodes += " " + g.node(n).name;
    launches += generated ? " + " + std::to_string(generated) + " generated kernel(s) for" + rest_nodes : "";
    ps.notes.push_back(group.id + ": " + std::to_string(total) + " launches: " + launches);
  }
  for (const std::string& n : cp.notes) ps.notes.push_back(group.id + ": " + n);
  const std::string counting =
      "kernel counts count each cuBLASLt/cuDNN call as one launch; a call may run more than one kernel (a split-K "
      "reduction, cuDNN's FFT tiling): the CUPTI kernel list (fusion-cli profile) shows them all";
  if (std::find(ps.notes.begin(), ps.notes.end(), counting) == ps.notes.end()) ps.notes.push_back(counting);
}

namespace {

// Calls f once per library call of the plans (a convolution run channels-last is three steps sharing one call).
template <class Im, class F>
void for_each_library_step(Im& im, F&& f) {
  std::set<const LibraryStep*> done;
  for (auto& ps : im.plans) {
    for (auto& s : ps.steps) {
      if (s.call && done.insert(s.call.get()).second) f(*s.call);
    }
  }
}

}  // namespace

void prepare_library_steps(Executor::Impl& im) {
  for_each_library_step(im, [&](LibraryStep& step) {
    // Handles and workspaces are made here, not at the first launch, which may be inside a timed window.
    ContractionRuntime& rt = runtime(im);
    if (step.call().kind == LibraryCallKind::conv2d && !rt.conv) rt.conv = std::make_unique<Conv2d>();
    if (step.call().kind != LibraryCallKind::conv2d && !rt.matmul) rt.matmul = std::make_unique<Matmul>();
    step.prepare(im);
  });
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
}

std::int64_t library_step_bytes(const Executor::Impl& im) {
  std::int64_t bytes = 0;
  bool matmul = false, conv = false;
  for_each_library_step(im, [&](const LibraryStep& step) {
    bytes += step.prepared_bytes(im.graph);
    (step.call().kind == LibraryCallKind::conv2d ? conv : matmul) = true;
  });
  if (matmul) bytes += static_cast<std::int64_t>(Matmul::kWorkspaceBytes);
  if (conv) bytes += static_cast<std::int64_t>(Conv2d::kFindWorkspaceBytes);
  return bytes;
}

void release_library_steps(Executor::Impl& im) {
  for_each_library_step(im, [](LibraryStep& step) { step.release_prepared(); });
}

}  // namespace fx::gpu
