// The tuning cache's keys of the choices the layout tuning pass makes between ways of running a library call:
// the problem in full (every field that can change which kernels run and how fast), the candidates (their
// sources, the search's finalists), and the context they were timed in (tuning_context). Plain C++, so what
// changes a key is tested on the CPU (tests/kernels/test_timed_choice.cpp).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "kernels/contraction/conv.h"
#include "kernels/contraction/matmul.h"
#include "kernels/tuning/tuning_cache.h"

namespace fx::gpu {

// Every field of a convolution problem, as one line.
std::string conv_problem_text(const Conv2dProblem& p);

// A convolution's NCHW call against its channels-last way: the problem, the conversions' sources in each of their
// layouts (x's, then y's), whether the NHWC call is also timed alone (values may stay NHWC around it), and the
// context.
TuningKey conv_layout_key(const Conv2dProblem& p, std::span<const std::string> conversion_sources,
                          bool nhwc_alone_timed, const std::string& context);

// One way of a horizontal GEMM: its call's problem, its search's finalists (Matmul::finalists_id) and whether
// they are timed here (not where one serves or the problem's were timed in a plan already).
struct GemmWay {
  MatmulProblem problem;
  std::string finalists;
  bool timed_here = false;
};

// A horizontal GEMM's one strided-batched call against its `parts` run alone (each of the part problem).
TuningKey horizontal_key(const GemmWay& merged, const GemmWay& part, std::size_t parts, const std::string& context);

}  // namespace fx::gpu
