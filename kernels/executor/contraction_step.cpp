// Contraction groups as executor steps: cuBLASLt/cuDNN calls planned by contraction_plan.cpp, their one-time
// preparation (stacked weights for horizontal GEMMs, batchnorm folded into conv weights), and their launches.
#include "kernels/executor/contraction_step.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/fusion/kernel_names.h"
#include "kernels/codegen/codegen.h"
#include "kernels/common/cuda_call.h"
#include "kernels/contraction/batchnorm_fold.h"
#include "kernels/contraction/flash_attention_tf32.h"
#include "kernels/executor/executor_internal.h"

namespace fx::gpu {
namespace {

std::vector<float> download_f32(const PlanBuffers& b, ValueId v) {
  const TensorType& t = b.graph.value_type(v);
  if (t.dtype != DType::f32) throw std::logic_error("folding reads f32 parameters only");
  std::vector<float> host(static_cast<std::size_t>(t.numel()));
  FX_CUDA_CALL(cudaMemcpy(host.data(), b.value(v), host.size() * sizeof(float), cudaMemcpyDeviceToHost));
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

// Bytes of the NHWC copies of a convolution's x and y (the channels-last way's scratch).
std::pair<std::size_t, std::size_t> nhwc_scratch_bytes(const Conv2dProblem& p) {
  const Conv2dOutputShape out = conv2d_output_shape(p);
  const auto element = static_cast<std::size_t>(dtype_size(p.type));
  return {static_cast<std::size_t>(p.n * p.c * p.h * p.w) * element,
          static_cast<std::size_t>(out.n * out.k * out.p * out.q) * element};
}

// The f32 attention call as the TF32 kernel takes it: the mask's broadcast dims as zero strides.
FlashAttentionTf32 tf32_attention_problem(const AttentionProblem& a) {
  FlashAttentionTf32 p;
  p.batch = a.batch, p.heads = a.heads, p.seq_q = a.seq_q, p.seq_kv = a.seq_kv, p.head_dim = a.head_dim;
  p.scale = a.scale;
  p.k_transposed = a.k_transposed;
  const long long matrix = a.seq_q * a.seq_kv;
  p.mask_head_stride = a.mask_heads > 1 ? matrix : 0;
  p.mask_batch_stride = a.mask_batch > 1 ? matrix * a.mask_heads : 0;
  return p;
}

// Why the TF32 kernel cannot run a on this device; "" when it can. The engine proposed the group only for sizes
// the kernel takes (core's fused_attention_supports); the device and the build are asked here.
std::string tf32_attention_unsupported_reason(const AttentionProblem& a) {
  if (a.head_dim != a.value_dim) {
    return "the TF32 flash attention kernel takes one head dim for Q.K and V (here " + std::to_string(a.head_dim) +
           " and " + std::to_string(a.value_dim) + ")";
  }
  return flash_attention_tf32_unsupported_reason(a.head_dim);
}

}  // namespace

std::string LibraryStep::describe(const PlanBuffers& b, CallPart part) const {
  if (part == CallPart::to_nhwc && space_to_depth_) {
    const std::string f = std::to_string(space_to_depth_->factor);
    return "x rearranged into " + f + "x" + f + " blocks (space to depth) for cuDNN's channels-last convolution";
  }
  if (part == CallPart::to_nhwc) return "x converted NCHW -> NHWC for cuDNN's channels-last convolution";
  if (part == CallPart::to_nchw) return "y converted NHWC -> NCHW after cuDNN's channels-last convolution";
  if (call_.kind == LibraryCallKind::attention) {
    const std::string engine =
        runtime_->attention && !runs_tf32_attention() ? runtime_->attention->engine(call_.attention) : "";
    return engine.empty() ? call_.description : call_.description + "; " + engine;
  }
  if (call_.kind == LibraryCallKind::matmul_graph) {
    const std::string engine = runtime_->matmul_graph ? runtime_->matmul_graph->engine(call_.graph) : "";
    return engine.empty() ? call_.description : call_.description + "; " + engine;
  }
  if (is_gemm() && runtime_->matmul) {
    const MatmulProblem p = gemm_problem(b);
    const std::string choice = runtime_->matmul->algorithm_choice(p);
    return choice.empty() ? call_.description : call_.description + "; " + choice;
  }
  if (call_.kind != LibraryCallKind::conv2d || !runtime_->conv) return call_.description;
  const bool nhwc = part == CallPart::conv_nhwc;
  std::string text = call_.description;
  if (nhwc && space_to_depth_) {
    const Conv2dProblem& p = call_.conv;
    const Conv2dProblem& q = nhwc_problem_;
    const std::string f = std::to_string(space_to_depth_->factor);
    text += "; space to depth: x's " + f + "x" + f + " blocks as " + std::to_string(q.c) + " channels, the " +
            std::to_string(p.r) + "x" + std::to_string(p.s) + " stride-" + f + " convolution over " +
            std::to_string(p.c) + " channels run as a " + std::to_string(q.r) + "x" + std::to_string(q.s) +
            " stride-1 one, NHWC (y " + (plan_buffers_ ? "in the plan's NHWC buffer" : "converted back after it") + ")";
  } else if (nhwc) {
    text += plan_buffers_ ? "; NHWC (x and y in the plan's NHWC buffers, converted only for readers that need NCHW)"
                          : "; NHWC (x and y converted by the steps around it)";
  }
  const std::string algo = runtime_->conv->algorithm(nhwc ? nhwc_problem_ : call_.conv);
  return algo.empty() ? text : text + "; algorithm " + algo;
}

bool LibraryStep::offers_nhwc(const Graph& g) const {
  return call_.kind == LibraryCallKind::conv2d && call_.conv.groups == 1 && !call_.conv.nhwc && g.is_input(call_.w);
}

void LibraryStep::generate_nhwc(const Graph& g) {
  if (!offers_nhwc(g) || !nhwc_kernels_[0].source.empty()) return;
  const Conv2dProblem& p = call_.conv;
  space_to_depth_ = space_to_depth_for(p);
  nhwc_problem_ = space_to_depth_ ? space_to_depth_->problem : p;
  nhwc_problem_.nhwc = true;
  const Conv2dOutputShape out = conv2d_output_shape(p);
  // Named as the call is, generated: "cudnn_g_conv" -> "fx_g_conv_x_to_nhwc".
  const std::string conv = "fx_" + call_.name.substr(call_.name.find('_') + 1);
  if (space_to_depth_) {
    const Conv2dProblem& q = nhwc_problem_;
    nhwc_kernels_[0] = generate_space_to_depth(
        p.type, {p.n, p.c, p.h, p.w, space_to_depth_->factor, p.pad_h, p.pad_w, q.h, q.w, q.c}, conv + "_x_space_to_depth");
  } else {
    nhwc_kernels_[0] = generate_layout_transpose(p.type, p.n, p.c, p.h * p.w, conv + "_x_to_nhwc");
  }
  nhwc_kernels_[1] = generate_layout_transpose(p.type, out.n, out.p * out.q, out.k, conv + "_y_to_nchw");
}

void LibraryStep::add_nhwc_loads(std::vector<KernelLoad>& batch) {
  if (nhwc_kernels_[0].source.empty() || !nhwc_[0].empty()) return;  // not generated, or already loaded
  for (int i = 0; i < 2; ++i) {
    const GeneratedKernel& k = nhwc_kernels_[i];
    nhwc_[i].resize(1 + k.alternatives.size());  // `into` points into it
    batch.push_back({{k.source, k.name}, &nhwc_[i][0]});
    for (std::size_t j = 0; j < k.alternatives.size(); ++j) {
      batch.push_back({{k.alternatives[j].source, k.name}, &nhwc_[i][j + 1]});
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
  if (space_to_depth_) return "x's rearrangement in " + x + ", y's conversion in " + y;
  return x == y ? "both conversions in " + x : "x's conversion in " + x + ", y's in " + y;
}

void LibraryStep::install_conversion_layout(std::size_t j) {
  for (int i = 0; i < 2; ++i) {
    GeneratedKernel& k = nhwc_kernels_[i];
    const std::size_t own = std::min(j, k.alternatives.size());
    if (own == 0) continue;
    swap_layout(k, k.alternatives[own - 1]);
    std::swap(nhwc_[i][0], nhwc_[i][own]);
  }
}

void LibraryStep::drop_nhwc() {
  nhwc_dropped_ = true;
  free_nhwc();
}

void LibraryStep::use_plan_nhwc_buffers() {
  plan_buffers_ = true;
  if (!space_to_depth_) x_nhwc_ = contraction_detail::DeviceMemory();  // the rearranged x is the step's own
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
  const auto& loaded = nhwc_[part == CallPart::to_nhwc ? 0 : 1];
  if (loaded.empty()) throw std::logic_error(call_.name + ": conversions not compiled");
  return loaded[0].function();
}

void LibraryStep::describe_conversion(CallPart part, StepInfo& step) const {
  const GeneratedKernel& k = conversion(part);
  step.kernel.name = k.name;
  step.kernel.kind = k.kind;
  step.kernel.layout = k.layout;
  step.kernel.block = k.block;
  step.kernel.grid = k.grid;
  step.layout_choice = k.layout + ": chosen with the convolution's layout (its line gives the times)";
}

std::pair<void*, void*> LibraryStep::nhwc_x_y(const PlanBuffers& b) const {
  if (!plan_buffers_) return {x_nhwc_.get(), y_nhwc_.get()};
  return {space_to_depth_ ? x_nhwc_.get() : b.nhwc(call_.x), b.nhwc(call_.outputs[0])};
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
  if (!nhwc_[0].empty() && !nhwc_dropped_) {
    const Conv2dProblem& q = nhwc_problem_;
    const auto [x, y] = nhwc_scratch_bytes(q);
    bytes += q.k * q.c * q.r * q.s * dtype_size(q.type) +
             static_cast<std::int64_t>(plan_buffers_ ? (space_to_depth_ ? x : 0) : x + y);
  }
  return bytes;
}

void LibraryStep::release_prepared() {
  weights_ = contraction_detail::DeviceMemory();
  bias_ = contraction_detail::DeviceMemory();
  free_nhwc();
}

void LibraryStep::prepare(const PlanBuffers& b, cudaStream_t stream) {
  release_prepared();  // a second preparation (the profile pass) replaces the buffers, never holds both
  const Graph& g = b.graph;
  if (call_.kind == LibraryCallKind::horizontal_matmul) {
    // The weights stacked [P, K, N] once, so one strided-batched GEMM reads part i at i * K * N.
    const auto part_bytes = static_cast<std::size_t>(g.value_type(call_.b[0]).bytes());
    weights_ = contraction_detail::DeviceMemory(part_bytes * call_.b.size());
    for (std::size_t i = 0; i < call_.b.size(); ++i) {
      FX_CUDA_CALL(cudaMemcpyAsync(static_cast<char*>(weights_.get()) + i * part_bytes, b.value(call_.b[i]),
                                   part_bytes, cudaMemcpyDeviceToDevice, stream));
    }
    return;
  }
  if (call_.kind != LibraryCallKind::conv2d) return;
  FX_CUDA_CALL(cudaStreamSynchronize(stream));  // the seeded inputs are written on the executor's stream
  if (call_.prepared_bias()) {
    std::vector<float> bias(static_cast<std::size_t>(call_.conv.k), 0.0f);
    for (ValueId term : call_.bias_terms) {
      const std::vector<float> t = download_f32(b, term);
      for (std::size_t i = 0; i < bias.size(); ++i) bias[i] += t[i];
    }
    if (call_.folded_batchnorm) {
      const Node& bn = g.node(*call_.folded_batchnorm);
      const std::vector<float> mean = download_f32(b, bn.inputs[1].value),
                               var = download_f32(b, bn.inputs[2].value),
                               gamma = download_f32(b, bn.inputs[3].value),
                               beta = download_f32(b, bn.inputs[4].value);
      const FoldedConv folded = fold_batchnorm(download_f32(b, call_.w), call_.conv.k, bias,
                                               BatchNormParams{mean, var, gamma, beta, bn.attrs.get_number("eps")});
      weights_ = upload(folded.weight);
      bias = folded.bias;
    }
    bias_ = upload(bias);
  }
  if (!nhwc_[0].empty() && !nhwc_dropped_) prepare_nhwc(b);
}

// The weights the NCHW call reads (folded or the graph's), permuted [K, C, R, S] -> [K, R, S, C] on the host (or
// rearranged for the space-to-depth form), and scratch for the NHWC copies of x and y.
void LibraryStep::prepare_nhwc(const PlanBuffers& b) {
  const Conv2dProblem& p = call_.conv;
  const auto element = static_cast<std::size_t>(dtype_size(p.type));
  const auto k = static_cast<std::size_t>(p.k), c = static_cast<std::size_t>(p.c),
             rs = static_cast<std::size_t>(p.r * p.s);
  std::vector<char> oihw(k * c * rs * element), ohwi;
  const void* w = call_.folded_batchnorm ? weights_.get() : b.value(call_.w);
  FX_CUDA_CALL(cudaMemcpy(oihw.data(), w, oihw.size(), cudaMemcpyDeviceToHost));
  if (space_to_depth_) {
    ohwi = space_to_depth_weights(p, *space_to_depth_, oihw.data(), element);
  } else {
    ohwi.resize(oihw.size());
    for (std::size_t o = 0; o < k; ++o) {
      for (std::size_t i = 0; i < c; ++i) {
        for (std::size_t f = 0; f < rs; ++f) {
          std::copy_n(&oihw[((o * c + i) * rs + f) * element], element, &ohwi[((o * rs + f) * c + i) * element]);
        }
      }
    }
  }
  weights_nhwc_ = contraction_detail::DeviceMemory(ohwi.size());
  FX_CUDA_CALL(cudaMemcpy(weights_nhwc_.get(), ohwi.data(), ohwi.size(), cudaMemcpyHostToDevice));
  const auto [x_bytes, y_bytes] = nhwc_scratch_bytes(nhwc_problem_);
  if (!plan_buffers_ || space_to_depth_) x_nhwc_ = contraction_detail::DeviceMemory(x_bytes);
  if (!plan_buffers_) y_nhwc_ = contraction_detail::DeviceMemory(y_bytes);
}

void LibraryStep::launch(const PlanBuffers& b, cudaStream_t stream, CallPart part, std::size_t layout) const {
  ContractionRuntime& rt = *runtime_;
  if (part != CallPart::whole && !nhwc_ready()) throw std::logic_error(call_.name + ": NHWC launched before preparation");
  if (part == CallPart::to_nhwc || part == CallPart::to_nchw) {
    const int i = part == CallPart::to_nhwc ? 0 : 1;
    const auto [x, y] = nhwc_x_y(b);
    void* src = i == 0 ? b.value(call_.x) : y;
    void* dst = i == 0 ? x : b.value(call_.outputs[0]);
    if (!src || !dst) throw std::logic_error(call_.name + ": a conversion launched without its NHWC buffer");
    const GeneratedKernel& k = nhwc_kernels_[i];
    const std::size_t j = std::min(layout, k.alternatives.size());
    const KernelLayout* alt = alternative(k, j);
    launch_kernel(nhwc_[i][j].function(), alt ? alt->block : k.block, alt ? alt->grid : k.grid, {src, dst}, stream);
    return;
  }
  if (runs_tf32_attention()) {
    const auto in = [&](ValueId v) { return static_cast<const float*>(b.value(v)); };
    FX_CUDA_CALL(flash_attention_tf32(tf32_attention_problem(call_.attention), in(call_.q), in(call_.k), in(call_.v),
                                      call_.mask ? in(*call_.mask) : nullptr,
                                      static_cast<float*>(b.value(call_.outputs[0])), stream));
    return;
  }
  if (call_.kind == LibraryCallKind::attention) {
    if (!rt.attention) rt.attention = std::make_unique<Attention>();
    rt.attention->run(call_.attention, b.value(call_.q), b.value(call_.k), b.value(call_.v),
                      call_.mask ? b.value(*call_.mask) : nullptr, b.value(call_.outputs[0]), stream);
    return;
  }
  if (call_.kind == LibraryCallKind::matmul_graph) {
    if (!rt.matmul_graph) rt.matmul_graph = std::make_unique<MatmulGraph>();
    std::vector<const void*> operands;
    for (const std::optional<ValueId>& v : call_.graph_operands) operands.push_back(v ? b.value(*v) : nullptr);
    rt.matmul_graph->run(call_.graph, b.value(call_.a), b.value(call_.b[0]), operands, b.value(call_.outputs[0]), stream);
    return;
  }
  if (call_.kind == LibraryCallKind::conv2d) {
    if (!rt.conv) rt.conv = std::make_unique<Conv2d>();
    const bool nhwc = part == CallPart::conv_nhwc;
    const void* w = nhwc ? weights_nhwc_.get() : call_.folded_batchnorm ? weights_.get() : b.value(call_.w);
    const void* bias = nullptr;
    if (call_.conv.epilogue != ConvEpilogue::none) {
      bias = call_.prepared_bias() ? bias_.get() : b.value(call_.bias_terms[0]);
    }
    if (!w || (call_.prepared_bias() && !bias)) throw std::logic_error(call_.name + " launched before preparation");
    if (nhwc) {
      const auto [x, y] = nhwc_x_y(b);
      if (!x || !y) throw std::logic_error(call_.name + ": NHWC launched without its NHWC buffers");
      rt.conv->run(nhwc_problem_, x, w, bias, y, stream);
    } else {
      rt.conv->run(call_.conv, b.value(call_.x), w, bias, b.value(call_.outputs[0]), stream);
    }
    return;
  }
  if (!rt.matmul) rt.matmul = std::make_unique<Matmul>();
  const GemmOperands o = gemm_operands(b);
  rt.matmul->run(gemm_problem(b), o.a, o.b, o.epilogue, o.c, stream);
}

LibraryStep::GemmOperands LibraryStep::gemm_operands(const PlanBuffers& buffers) const {
  if (!is_gemm()) throw std::logic_error(call_.name + " is not a GEMM");
  const void* b = call_.kind == LibraryCallKind::matmul ? buffers.value(call_.b[0]) : weights_.get();
  if (!b) throw std::logic_error(call_.name + " launched before preparation");
  const void* bias = call_.bias ? buffers.value(*call_.bias) : nullptr;
  const void* residual = call_.residual ? buffers.value(*call_.residual) : nullptr;
  return {buffers.value(call_.a), b, {bias, residual}, buffers.value(call_.outputs[0])};
}

MatmulProblem LibraryStep::gemm_problem(const PlanBuffers& b) const {
  return call_.kind == LibraryCallKind::matmul ? call_.matmul : horizontal_problem(b);
}

std::size_t LibraryStep::gemm_finalists(const PlanBuffers& b) const {
  if (!is_gemm() || !runtime_->matmul) return 0;
  const GemmOperands o = gemm_operands(b);
  return runtime_->matmul->finalist_count(gemm_problem(b), o.a, o.b, o.epilogue, o.c);
}

std::string LibraryStep::gemm_finalists_id(const PlanBuffers& b) const {
  if (!is_gemm() || !runtime_->matmul) return {};
  const GemmOperands o = gemm_operands(b);
  return runtime_->matmul->finalists_id(gemm_problem(b), o.a, o.b, o.epilogue, o.c);
}

Matmul& LibraryStep::searched_matmul() const {
  if (!runtime_->matmul) throw std::logic_error(call_.name + ": no finalists before its first launch");
  return *runtime_->matmul;
}

void LibraryStep::launch_finalist(const PlanBuffers& b, cudaStream_t stream, std::size_t i) const {
  const GemmOperands o = gemm_operands(b);
  searched_matmul().run_finalist(i, gemm_problem(b), o.a, o.b, o.epilogue, o.c, stream);
}

void LibraryStep::choose_finalist(const PlanBuffers& b, std::size_t i, const std::vector<double>& ms,
                                  const std::string& timed_as) const {
  const GemmOperands o = gemm_operands(b);
  searched_matmul().choose_finalist(i, gemm_problem(b), o.a, o.b, o.epilogue, o.c, ms, timed_as);
}

// Horizontal: the part outputs sit at equal spacing in the arena (plan_memory places one step's outputs back to
// back), which becomes the output batch stride; consumers then read each part in place.
MatmulProblem LibraryStep::horizontal_problem(const PlanBuffers& b) const {
  const char* c0 = static_cast<const char*>(b.value(call_.outputs[0]));
  const std::int64_t element = dtype_size(call_.matmul.c_type);
  const std::ptrdiff_t spacing =
      call_.outputs.size() > 1 ? static_cast<const char*>(b.value(call_.outputs[1])) - c0 : 0;
  for (std::size_t i = 0; i < call_.outputs.size(); ++i) {
    if (static_cast<const char*>(b.value(call_.outputs[i])) - c0 != spacing * static_cast<std::ptrdiff_t>(i) ||
        spacing % element != 0) {
      throw std::logic_error(call_.name + ": part outputs are not equally spaced in the arena");
    }
  }
  MatmulProblem p = call_.matmul;
  p.batch_stride_c = spacing / element;
  return p;
}

void name_step_after(const Graph& g, const LibraryCall& call, StepInfo& s) {
  s.kernel.name = call.name;
  s.kernel.nodes = call.nodes;
  s.kernel.inputs = call.inputs;
  s.kernel.outputs = call.outputs;
  s.kernel.bytes_moved = bytes_of(g, call.inputs) + bytes_of(g, call.outputs);
}

namespace {

// Whether the attention call runs on this device (cuDNN's engine, or for f32 the TF32 kernel's tensor cores);
// otherwise a note and why (asked before anything runs, so the plan says it before its times do).
bool attention_runs(CompiledProgram& im, PlanId p, const Group& group, const LibraryCall& call) {
  std::string why;
  if (call.runs_tf32_attention()) {
    why = tf32_attention_unsupported_reason(call.attention);
  } else if (!attention_available()) {
    why = "this build has no cuDNN";
  } else {
    if (!im.contraction->attention) im.contraction->attention = std::make_unique<Attention>();
    why = im.contraction->attention->unsupported_reason(call.attention);
  }
  if (why.empty()) return true;
  im.plan(p).notes.push_back(group.id + ": not one kernel: " + why +
                             "; the attention chain runs op by op, one launch each, and writes its score matrices");
  return false;
}

// Whether cuDNN runs every matmul graph call of cp on this device; otherwise a note and why, and the group is
// planned again without them (asked before anything runs, as for attention).
bool matmul_graphs_run(CompiledProgram& im, PlanId p, const Group& group, const ContractionGroupPlan& cp) {
  for (const LibraryCall& call : cp.calls) {
    if (call.kind != LibraryCallKind::matmul_graph) continue;
    if (!im.contraction->matmul_graph) im.contraction->matmul_graph = std::make_unique<MatmulGraph>();
    const std::string why = im.contraction->matmul_graph->unsupported_reason(call.graph);
    if (why.empty()) continue;
    im.plan(p).notes.push_back(group.id + ": " + call.name + " is not one kernel: " + why +
                               "; the matmul runs on cuBLASLt and the ops after it as generated kernels");
    return false;
  }
  return true;
}

// The group's library calls and generated kernels for `nodes`, writing `outputs`; matmul graphs only where
// `cudnn_graph`.
void append_steps(CompiledProgram& im, PlanId p, const Group& group, const std::vector<NodeId>& nodes,
                  const std::vector<ValueId>& outputs, const std::string& stem, bool cudnn_graph = true);

}  // namespace

void append_contraction_steps(CompiledProgram& im, PlanId p, const Group& group, const std::vector<NodeId>& nodes,
                              const std::string& stem) {
  im.tolerances = tf32_output_tolerances(im.graph);
  for (const auto& [v, t] : attention_output_tolerances(im.graph)) im.tolerances[v] = std::max(im.tolerances[v], t);
  if (!im.contraction) im.contraction = std::make_shared<ContractionRuntime>();
  ContractionGroupPlan cp = plan_contraction_group(im.graph, nodes, group.io.outputs, stem);
  if (cp.calls.size() == 1 && cp.calls[0].kind == LibraryCallKind::attention && !attention_runs(im, p, group, cp.calls[0])) {
    for (const std::vector<NodeId>& part : attention_fallback_parts(im.graph, cp.calls[0])) {
      const std::string name = stem + "_" + c_identifier(im.graph.node(part.back()).name);
      append_steps(im, p, group, part, {im.graph.value_of(part.back())}, name);
    }
    return;
  }
  append_steps(im, p, group, nodes, group.io.outputs, stem, matmul_graphs_run(im, p, group, cp));
}

namespace {

void append_steps(CompiledProgram& im, PlanId p, const Group& group, const std::vector<NodeId>& nodes,
                  const std::vector<ValueId>& outputs, const std::string& stem, bool cudnn_graph) {
  const Graph& g = im.graph;
  CompiledPlan& ps = im.plan(p);
  ContractionGroupPlan cp = has_contraction(g, nodes) ? plan_contraction_group(g, nodes, outputs, stem, cudnn_graph)
                                                      : ContractionGroupPlan{{}, nodes, outputs, {}};
  std::string launches;
  for (LibraryCall& call : cp.calls) {
    launches += (launches.empty() ? "" : " + ") + call.name + " (" + call.description + ")";
    Step s = step_of_group(group);
    name_step_after(g, call, s);
    auto library = std::make_shared<LibraryStep>(std::move(call), im.contraction);
    // The channels-last way is compiled only when the run times layouts or forces it.
    const int forced = im.options.force_layout;
    if (((im.options.autotune && forced < 0) || forced >= 1) && library->offers_nhwc(g)) library->generate_nhwc(g);
    s.action = LibraryLaunch{std::move(library)};
    ps.steps.push_back(std::move(s));
  }
  std::size_t generated = 0;
  if (!cp.rest.empty()) {
    GroupCode code = generate_group(g, cp.rest, cp.rest_outputs, "fx_" + stem);
    if (!code.note.empty()) cp.notes.push_back(code.note);
    for (GeneratedKernel& k : code.kernels) {
      Step s = step_of_group(group);
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

// Calls f once per library call of the plans (a convolution run channels-last is three steps sharing one call).
template <class Im, class F>
void for_each_library_step(Im& im, F&& f) {
  std::set<const LibraryStep*> done;
  for (auto& ps : im.plans) {
    for (auto& s : ps.steps) {
      if (s.call() && done.insert(s.call()).second) f(*s.call());
    }
  }
}

}  // namespace

void prepare_library_steps(CompiledProgram& im) {
  for_each_library_step(im, [&](LibraryStep& step) {
    // Handles and workspaces are made here, not at the first launch, which may be inside a timed window.
    ContractionRuntime& rt = *im.contraction;
    if (step.call().kind == LibraryCallKind::conv2d && !rt.conv) {
      rt.conv = std::make_unique<Conv2d>();
      rt.conv->set_tuning_cache(im.tuning.get(), !im.options.retune);
    }
    if (step.call().kind == LibraryCallKind::attention && !step.runs_tf32_attention() && !rt.attention) {
      rt.attention = std::make_unique<Attention>();
    }
    if (step.call().kind == LibraryCallKind::matmul_graph && !rt.matmul_graph) {
      rt.matmul_graph = std::make_unique<MatmulGraph>();
    }
    if (step.is_gemm() && !rt.matmul) {
      rt.matmul = std::make_unique<Matmul>();
      rt.matmul->set_tuning_cache(im.tuning.get(), !im.options.retune);
    }
    step.prepare(im.buffers(PlanId::unfused), im.stream);  // the graph's inputs, which both plans share
  });
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
}

std::int64_t library_step_bytes(const CompiledProgram& im) {
  std::int64_t bytes = 0;
  bool matmul = false, conv = false;
  for_each_library_step(im, [&](const LibraryStep& step) {
    bytes += step.prepared_bytes(im.graph);
    if (step.call().kind == LibraryCallKind::conv2d) conv = true;
    if (step.is_gemm()) matmul = true;
  });
  if (matmul) bytes += static_cast<std::int64_t>(Matmul::kWorkspaceBytes);
  if (conv) bytes += static_cast<std::int64_t>(Conv2d::kFindWorkspaceBytes);
  return bytes;
}

void release_library_steps(CompiledProgram& im) {
  for_each_library_step(im, [](LibraryStep& step) { step.release_prepared(); });
}

}  // namespace fx::gpu
