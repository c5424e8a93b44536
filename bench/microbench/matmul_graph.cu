// Micro-benchmark behind docs/engine.md (why an erf `gelu` after a matmul stays a second kernel): the
// mlp_gelu_erf_bf16 sample's x[8192,4096] @ W[4096,4096] + b -> gelu (erf), bf16 with f32 accumulation, through
// cuDNN's graph (backend) API as one operation graph (matmul -> add bias -> GELU_FWD), and the matmul alone, each
// configuration the heuristics offer finalized (with the seconds that took: a run-time compiled engine compiles
// then) and timed. The plan it is weighed against, cuBLASLt's GEMM with its bias epilogue then one generated erf
// GELU kernel, is `fusion-cli run sample_graphs/mlp_gelu_erf_bf16.json --auto`.
// nvcc -O2 -std=c++17 -arch=sm_90 -Wno-deprecated-declarations bench/microbench/matmul_graph.cu -lcudnn -o matmul_graph
#include <cstdint>
#include <vector>

#include "cudnn_graph.cuh"

namespace {
constexpr std::int64_t M = 8192, K = 4096, N = 4096;

// A row-major [1, rows, cols] tensor.
Desc tensor(std::int64_t uid, std::int64_t rows, std::int64_t cols, cudnnDataType_t type, bool is_virtual,
            std::int64_t row_stride = -1) {
  Desc d = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const std::int64_t dims[3] = {1, rows, cols};
  const std::int64_t strides[3] = {rows * cols, row_stride < 0 ? cols : row_stride, 1};
  const std::int64_t align = 16;
  const bool v = is_virtual;
  set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, type);
  CD(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 3, dims));
  CD(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 3, strides));
  set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, uid);
  set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, align);
  set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, v);
  CD(cudnnBackendFinalize(d));
  return d;
}

void run_graph(bool fused, void* x, void* w, void* b, void* y, void* ws, std::size_t ws_bytes) {
  const cudnnDataType_t bf16 = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
  Desc xd = tensor('x', M, K, bf16, false), wd = tensor('w', K, N, bf16, false), yd = tensor('y', M, N, bf16, false);
  Desc bd = tensor('b', 1, N, bf16, false);
  Desc product = fused ? tensor('p', M, N, f32, true) : yd;
  Desc biased = tensor('d', M, N, f32, true);
  Desc mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, f32);
  CD(cudnnBackendFinalize(mm));
  Desc op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, xd);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, wd);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, product);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
  CD(cudnnBackendFinalize(op));
  time_graph(fused ? "matmul + bias + gelu (erf), bf16" : "matmul alone, bf16", op, product, bd, biased, yd,
             CUDNN_POINTWISE_GELU_FWD, fused, x, w, b, y, ws, ws_bytes, 4);
}
}  // namespace

int main() {
  const Buffers m = start((size_t)M * K * 2, (size_t)K * N * 2, N * 2, (size_t)M * N * 2);
  run_graph(false, m.x, m.w, m.b, m.y, m.ws, m.ws_bytes);
  run_graph(true, m.x, m.w, m.b, m.y, m.ws, m.ws_bytes);
  return 0;
}
