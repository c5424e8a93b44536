// The one name a group goes by: its id ("g:mul") on the graph and in tables, the same text in the name of every
// kernel it launches ("fx_g_mul", "cublaslt_g_mul"), so a kernel in a run report or a profiler's trace names
// the group on the graph. Derived here, CUDA-free, for the code generator, the executor, the GUI and the CLI.
#pragma once

#include <string>
#include <string_view>

#include "core/fusion/plan.h"
#include "core/graph/graph.h"

namespace fx {

// Letters, digits and '_' kept, anything else '_': a name usable in C source.
std::string c_identifier(std::string_view name);
// The group's id as a C identifier ("g:mul" -> "g_mul"). Where two ids of the plan map to one identifier
// ("g:a.b", "g:a_b"), the later group's gets its index appended ("g_a_b_7"), so such names do not clash.
std::string kernel_stem(const Plan& plan, int group_index);
// The name of a group's generated kernel: "fx_" + kernel_stem (a group of several kernels suffixes "_0", ...).
std::string generated_kernel_name(const Plan& plan, int group_index);
// The name of the group's first launch, as views show it: "fx_g_mul" (generated), "cublaslt_g_mm" (a group with
// a matmul, its GEMM first), "cudnn_g_conv" (a convolution), "cudnn_g_scores" / "fx_flash_g_scores" (an attention
// chain, one cuDNN or TF32 flash attention call), "cub_g_top" (sort, top-k); "" for a group that
// is not launched.
std::string group_kernel_name(const Graph& g, const Plan& plan, int group_index);

}  // namespace fx
