// fx::gpu::Conv2d: cuDNN's graph API first (conv_graph.cpp), its legacy (v7-style) API where the graph API has no
// plan for a problem or a launch's pointers are too loosely aligned. The legacy fused call
// cudnnConvolutionBiasActivationForward is deprecated in cuDNN 9 but still works for FP32 NCHW with RELU or
// IDENTITY (cuDNN 9 API reference, cudnnConvolutionBiasActivationForward). Both fused modes run IMPLICIT_PRECOMP_GEMM there, the one algorithm the legacy
// call supports with every activation it accepts.
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>

#include "kernels/common/cuda_call.h"
#include "kernels/contraction/conv.h"
#include "kernels/contraction/conv_graph.h"
#include "kernels/contraction/device_memory.h"

namespace fx::gpu {
namespace {

using contraction_detail::ConvGraphPlan;
using contraction_detail::ConvOperands;
using contraction_detail::capturing;
using contraction_detail::DeviceMemory;
using contraction_detail::dnn_type;

template <class Handle, cudnnStatus_t (*Destroy)(Handle)>
struct DnnDeleter {
  void operator()(Handle h) const { Destroy(h); }
};
template <class Handle, cudnnStatus_t (*Destroy)(Handle)>
using DnnPtr = std::unique_ptr<std::remove_pointer_t<Handle>, DnnDeleter<Handle, Destroy>>;
using TensorDesc = DnnPtr<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDesc = DnnPtr<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvDesc =
    DnnPtr<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using ActDesc = DnnPtr<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;

template <class Ptr, class Handle>
Ptr create(cudnnStatus_t (*create_fn)(Handle*)) {
  Handle raw = nullptr;
  FX_CUDA_CALL(create_fn(&raw));
  return Ptr(raw);
}

// FMA_MATH keeps f32 exact to f32 rounding: cuDNN's default math may run f32 convolutions on TF32 tensor cores.
cudnnMathType_t requested_math(const Conv2dProblem& p) {
  if (p.type != DType::f32) return CUDNN_TENSOR_OP_MATH;
  return p.allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
  }
}

int as_int(std::int64_t v) { return static_cast<int>(v); }  // validate_conv2d bounds every size by INT_MAX

auto key_of(const Conv2dProblem& p) {
  return std::tuple(p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dilation_h,
                    p.dilation_w, p.groups, p.type, p.allow_tf32, p.epilogue, p.nhwc, p.residual);
}
struct KeyLess {
  bool operator()(const Conv2dProblem& a, const Conv2dProblem& b) const { return key_of(a) < key_of(b); }
};

struct ConvPlan {
  TensorDesc x, y, bias;
  FilterDesc w;
  ConvDesc conv;
  ActDesc activation;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  std::size_t workspace_bytes = 0;
};

ConvPlan make_descriptors(const Conv2dProblem& p) {
  ConvPlan plan;
  const cudnnDataType_t t = dnn_type(p.type);
  const Conv2dOutputShape out = conv2d_output_shape(p);
  // The format only orders the memory; the sizes are always given as N, C, H, W (filters K, C, R, S).
  const cudnnTensorFormat_t format = p.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  plan.x = create<TensorDesc>(cudnnCreateTensorDescriptor);
  FX_CUDA_CALL(cudnnSetTensor4dDescriptor(plan.x.get(), format, t, as_int(p.n), as_int(p.c), as_int(p.h), as_int(p.w)));
  plan.y = create<TensorDesc>(cudnnCreateTensorDescriptor);
  FX_CUDA_CALL(cudnnSetTensor4dDescriptor(plan.y.get(), format, t, as_int(out.n), as_int(out.k), as_int(out.p),
                                          as_int(out.q)));
  plan.w = create<FilterDesc>(cudnnCreateFilterDescriptor);
  FX_CUDA_CALL(cudnnSetFilter4dDescriptor(plan.w.get(), t, format, as_int(p.k), as_int(p.c / p.groups), as_int(p.r),
                                          as_int(p.s)));
  plan.conv = create<ConvDesc>(cudnnCreateConvolutionDescriptor);
  // CROSS_CORRELATION is what deep-learning "convolution" means (no filter flip).
  FX_CUDA_CALL(cudnnSetConvolution2dDescriptor(plan.conv.get(), as_int(p.pad_h), as_int(p.pad_w), as_int(p.stride_h),
                                               as_int(p.stride_w), as_int(p.dilation_h), as_int(p.dilation_w),
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  FX_CUDA_CALL(cudnnSetConvolutionGroupCount(plan.conv.get(), as_int(p.groups)));
  FX_CUDA_CALL(cudnnSetConvolutionMathType(plan.conv.get(), requested_math(p)));
  if (p.epilogue != ConvEpilogue::none) {
    plan.bias = create<TensorDesc>(cudnnCreateTensorDescriptor);
    FX_CUDA_CALL(cudnnSetTensor4dDescriptor(plan.bias.get(), CUDNN_TENSOR_NCHW, t, 1, as_int(p.k), 1, 1));
    plan.activation = create<ActDesc>(cudnnCreateActivationDescriptor);
    const cudnnActivationMode_t mode =
        p.epilogue == ConvEpilogue::relu_bias ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY;
    FX_CUDA_CALL(cudnnSetActivationDescriptor(plan.activation.get(), mode, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  }
  return plan;
}

}  // namespace

// What runs one problem: the graph API's plan once tried (nullopt when it has none), the legacy descriptors once
// needed.
struct ProblemPlans {
  bool graph_tried = false;
  std::optional<ConvGraphPlan> graph;
  std::optional<ConvPlan> legacy;
};

struct Conv2d::Impl {
  ConvApi api = ConvApi::graph;
  cudnnHandle_t handle = nullptr;
  DeviceMemory workspace;
  std::map<Conv2dProblem, ProblemPlans, KeyLess> plans;
  ChoiceSource tuning;  // where graph plans' engine choices are kept (set_tuning_cache)

  ~Impl() {
    plans.clear();  // graph plans were finalized on the handle: they go first
    if (handle) cudnnDestroy(handle);
  }
  void ensure_workspace(std::size_t bytes) {
    if (workspace.bytes() < bytes) workspace = DeviceMemory(bytes);
  }
  void find_algorithm(const Conv2dProblem& p, ConvPlan& plan, const void* x, const void* w, void* y);
  ConvPlan& legacy_plan(const Conv2dProblem& p, ProblemPlans& plans, const void* x, const void* w, void* y);
  void run_legacy(const Conv2dProblem& p, ConvPlan& plan, const ConvOperands& ops);
};

// Times every legacy algorithm on the caller's buffers and keeps the fastest that honours the TF32 choice.
void Conv2d::Impl::find_algorithm(const Conv2dProblem& p, ConvPlan& plan, const void* x, const void* w, void* y) {
  ensure_workspace(Conv2d::kFindWorkspaceBytes);
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT] = {};
  int returned = 0;
  FX_CUDA_CALL(cudnnFindConvolutionForwardAlgorithmEx(handle, plan.x.get(), x, plan.w.get(), w, plan.conv.get(),
                                                      plan.y.get(), y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                                      perf, workspace.get(), workspace.bytes()));
  const bool fma_only = requested_math(p) == CUDNN_FMA_MATH;
  for (int i = 0; i < returned; ++i) {  // cuDNN returns them fastest first
    const bool tensor_cores =
        perf[i].mathType == CUDNN_TENSOR_OP_MATH || perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    if (perf[i].status != CUDNN_STATUS_SUCCESS || (fma_only && tensor_cores)) continue;
    plan.algo = perf[i].algo;
    plan.workspace_bytes = perf[i].memory;
    // cuDNN asks that the math type it measured be the one run; FMA-only keeps FMA_MATH on the descriptor.
    if (!fma_only) FX_CUDA_CALL(cudnnSetConvolutionMathType(plan.conv.get(), perf[i].mathType));
    return;
  }
  throw GpuError("cuDNN", CUDNN_STATUS_NOT_SUPPORTED, "CUDNN_STATUS_NOT_SUPPORTED",
                 "cudnnFindConvolutionForwardAlgorithmEx", __FILE__, __LINE__,
                 "cuDNN found no usable algorithm for " + describe_conv2d(p));
}

ConvPlan& Conv2d::Impl::legacy_plan(const Conv2dProblem& p, ProblemPlans& plans, const void* x, const void* w,
                                     void* y) {
  if (plans.legacy) return *plans.legacy;
  ConvPlan plan = make_descriptors(p);
  if (p.epilogue == ConvEpilogue::none) {
    find_algorithm(p, plan, x, w, y);
  } else {
    plan.algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    FX_CUDA_CALL(cudnnGetConvolutionForwardWorkspaceSize(handle, plan.x.get(), plan.w.get(), plan.conv.get(),
                                                         plan.y.get(), plan.algo, &plan.workspace_bytes));
  }
  return plans.legacy.emplace(std::move(plan));
}

void Conv2d::Impl::run_legacy(const Conv2dProblem& p, ConvPlan& plan, const ConvOperands& ops) {
  const void *x = ops.x, *w = ops.w, *bias = ops.bias;
  void* y = ops.y;
  ensure_workspace(plan.workspace_bytes);
  const float one = 1.0f;
  const float zero = 0.0f;
  void* ws = workspace.get();
  const std::size_t ws_bytes = workspace.bytes();
  if (p.epilogue == ConvEpilogue::none) {
    FX_CUDA_CALL(cudnnConvolutionForward(handle, &one, plan.x.get(), x, plan.w.get(), w, plan.conv.get(), plan.algo, ws,
                                         ws_bytes, &zero, plan.y.get(), y));
    return;
  }
  // y = act(alpha1 * conv(x) + alpha2 * z + bias). Without a residual z is y with alpha2 = 0: cuDNN still wants
  // a tensor there, and the legacy call has no "no residual" mode.
  const void* z = p.residual ? ops.z : y;
  FX_CUDA_CALL(cudnnConvolutionBiasActivationForward(handle, &one, plan.x.get(), x, plan.w.get(), w, plan.conv.get(),
                                                     plan.algo, ws, ws_bytes, p.residual ? &one : &zero, plan.y.get(),
                                                     z, plan.bias.get(), bias, plan.activation.get(), plan.y.get(), y));
}

bool cudnn_available() { return true; }

Conv2d::Conv2d(ConvApi api) : impl_(std::make_unique<Impl>()) {
  impl_->api = api;
  contraction_detail::require_cuda_device();
  FX_CUDA_CALL(cudnnCreate(&impl_->handle));
}

Conv2d::~Conv2d() = default;
Conv2d::Conv2d(Conv2d&&) noexcept = default;
Conv2d& Conv2d::operator=(Conv2d&&) noexcept = default;

void Conv2d::run(const Conv2dProblem& p, const void* x, const void* w, const void* bias, void* y,
                 CUstream_st* stream, const void* residual) {
  if (std::string error = validate_conv2d(p); !error.empty()) throw std::invalid_argument("conv2d: " + error);
  if (!x || !w || !y) throw std::invalid_argument("conv2d: null operand pointer");
  if (p.residual != (residual != nullptr) || (residual && residual == y)) {
    throw std::invalid_argument(p.residual ? "conv2d: the residual needs a pointer other than y's"
                                           : "conv2d: a residual pointer for a problem without a residual");
  }
  if ((p.epilogue != ConvEpilogue::none) != (bias != nullptr)) {
    throw std::invalid_argument(p.epilogue == ConvEpilogue::none ? "conv2d: no epilogue takes no bias"
                                                                 : "conv2d: the epilogue needs a bias pointer");
  }
  FX_CUDA_CALL(cudnnSetStream(impl_->handle, stream));
  const auto [entry, inserted] = impl_->plans.try_emplace(p);
  ProblemPlans& plans = entry->second;
  try {
    ConvOperands ops{x, w, bias, residual, y, nullptr};
    if (impl_->api == ConvApi::graph && contraction_detail::graph_aligned(ops)) {
      if (!plans.graph_tried) {
        if (impl_->workspace.bytes() < Conv2d::kFindWorkspaceBytes && capturing(stream)) {
          throw std::logic_error("conv2d: " + describe_conv2d(p) +
                                 " first launched while its stream is captured into a CUDA graph, before this Conv2d "
                                 "has a workspace (no allocation may happen then): launch it once before capturing");
        }
        impl_->ensure_workspace(Conv2d::kFindWorkspaceBytes);
        ops.workspace = impl_->workspace.get();
        plans.graph = ConvGraphPlan::choose(impl_->handle, p, ops, impl_->workspace.bytes(), stream, impl_->tuning);
        plans.graph_tried = true;
      }
      if (plans.graph) {
        ops.workspace = impl_->workspace.get();  // the search's workspace holds every candidate's
        plans.graph->execute(impl_->handle, ops);
        return;
      }
    }
    impl_->run_legacy(p, impl_->legacy_plan(p, plans, x, w, y), ops);
  } catch (...) {
    if (inserted) impl_->plans.erase(entry);  // a problem that never ran is not cached (cached_plan_count)
    throw;
  }
}

void Conv2d::set_tuning_cache(TuningCache* cache, bool reuse) { impl_->tuning = {cache, !reuse}; }

std::string Conv2d::algorithm(const Conv2dProblem& p) const {
  const auto it = impl_->plans.find(p);
  if (it == impl_->plans.end()) return {};
  const ProblemPlans& plans = it->second;
  if (plans.graph) return plans.graph->name();
  return plans.legacy ? std::string(algo_name(plans.legacy->algo)) + " (legacy API)" : std::string();
}

std::size_t Conv2d::cached_plan_count() const { return impl_->plans.size(); }

}  // namespace fx::gpu
