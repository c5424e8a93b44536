// Internal to kernels/executor: running the library calls of contraction groups (cuBLASLt, cuDNN) as steps
// of a plan, next to the generated kernels. Plan decisions live in contraction_plan.h (no CUDA).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/fusion/plan.h"
#include "kernels/contraction/conv.h"
#include "kernels/contraction/device_memory.h"
#include "kernels/contraction/matmul.h"
#include "kernels/contraction/space_to_depth.h"
#include "kernels/executor/contraction_plan.h"
#include "kernels/executor/executor.h"
#include "kernels/executor/executor_internal.h"

namespace fx::gpu {

// One cuBLASLt handle and one cuDNN handle per executor (both bound to its one stream), made at the first
// preparation (prepare_library_steps) and shared by every library step.
struct ContractionRuntime {
  std::unique_ptr<Matmul> matmul;
  std::unique_ptr<Conv2d> conv;
  std::unique_ptr<Attention> attention;
  std::unique_ptr<MatmulGraph> matmul_graph;
};

// A step that is a library call. Buffers made at preparation (stacked weights, folded conv weights and bias)
// belong to the step; the values it reads and writes live in the executor's arena.
//
// A convolution may also run channels-last: x converted to NHWC by a generated tiled transpose, cuDNN's NHWC
// kernels (for some shapes twice as fast as its NCHW ones: docs/benchmarks.md, conv_bn_relu), y converted back.
// Once tuning is done, a plan keeps values channels-last between such steps (channels_last.h), converting a
// value only for a reader that needs NCHW; the call then works on the plan's NHWC buffers.
// Layout tuning times the two ways (tune_layouts) and, when NHWC wins, the plan's step becomes three steps
// sharing this object (LibraryLaunch::part). Offered for ungrouped convolutions whose weight is a graph input,
// permuted to [K, R, S, C] once at preparation as the batchnorm is folded; the scratch NHWC copies of x and y
// belong to the step. A strided convolution over few channels (space_to_depth.h) runs that way in its
// space-to-depth form instead: its x rearranged into blocks (the to_nhwc part, from x's NCHW buffer into the
// step's own scratch, always: no other step reads that form) and its weights rearranged at preparation.
class LibraryStep {
 public:
  LibraryStep(LibraryCall call, std::shared_ptr<ContractionRuntime> runtime)
      : call_(std::move(call)), runtime_(std::move(runtime)) {}
  ~LibraryStep() = default;
  LibraryStep(const LibraryStep&) = delete;
  LibraryStep& operator=(const LibraryStep&) = delete;

  const LibraryCall& call() const { return call_; }
  std::string library() const {
    if (runs_tf32_attention()) return kBuiltInKernelLibrary;
    const bool cudnn = call_.kind == LibraryCallKind::conv2d || call_.kind == LibraryCallKind::attention ||
                       call_.kind == LibraryCallKind::matmul_graph;
    return cudnn ? "cuDNN" : "cuBLASLt";
  }
  bool runs_tf32_attention() const { return call_.runs_tf32_attention(); }
  // The report's library path in plan `plan`, with the algorithm it ran (cuBLASLt's timed choice, cuDNN's), once
  // it has run; for a conversion part, what the conversion does.
  std::string describe(const PlanBuffers& b, CallPart part = CallPart::whole) const;

  // A horizontal GEMM that can run as its parts, each a call of its own (LibraryCall::parts): layout tuning
  // times the two ways and keeps the faster (tune_layouts).
  bool offers_split() const { return call_.kind == LibraryCallKind::horizontal_matmul && !call_.parts.empty(); }
  // A GEMM call (matmul, or horizontal_matmul's one call): the search's finalists for its problem, 0 before its
  // first launch (Matmul::finalist_count); launching finalist i; keeping finalist i for every launch after, with
  // the times the plan's tuning measured (of `timed_as` where that is more than this call) for the report.
  bool is_gemm() const {
    return call_.kind == LibraryCallKind::matmul || call_.kind == LibraryCallKind::horizontal_matmul;
  }
  std::size_t gemm_finalists(const PlanBuffers& b) const;
  std::string gemm_finalists_id(const PlanBuffers& b) const;  // Matmul::finalists_id
  void launch_finalist(const PlanBuffers& b, cudaStream_t stream, std::size_t i) const;
  void choose_finalist(const PlanBuffers& b, std::size_t i, const std::vector<double>& ms,
                       const std::string& timed_as = "") const;
  MatmulProblem gemm_problem(const PlanBuffers& b) const;
  // Whether this call can run channels-last (see above), and the compiled conversions once they are loaded.
  bool offers_nhwc(const Graph& g) const;
  // Generates the conversions (named after the group, as its other kernels are) in every layout; the plans'
  // batch compile loads them (add_nhwc_loads adds those not loaded yet to it).
  void generate_nhwc(const Graph& g);
  void add_nhwc_loads(std::vector<KernelLoad>& batch);
  bool nhwc_ready() const { return !nhwc_[0].empty() && weights_nhwc_.get() != nullptr; }
  // Whether the channels-last way is the space-to-depth form (decided when it is generated).
  bool space_to_depth() const { return space_to_depth_.has_value(); }
  // Once tuning kept the NCHW call: frees the NHWC scratch and weights, and preparation makes them no more.
  void drop_nhwc();
  // Once the plan keeps values channels-last across steps (channels_last.h): the NHWC call reads x from and
  // writes y to the plan's NHWC buffers of those values, so the call's own scratch is freed and made no more
  // (but for the space-to-depth form's rearranged x, which stays the step's own).
  void use_plan_nhwc_buffers();
  // The generated conversion kernel of a part (to_nhwc, to_nchw), in its installed layout, for the step that
  // launches it.
  const GeneratedKernel& conversion(CallPart part) const;
  // The conversions' layouts (GeneratedKernel::alternatives; layout 0 the installed one): how many there are
  // (of the conversion with more; the other runs its last where it has fewer), what layout j is, and making j
  // the installed one, which launch() then runs.
  // The compiled function of a part's installed layout (the step that launches the conversion holds it).
  cudaKernel_t conversion_function(CallPart part) const;
  // Names a plan step after a part's conversion: its kernel's name, kind, layout and launch shape, and why that
  // layout (chosen with the convolution's).
  void describe_conversion(CallPart part, StepInfo& step) const;
  std::size_t conversion_layouts() const;
  std::string conversion_layout_name(std::size_t j) const;
  void install_conversion_layout(std::size_t j);

  // What decides the DRAM traffic of part `part` of this call, as one line, once it has run (step_identity.cpp):
  // the problem in full, the operands' alignments and the algorithm chosen for them. Empty where that is not
  // established (attention) and for a conversion part (its generated kernel's identity is the step's).
  std::string measurement_identity(const PlanBuffers& b, CallPart part) const;

  // Device bytes this step allocates outside the executor's arena at preparation: stacked or folded weights, the
  // summed bias, and, while the channels-last way is loaded and not dropped, the permuted (or rearranged) weights
  // and the NHWC copies (or rearrangement) of x and y. Known before preparation, so the run can check free memory
  // for them up front.
  std::int64_t prepared_bytes(const Graph& g) const;
  // Frees what prepare() made (the run is over); a later prepare() makes it again.
  void release_prepared();

  // Once the graph inputs are on the device: stacks horizontal weights, folds batchnorm, sums biases; permutes
  // the convolution's weights to NHWC and allocates its scratch when its conversions are loaded.
  // `b`: the unfused plan's buffers, where the graph's inputs are (both plans share them).
  void prepare(const PlanBuffers& b, cudaStream_t stream);
  // A conversion part runs in conversion layout `layout` (0: the installed one).
  void launch(const PlanBuffers& b, cudaStream_t stream, CallPart part = CallPart::whole, std::size_t layout = 0) const;

 private:
  MatmulProblem horizontal_problem(const PlanBuffers& b) const;
  struct GemmOperands {
    const void* a;
    const void* b;
    EpilogueInputs epilogue;  // the bias vector and the residual (cuBLASLt's C), where the call has them
    void* c;
  };
  GemmOperands gemm_operands(const PlanBuffers& b) const;
  Matmul& searched_matmul() const;  // the handle whose plan cache holds the finalists
  void prepare_nhwc(const PlanBuffers& b);
  void free_nhwc();  // the permuted weights and the NHWC scratch
  // Where the NHWC x and y are: the plan's buffers of those values (use_plan_nhwc_buffers), else the scratch.
  std::pair<void*, void*> nhwc_x_y(const PlanBuffers& b) const;

  LibraryCall call_;
  std::shared_ptr<ContractionRuntime> runtime_;
  contraction_detail::DeviceMemory weights_, bias_;
  // Channels-last: the problem (the space-to-depth form's, where it has one), [0] x -> NHWC (or x's
  // rearrangement) and [1] y -> NCHW (each compiled in every layout, the installed one first), the permuted
  // weights, the scratch x and y.
  std::optional<SpaceToDepth> space_to_depth_;
  Conv2dProblem nhwc_problem_;
  GeneratedKernel nhwc_kernels_[2];
  std::vector<LoadedKernel> nhwc_[2];
  contraction_detail::DeviceMemory weights_nhwc_, x_nhwc_, y_nhwc_;
  bool nhwc_dropped_ = false;
  bool plan_buffers_ = false;  // use_plan_nhwc_buffers
};

// Names a plan step after a library call: its name, nodes, the values it reads and writes, and their bytes.
void name_step_after(const Graph& g, const LibraryCall& call, StepInfo& s);

// Adds a contraction group's steps to plan p: its library calls, then generated kernels for the elementwise
// nodes no epilogue absorbed; notes say why a group takes more than one launch. An attention group whose kernel
// cannot run it on this device (no cuDNN engine, no TF32 kernel code) runs its chain op by op, and a note says why.
void append_contraction_steps(CompiledProgram& im, PlanId p, const Group& group, const std::vector<NodeId>& nodes,
                              const std::string& stem);
// Runs every library step's preparation (after fill_inputs, before any launch).
void prepare_library_steps(CompiledProgram& im);
// What the plans' library calls allocate outside the arena: each call's prepared_bytes (a call shared by
// several steps counted once) and the workspaces of the cuBLASLt and cuDNN handles they use.
std::int64_t library_step_bytes(const CompiledProgram& im);
// Frees every library step's prepared buffers.
void release_library_steps(CompiledProgram& im);

}  // namespace fx::gpu
