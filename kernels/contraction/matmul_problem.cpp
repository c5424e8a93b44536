// The vendor-free half of matmul.h: names, layout defaults, validation and the report line.
// Kept apart from matmul.cpp so the no-GPU tests exercise exactly what the executor reports.
#include <sstream>

#include "core/graph/dtype.h"
#include "kernels/common/ms_text.h"
#include "kernels/contraction/matmul.h"

namespace fx::gpu {
namespace {

bool is_gemm_type(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

// Rows and columns of A, B and C as stored (row-major), which is what leading dimensions are checked against.
struct StoredShape {
  std::int64_t rows = 0, cols = 0;
};
StoredShape stored_a(const MatmulProblem& p) { return p.transpose_a ? StoredShape{p.k, p.m} : StoredShape{p.m, p.k}; }
StoredShape stored_b(const MatmulProblem& p) { return p.transpose_b ? StoredShape{p.n, p.k} : StoredShape{p.k, p.n}; }

std::string check_ld(const char* name, std::int64_t ld, std::int64_t cols) {
  if (ld >= cols) return {};
  std::ostringstream s;
  s << name << " = " << ld << " is less than the " << cols << " columns it must span";
  return s.str();
}

std::string check_stride(const char* name, const std::optional<std::int64_t>& stride) {
  if (!stride || *stride >= 0) return {};
  return std::string(name) + " is negative";
}

}  // namespace

std::string_view matmul_epilogue_name(MatmulEpilogue e) {
  switch (e) {
    case MatmulEpilogue::none: return "none";
    case MatmulEpilogue::bias: return "bias";
    case MatmulEpilogue::relu: return "relu";
    case MatmulEpilogue::relu_bias: return "relu_bias";
    case MatmulEpilogue::gelu_tanh: return "gelu_tanh";
    case MatmulEpilogue::gelu_tanh_bias: return "gelu_tanh_bias";
  }
  return "?";
}

std::string_view cublaslt_epilogue_name(MatmulEpilogue e) {
  switch (e) {
    case MatmulEpilogue::none: return "DEFAULT";
    case MatmulEpilogue::bias: return "BIAS";
    case MatmulEpilogue::relu: return "RELU";
    case MatmulEpilogue::relu_bias: return "RELU_BIAS";
    case MatmulEpilogue::gelu_tanh: return "GELU";
    case MatmulEpilogue::gelu_tanh_bias: return "GELU_BIAS";
  }
  return "?";
}

MatmulLayout resolve_layout(const MatmulProblem& p) {
  MatmulLayout l;
  l.lda = p.lda.value_or(stored_a(p).cols);
  l.ldb = p.ldb.value_or(stored_b(p).cols);
  l.ldc = p.ldc.value_or(p.n);
  l.stride_a = p.batch_stride_a.value_or(stored_a(p).rows * l.lda);
  l.stride_b = p.batch_stride_b.value_or(stored_b(p).rows * l.ldb);
  l.stride_c = p.batch_stride_c.value_or(p.m * l.ldc);
  return l;
}

std::string validate_matmul(const MatmulProblem& p) {
  if (p.batch < 1 || p.m < 1 || p.n < 1 || p.k < 1) {
    std::ostringstream s;
    s << "batch, m, n and k must be positive (got " << p.batch << ", " << p.m << ", " << p.n << ", " << p.k << ")";
    return s.str();
  }
  // cuBLASLt's batch count is an int32 attribute.
  if (p.batch > INT32_MAX) return "batch exceeds the int32 batch count cuBLASLt takes";
  if (!is_gemm_type(p.a_type) || !is_gemm_type(p.b_type) || !is_gemm_type(p.c_type)) {
    return "matmul takes f32, f16 or bf16 operands";
  }
  if (p.a_type != p.b_type) {
    return std::string("A and B must have one type (got ") + std::string(dtype_name(p.a_type)) + " and " +
           std::string(dtype_name(p.b_type)) + ")";
  }
  // cuBLASLt's 32F compute type pairs 16-bit inputs with a 16-bit or f32 output, and f32 inputs with f32 only.
  if (p.c_type != p.a_type && p.c_type != DType::f32) {
    return std::string("a ") + std::string(dtype_name(p.a_type)) + " product cannot be written as " +
           std::string(dtype_name(p.c_type)) + " (only as " + std::string(dtype_name(p.a_type)) + " or f32)";
  }
  const MatmulLayout l = resolve_layout(p);
  for (const std::string& e : {check_ld("lda", l.lda, stored_a(p).cols), check_ld("ldb", l.ldb, stored_b(p).cols),
                               check_ld("ldc", l.ldc, p.n), check_stride("batch_stride_a", p.batch_stride_a),
                               check_stride("batch_stride_b", p.batch_stride_b),
                               check_stride("batch_stride_c", p.batch_stride_c)}) {
    if (!e.empty()) return e;
  }
  if (p.batch > 1 && l.stride_c < p.m * l.ldc) return "batch_stride_c makes output matrices overlap";
  return {};
}

std::string matmul_problem_text(const MatmulProblem& p) {
  const MatmulLayout l = resolve_layout(p);
  std::ostringstream s;
  s << "batch " << p.batch << " m " << p.m << " n " << p.n << " k " << p.k << " " << dtype_name(p.a_type) << " "
    << dtype_name(p.b_type) << " " << dtype_name(p.c_type) << " transpose " << p.transpose_a << p.transpose_b
    << " tf32 " << p.allow_tf32 << " epilogue " << static_cast<int>(p.epilogue) << " ld " << l.lda << "," << l.ldb
    << "," << l.ldc << " strides " << l.stride_a << "," << l.stride_b << "," << l.stride_c;
  // Only where set, so that the text of every problem without a residual (a tuning cache's keys) stays as it was.
  if (p.residual) s << " residual 1";
  return s.str();
}

std::string describe_matmul(const MatmulProblem& p) {
  std::ostringstream s;
  s << "cuBLASLt ";
  if (p.epilogue == MatmulEpilogue::none) {
    s << (p.residual ? "GEMM" : "GEMM, no epilogue");
  } else {
    s << cublaslt_epilogue_name(p.epilogue) << " epilogue";
    if (p.epilogue == MatmulEpilogue::gelu_tanh || p.epilogue == MatmulEpilogue::gelu_tanh_bias) {
      s << " (tanh approximation)";
    }
  }
  if (p.residual) s << ", residual added as C (beta = 1)";
  if (p.alpha != 1.0f) s << ", alpha " << p.alpha;
  if (p.a_type == DType::f32) {
    s << (p.allow_tf32 ? ", TF32 tensor cores" : ", FP32 (no TF32)");
  } else {
    s << ", " << (p.a_type == DType::bf16 ? "BF16" : "FP16") << " tensor cores, FP32 accumulation";
    if (p.c_type == DType::f32) s << ", f32 output";
  }
  if (p.batch > 1) {
    const MatmulLayout l = resolve_layout(p);
    s << ", batch " << p.batch;
    if (l.stride_a == 0) s << " (A broadcast)";
    if (l.stride_b == 0) s << " (B broadcast)";
  }
  return s.str();
}

std::string describe_search_origin(std::size_t chosen, std::size_t offered, std::size_t listed, std::size_t size) {
  if (size == offered) {
    return "algorithm " + std::to_string(chosen + 1) + " of the heuristic's " + std::to_string(offered) +
           " by timing: ";
  }
  std::string pool = "the heuristic's " + std::to_string(offered);
  if (listed > offered) {
    pool += ", " + std::to_string(listed - offered) + " more that it offers one member of the batch";
  }
  if (size > listed) {
    pool += " and " + std::to_string(size - listed) +
            " more: their algorithms with the cluster shape left to cuBLASLt, and with each tile and stage count";
  }
  const std::string from = chosen < offered  ? "the heuristic's #" + std::to_string(chosen + 1)
                           : chosen < listed ? std::string("one the heuristic offers one member of the batch")
                                             : std::string("not among the heuristic's");
  return "the fastest of " + std::to_string(size) + " configurations by timing (" + pool + "): " + from + ", ";
}

std::string describe_finalist_choice(std::size_t chosen, const std::string& algo, const std::vector<double>& plan_ms,
                                     const std::string& timed_as, bool last_is_heuristics_first) {
  const bool appended = last_is_heuristics_first && !plan_ms.empty();
  const std::size_t best = appended ? plan_ms.size() - 1 : plan_ms.size();  // the search's best ones
  auto name = [&](std::size_t i) {
    if (i == 0) return std::string("the search's pick");
    if (appended && i == plan_ms.size() - 1) return std::string("the heuristic's first");
    return "its #" + std::to_string(i + 1);
  };
  std::string others;
  for (std::size_t i = 0; i < plan_ms.size(); ++i) {
    if (i == chosen) continue;
    others += (others.empty() ? "" : ", ") + name(i) + " " + ms_text(plan_ms[i]);
  }
  const std::string of = timed_as.empty() ? "" : ", " + timed_as;
  const std::string timed = "the search's " + std::to_string(best) + " best" +
                            (appended ? " and the heuristic's first" : "") + " timed again in the plan: ";
  if (chosen == 0) return timed + "its pick stays (" + ms_text(plan_ms[0]) + of + "; " + others + ")";
  return timed + name(chosen) + " runs, " + algo + " (" + ms_text(plan_ms[chosen]) + of + "; " + others + ")";
}

}  // namespace fx::gpu
