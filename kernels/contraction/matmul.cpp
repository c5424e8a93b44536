// cuBLASLt behind fx::gpu::Matmul. Row-major Y = X*W is computed as column-major Y^T = W^T * X^T
// (cuBLAS m = N, n = M, k = K): the column-major view of a row-major matrix is its transpose, so no data
// moves. CUBLASLT_ORDER_ROW would be the direct route, but with bias epilogues it returns NOT_SUPPORTED
// with 0 algorithms.
// The algorithm search is in matmul_search.cpp, what a configuration is in matmul_algo.cpp (matmul_plan.h).
#include <stdexcept>
#include <string>
#include <vector>

#include "core/graph/content_hash.h"
#include "kernels/contraction/matmul_plan.h"

namespace fx::gpu {
namespace matmul_detail {
namespace {

cublasLtEpilogue_t lt_epilogue(MatmulEpilogue e) {
  switch (e) {
    case MatmulEpilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case MatmulEpilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case MatmulEpilogue::relu: return CUBLASLT_EPILOGUE_RELU;
    case MatmulEpilogue::relu_bias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case MatmulEpilogue::gelu_tanh: return CUBLASLT_EPILOGUE_GELU;
    case MatmulEpilogue::gelu_tanh_bias: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

}  // namespace

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: throw std::invalid_argument("matmul takes f32, f16 or bf16 operands");
  }
}

std::uint32_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

PlanKey key_of(const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in, const void* c) {
  return PlanKey{p, alignment_of(a), alignment_of(b), alignment_of(c),
                 epilogue_has_bias(p.epilogue) ? alignment_of(in.bias) : 0u,
                 p.residual ? alignment_of(in.residual) : 0u};
}

LayoutPtr make_layout(DType t, std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t batch,
                      std::int64_t stride) {
  cublasLtMatrixLayout_t raw = nullptr;
  FX_CUDA_CALL(cublasLtMatrixLayoutCreate(&raw, cuda_type(t), static_cast<std::uint64_t>(cols),
                                          static_cast<std::uint64_t>(rows), ld));
  LayoutPtr layout(raw);
  if (batch > 1) {
    const auto count = static_cast<std::int32_t>(batch);
    FX_CUDA_CALL(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    FX_CUDA_CALL(
        cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return layout;
}

cublasComputeType_t compute_type(const MatmulProblem& p) {
  return p.a_type == DType::f32 && p.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

DescPtr make_desc(const MatmulProblem& p) {
  cublasLtMatmulDesc_t raw = nullptr;
  FX_CUDA_CALL(cublasLtMatmulDescCreate(&raw, compute_type(p), CUDA_R_32F));
  DescPtr desc(raw);
  // cuBLAS A is W and cuBLAS B is X (Y^T = W^T X^T): each is transposed exactly when the caller's is.
  set_desc<std::int32_t>(raw, CUBLASLT_MATMUL_DESC_TRANSA, p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc<std::int32_t>(raw, CUBLASLT_MATMUL_DESC_TRANSB, p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc<std::uint32_t>(raw, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(p.epilogue));
  if (epilogue_has_bias(p.epilogue)) {
    set_desc<std::int32_t>(raw, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cuda_type(p.c_type));
    set_desc<std::int64_t>(raw, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 0);  // one bias for every batch entry
  }
  return desc;
}

Plan make_plan(const PlanKey& key, const void* bias) {
  const MatmulProblem& p = key.problem;
  const MatmulLayout l = resolve_layout(p);
  Plan plan;
  plan.desc = make_desc(p);
  // The heuristic reads the bias pointer's value to learn its alignment, so it must be set before the query.
  if (epilogue_has_bias(p.epilogue)) set_desc<const void*>(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  plan.w_layout = p.transpose_b ? make_layout(p.b_type, p.n, p.k, l.ldb, p.batch, l.stride_b)
                                : make_layout(p.b_type, p.k, p.n, l.ldb, p.batch, l.stride_b);
  plan.x_layout = p.transpose_a ? make_layout(p.a_type, p.k, p.m, l.lda, p.batch, l.stride_a)
                                : make_layout(p.a_type, p.m, p.k, l.lda, p.batch, l.stride_a);
  plan.y_layout = make_layout(p.c_type, p.m, p.n, l.ldc, p.batch, l.stride_c);
  return plan;
}

}  // namespace matmul_detail

using namespace matmul_detail;

const Plan& Matmul::Impl::plan_for(const MatmulProblem& p, const Operands& ops, const void* bias) {
  PlanKey key = key_of(p, ops.a, ops.b, {bias, ops.residual}, ops.c);
  auto it = plans.find(key);
  if (it == plans.end()) {
    Plan plan = make_plan(key, bias);
    choose_algorithm(plan, key, ops);
    it = plans.emplace(std::move(key), std::move(plan)).first;
  }
  return it->second;
}

Matmul::Matmul() : impl_(std::make_unique<Impl>()) {
  contraction_detail::require_cuda_device();
  FX_CUDA_CALL(cublasLtCreate(&impl_->handle));
  impl_->workspace = contraction_detail::DeviceMemory(kWorkspaceBytes);
}

Matmul::~Matmul() = default;
Matmul::Matmul(Matmul&&) noexcept = default;
Matmul& Matmul::operator=(Matmul&&) noexcept = default;

void Matmul::run(const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in, void* c,
                 CUstream_st* stream) {
  if (std::string error = validate_matmul(p); !error.empty()) throw std::invalid_argument("matmul: " + error);
  if (epilogue_has_bias(p.epilogue) != (in.bias != nullptr)) {
    throw std::invalid_argument(std::string("matmul: epilogue ") + std::string(matmul_epilogue_name(p.epilogue)) +
                                (in.bias ? " takes no bias" : " needs a bias pointer"));
  }
  if (p.residual != (in.residual != nullptr)) {
    throw std::invalid_argument(p.residual ? "matmul: a problem with a residual needs its pointer"
                                           : "matmul: a residual pointer for a problem without one");
  }
  if (!a || !b || !c) throw std::invalid_argument("matmul: null operand pointer");
  // The search launches the product many times: a residual in Y's own buffer would be added again each time.
  if (in.residual == c) throw std::invalid_argument("matmul: the residual must not be the output's buffer");
  const Plan& plan = impl_->plan_for(p, Operands{a, b, in.residual, c, stream}, in.bias);
  impl_->launch(plan, plan.algo, p.alpha, a, b, in, c, stream);
}

void Matmul::run_finalist(std::size_t i, const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in,
                          void* c, CUstream_st* stream) {
  if (!a || !b || !c) throw std::invalid_argument("matmul: null operand pointer");
  const auto it = impl_->plans.find(key_of(p, a, b, in, c));
  if (it == impl_->plans.end() || i >= it->second.finalists.size()) {
    throw std::logic_error("matmul: finalist " + std::to_string(i) + " of a problem whose search kept " +
                           std::to_string(it == impl_->plans.end() ? 0 : it->second.finalists.size()));
  }
  impl_->launch(it->second, it->second.finalists[i], p.alpha, a, b, in, c, stream);
}

void Matmul::Impl::launch(const Plan& plan, const cublasLtMatmulAlgo_t& algo, float alpha, const void* a, const void* b,
                          EpilogueInputs in, void* c, CUstream_st* stream) {
  // The bias pointer is per call; the plan's descriptor only fixed its alignment class.
  if (in.bias) set_desc<const void*>(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, in.bias);
  // C has Y's layout (row-major Y is column-major Y^T, and so is the residual), so one descriptor serves both.
  const CInput cin = c_input(in.residual, c);
  FX_CUDA_CALL(cublasLtMatmul(handle, plan.desc.get(), &alpha, b, plan.w_layout.get(), a, plan.x_layout.get(),
                              &cin.beta, cin.c, plan.y_layout.get(), c, plan.y_layout.get(), &algo, workspace.get(),
                              workspace.bytes(), stream));
}

std::size_t Matmul::cached_plan_count() const { return impl_->plans.size(); }

void Matmul::set_tuning_cache(TuningCache* cache, bool reuse) {
  impl_->tuning = cache;
  impl_->reuse_tuning = reuse;
}

std::string Matmul::algorithm_choice(const MatmulProblem& p) const {
  for (const auto& [key, plan] : impl_->plans) {
    if (key.problem == p) return plan.choice;
  }
  return {};
}

std::size_t Matmul::finalist_count(const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in,
                                   const void* c) const {
  const auto it = impl_->plans.find(key_of(p, a, b, in, c));
  return it == impl_->plans.end() ? 0 : it->second.finalists.size();
}

std::string Matmul::finalists_id(const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in,
                                 const void* c) const {
  const auto it = impl_->plans.find(key_of(p, a, b, in, c));
  if (it == impl_->plans.end() || it->second.finalists.empty()) return {};
  std::string words;
  for (const auto& f : it->second.finalists) words += algo_json(f).dump();
  return hex64(fnv1a64(words));
}

void Matmul::choose_finalist(std::size_t i, const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in,
                             const void* c, const std::vector<double>& plan_ms, const std::string& timed_as) {
  const auto it = impl_->plans.find(key_of(p, a, b, in, c));
  if (it == impl_->plans.end() || i >= it->second.finalists.size()) {
    throw std::logic_error("matmul: no finalist " + std::to_string(i) + " to choose");
  }
  Plan& plan = it->second;
  plan.algo = plan.finalists[i];
  plan.choice = plan.search_choice + "; " +
                describe_finalist_choice(i, describe_algo(plan.algo), plan_ms, timed_as,
                                         plan.last_finalist_is_heuristics_first);
}

}  // namespace fx::gpu
