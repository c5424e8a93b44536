// How the executor runs a group that holds a contraction (matmul, conv2d): which cuBLASLt/cuDNN calls, which
// epilogue each absorbs, and which of the group's elementwise nodes are left for one generated kernel.
// Pure decisions on the graph (no CUDA), so the no-GPU tests check exactly what the executor will launch.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/fusion/attention.h"
#include "core/graph/graph.h"
#include "kernels/contraction/attention.h"
#include "kernels/contraction/matmul_graph.h"
#include "kernels/contraction/conv.h"
#include "kernels/contraction/matmul.h"

namespace fx::gpu {

// TF32 is what PyTorch and cuDNN use for f32 convolutions by default (torch.backends.cudnn.allow_tf32), and
// what both of our plans use for f32 matmul and conv; outputs downstream of one are checked at this tolerance.
constexpr double kTf32Tolerance = 2e-3;

enum class LibraryCallKind : std::uint8_t {
  matmul,             // one (batched) cuBLASLt GEMM, perhaps with an epilogue and a residual as C
  horizontal_matmul,  // P matmuls sharing their left operand: one strided-batched GEMM on stacked weights
  conv2d,             // one cuDNN convolution, perhaps with bias (+ ReLU) fused and a batchnorm folded in
  attention,          // a whole attention chain as one call: cuDNN's fused attention, or for f32 the TF32 kernel
  matmul_graph,       // one cuDNN matmul graph: a half-precision matmul and a tail cuBLASLt's epilogue lacks
};
std::string_view library_call_kind_name(LibraryCallKind k);

// One launch through a vendor library.
struct LibraryCall {
  LibraryCallKind kind = LibraryCallKind::matmul;
  std::string name;             // report name, e.g. "cublaslt_g_mm" (core/fusion/kernel_names.h)
  std::vector<NodeId> nodes;    // graph nodes it computes (contractions and the epilogue it absorbed)
  std::vector<ValueId> inputs;  // graph values it reads from the arena
  std::vector<ValueId> outputs; // values it writes (horizontal: one per part, in part order)
  std::string description;      // library path for the report: describe_matmul / describe_conv2d

  // matmul and horizontal_matmul. For horizontal, `matmul` is the stacked problem: batch = parts, A broadcast
  // (stride 0), B the [P, K, N] stacked weights; the output batch stride is the spacing of the part outputs
  // in the arena, known at launch.
  MatmulProblem matmul;
  ValueId a = -1;
  std::vector<ValueId> b;  // one weight per part
  std::optional<ValueId> bias;
  std::optional<ValueId> residual;  // read as cuBLASLt's C with beta = 1 (matmul.residual); matmul only
  // horizontal_matmul: each part as a call of its own (kind matmul, in part order), the way the group runs
  // where the merged call is the slower on the device (layout tuning times the two: layout_tuning.h).
  std::vector<LibraryCall> parts;

  // conv2d.
  Conv2dProblem conv;
  ValueId x = -1, w = -1;
  std::vector<ValueId> bias_terms;       // per-channel vectors summed into the bias (conv's own, a channel add)
  std::optional<NodeId> folded_batchnorm;  // folded into weights and bias when the plan is prepared
  // matmul_graph: `a`, `b[0]` and, per tail step, the tensor it reads (a bias or residual; none for the others).
  MatmulGraphProblem graph;
  std::vector<std::optional<ValueId>> graph_operands;
  // attention: Q, K, V and the optional mask; `nodes` is the whole chain; the kernel core chose for it.
  AttentionProblem attention;
  ValueId q = -1, k = -1, v = -1;
  std::optional<ValueId> mask;
  AttentionKernel attention_kernel = AttentionKernel::cudnn_flash;

  // An attention call the TF32 flash attention kernel (flash_attention_tf32.h) runs, not cuDNN.
  bool runs_tf32_attention() const {
    return kind == LibraryCallKind::attention && attention_kernel == AttentionKernel::tf32_flash;
  }

  // True when the call needs a bias buffer built at preparation (summed terms, folded batchnorm, or a zero
  // bias because cuDNN's fused ReLU path always adds one).
  bool prepared_bias() const { return conv.epilogue != ConvEpilogue::none && (bias_terms.size() != 1 || folded_batchnorm); }
};

struct ContractionGroupPlan {
  std::vector<LibraryCall> calls;  // in launch order
  std::vector<NodeId> rest;        // elementwise nodes left for generated kernel(s), run after the calls
  std::vector<ValueId> rest_outputs;
  std::vector<std::string> notes;  // one line each: why more than one launch, what was folded or merged
};

bool has_contraction(const Graph& g, std::span<const NodeId> nodes);

// Plans one group: nodes (any order) and the values it must write (the plan's GroupIo::outputs). `stem` (core's
// kernel_stem of the group) names the calls. Throws std::invalid_argument for work it cannot run (a contraction prologue inside the group,
// a batch broadcast cuBLASLt's strided batches cannot express, ...), with a message naming the node. A matmul whose
// tail cuBLASLt cannot take whole (or a DAG after it) is one cuDNN matmul graph where core's cudnn_matmul_tail allows it, unless
// `cudnn_graph` is false (cuDNN offers no engine for it on the device: the cuBLASLt call and generated kernels).
ContractionGroupPlan plan_contraction_group(const Graph& g, std::span<const NodeId> nodes,
                                            const std::vector<ValueId>& outputs, const std::string& stem,
                                            bool cudnn_graph = true);

// The parts an attention group runs as where its kernel cannot run it on the device at hand (no cuDNN engine, no
// TF32 kernel code for this GPU): each
// op of the chain alone (K's folded transpose with the scores matmul), in order, each writing its value.
std::vector<std::vector<NodeId>> attention_fallback_parts(const Graph& g, const LibraryCall& call);

// Per graph output downstream of an f32 contraction: the TF32 tolerance, 2e-3 * sqrt(the longest chain of TF32
// contractions above it), capped at 1e-2, where it is looser than the dtype's. Outputs not listed keep
// tolerance_for(dtype).
std::map<ValueId, double> tf32_output_tolerances(const Graph& g);
// Outputs that depend on an attention chain in f16/bf16 are compared at twice their type's tolerance: the
// unfused chain stores its scores in the half type, and the exponent turns a score's rounding error (2^-9 of
// its size) into a relative error of its probability, where the fused call keeps the scores in f32.
std::map<ValueId, double> attention_output_tolerances(const Graph& g);

}  // namespace fx::gpu
