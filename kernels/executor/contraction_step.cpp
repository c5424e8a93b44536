// Contraction groups as executor steps: cuBLASLt/cuDNN calls planned by contraction_plan.cpp, their one-time
// preparation (stacked weights for horizontal GEMMs, batchnorm folded into conv weights), and their launches.
#include "kernels/executor/contraction_step.h"

#include <algorithm>
#include <stdexcept>

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
  FX_CUDA_CALL(cudaMemcpy(host.data(), im.pointer(0, v), host.size() * sizeof(float), cudaMemcpyDeviceToHost));
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

}  // namespace

std::string LibraryStep::describe(const Executor::Impl& im, int plan) const {
  if (call_.kind != LibraryCallKind::conv2d && im.contraction && im.contraction->matmul) {
    const MatmulProblem p = call_.kind == LibraryCallKind::matmul ? call_.matmul : horizontal_problem(im, plan);
    const std::string choice = im.contraction->matmul->algorithm_choice(p);
    return choice.empty() ? call_.description : call_.description + "; " + choice;
  }
  if (call_.kind != LibraryCallKind::conv2d || !im.contraction || !im.contraction->conv) return call_.description;
  const std::string algo = im.contraction->conv->algorithm(call_.conv);
  return algo.empty() ? call_.description : call_.description + "; algorithm " + algo;
}

void LibraryStep::prepare(Executor::Impl& im) {
  const Graph& g = im.graph;
  if (call_.kind == LibraryCallKind::horizontal_matmul) {
    // The weights stacked [P, K, N] once, so one strided-batched GEMM reads part i at i * K * N.
    const auto part_bytes = static_cast<std::size_t>(g.value_type(call_.b[0]).bytes());
    weights_ = contraction_detail::DeviceMemory(part_bytes * call_.b.size());
    for (std::size_t i = 0; i < call_.b.size(); ++i) {
      FX_CUDA_CALL(cudaMemcpyAsync(static_cast<char*>(weights_.get()) + i * part_bytes, im.pointer(0, call_.b[i]),
                                   part_bytes, cudaMemcpyDeviceToDevice, im.stream));
    }
    return;
  }
  if (call_.kind != LibraryCallKind::conv2d || !call_.prepared_bias()) return;
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));  // the seeded inputs are written on the executor's stream
  std::vector<float> bias(static_cast<std::size_t>(call_.conv.k), 0.0f);
  for (ValueId term : call_.bias_terms) {
    const std::vector<float> t = download_f32(im, term);
    for (std::size_t i = 0; i < bias.size(); ++i) bias[i] += t[i];
  }
  if (!call_.folded_batchnorm) {
    bias_ = upload(bias);
    return;
  }
  const Node& bn = g.node(*call_.folded_batchnorm);
  const std::vector<float> mean = download_f32(im, bn.inputs[1].value), var = download_f32(im, bn.inputs[2].value),
                           gamma = download_f32(im, bn.inputs[3].value), beta = download_f32(im, bn.inputs[4].value);
  const FoldedConv folded = fold_batchnorm(download_f32(im, call_.w), call_.conv.k, bias,
                                           BatchNormParams{mean, var, gamma, beta, bn.attrs.get_number("eps")});
  weights_ = upload(folded.weight);
  bias_ = upload(folded.bias);
}

void LibraryStep::launch(Executor::Impl& im, int plan) const {
  ContractionRuntime& rt = runtime(im);
  if (call_.kind == LibraryCallKind::conv2d) {
    if (!rt.conv) rt.conv = std::make_unique<Conv2d>();
    const void* w = call_.folded_batchnorm ? weights_.get() : im.pointer(plan, call_.w);
    const void* bias = nullptr;
    if (call_.conv.epilogue != ConvEpilogue::none) {
      bias = call_.prepared_bias() ? bias_.get() : im.pointer(plan, call_.bias_terms[0]);
    }
    if (!w || (call_.prepared_bias() && !bias)) throw std::logic_error(call_.name + " launched before preparation");
    rt.conv->run(call_.conv, im.pointer(plan, call_.x), w, bias, im.pointer(plan, call_.outputs[0]), im.stream);
    return;
  }
  if (!rt.matmul) rt.matmul = std::make_unique<Matmul>();
  const void* bias = call_.bias ? im.pointer(plan, *call_.bias) : nullptr;
  if (call_.kind == LibraryCallKind::matmul) {
    rt.matmul->run(call_.matmul, im.pointer(plan, call_.a), im.pointer(plan, call_.b[0]), bias,
                   im.pointer(plan, call_.outputs[0]), im.stream);
    return;
  }
  if (!weights_.get()) throw std::logic_error(call_.name + " launched before preparation");
  rt.matmul->run(horizontal_problem(im, plan), im.pointer(plan, call_.a), weights_.get(), bias,
                 im.pointer(plan, call_.outputs[0]), im.stream);
}

// Horizontal: the part outputs sit at equal spacing in the arena (plan_memory places one step's outputs back to
// back), which becomes the output batch stride; consumers then read each part in place.
MatmulProblem LibraryStep::horizontal_problem(const Executor::Impl& im, int plan) const {
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

void append_contraction_steps(Executor::Impl& im, int p, const Group& group, const std::vector<NodeId>& nodes,
                              int group_index) {
  const Graph& g = im.graph;
  PlanSteps& ps = im.plans[p];
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
    s.kernel.name = call.name;
    s.kernel.nodes = call.nodes;
    s.kernel.inputs = call.inputs;
    s.kernel.outputs = call.outputs;
    s.kernel.bytes_moved = bytes_of(g, call.inputs) + bytes_of(g, call.outputs);
    launches += (launches.empty() ? "" : " + ") + call.name + " (" + call.description + ")";
    s.call = std::make_shared<LibraryStep>(std::move(call));
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

void prepare_library_steps(Executor::Impl& im) {
  for (PlanSteps& ps : im.plans) {
    for (Step& s : ps.steps) {
      if (!s.call) continue;
      // Handles and workspaces are made here, not at the first launch, which may be inside a timed window.
      ContractionRuntime& rt = runtime(im);
      if (s.call->call().kind == LibraryCallKind::conv2d && !rt.conv) rt.conv = std::make_unique<Conv2d>();
      if (s.call->call().kind != LibraryCallKind::conv2d && !rt.matmul) rt.matmul = std::make_unique<Matmul>();
      s.call->prepare(im);
    }
  }
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
}

}  // namespace fx::gpu
