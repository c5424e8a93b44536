// Micro-benchmark behind docs/benchmarks.md (conv_bn_relu): the sample's 3x3 conv + bias + ReLU
// (x[32,64,56,56] f32, 64 filters, pad 1, TF32 allowed) through cuDNN's graph (backend) API, the way PyTorch's
// cuDNN v9 path runs convolutions: one operation graph (conv -> add bias -> relu), every engine configuration the
// heuristics offer (modes A and FALLBACK), each finalized into a plan and timed after a 256 MB flush; for the
// layouts NHWC -> NHWC, NCHW -> NCHW and NHWC -> NCHW, fused and conv alone. Prints each configuration's engine
// (global index), notes (runtime compiled, tensor cores), knob choices and time; conv_algos.cu times the legacy
// calls alike. Heuristic modes A and B rank the same configurations differently; FALLBACK lists the slow safe ones.
// nvcc -O2 -std=c++17 -arch=sm_90 -Wno-deprecated-declarations bench/microbench/conv_graph.cu -lcudnn -o conv_graph
#include <cstdint>
#include <string>
#include <vector>

#include "cudnn_graph.cuh"

namespace {
constexpr std::int64_t N = 32, C = 64, H = 56, W = 56, K = 64, R = 3;

// dims in NCHW order; channels_last picks the strides.
Desc tensor(std::int64_t uid, std::int64_t n, std::int64_t c, std::int64_t hh, std::int64_t ww, bool channels_last, bool is_virtual) {
  Desc d = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnDataType_t f = CUDNN_DATA_FLOAT;
  const std::int64_t dims[4] = {n, c, hh, ww};
  const std::int64_t nchw[4] = {c * hh * ww, hh * ww, ww, 1}, nhwc[4] = {c * hh * ww, 1, ww * c, c};
  const std::int64_t align = 16;
  const bool v = is_virtual;
  set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, f);
  CD(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
  CD(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, channels_last ? nhwc : nchw));
  set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, uid);
  set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, align);
  set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, v);
  CD(cudnnBackendFinalize(d));
  return d;
}

void run_graph(const char* what, bool x_nhwc, bool y_nhwc, bool fused, void* x, void* w, void* b, void* y, void* ws, std::size_t ws_bytes) {
  Desc xd = tensor('x', N, C, H, W, x_nhwc, false);
  Desc wd = tensor('w', K, C, R, R, x_nhwc, false);
  Desc bd = tensor('b', 1, K, 1, 1, y_nhwc, false);
  Desc yd = tensor('y', N, K, H, W, y_nhwc, false);
  Desc conv_out = fused ? tensor('c', N, K, H, W, y_nhwc, true) : yd;
  Desc biased = tensor('d', N, K, H, W, y_nhwc, true);
  Desc cd = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const std::int64_t dims = 2, one2[2] = {1, 1};
  set(cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  set(cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, CUDNN_CROSS_CORRELATION);
  set(cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, dims);
  for (auto a : {CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                 CUDNN_ATTR_CONVOLUTION_POST_PADDINGS}) {
    CD(cudnnBackendSetAttribute(cd, a, CUDNN_TYPE_INT64, 2, one2));
  }
  CD(cudnnBackendFinalize(cd));
  Desc conv = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  set_desc(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, xd);
  set_desc(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, wd);
  set_desc(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, conv_out);
  set_desc(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, cd);
  const float alpha = 1.0f, beta = 0.0f;
  set(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, alpha);
  set(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, beta);
  CD(cudnnBackendFinalize(conv));
  time_graph(std::string(what) + (fused ? " (conv + bias + relu)" : " (conv)"), conv, conv_out, bd, biased, yd,
             CUDNN_POINTWISE_RELU_FWD, fused, x, w, b, y, ws, ws_bytes);
}
}  // namespace

int main() {
  const Buffers m = start((size_t)N * C * H * W * 4, (size_t)K * C * R * R * 4, K * 4, (size_t)N * K * H * W * 4);
  void *ws = m.ws, *x = m.x, *w = m.w, *b = m.b, *y = m.y;
  const std::size_t ws_bytes = m.ws_bytes;
  for (bool fused : {true, false}) {
    run_graph("NHWC -> NHWC", true, true, fused, x, w, b, y, ws, ws_bytes);
    run_graph("NCHW -> NCHW", false, false, fused, x, w, b, y, ws, ws_bytes);
    run_graph("NHWC -> NCHW", true, false, fused, x, w, b, y, ws, ws_bytes);
  }
  std::printf("copy of x: %.4f ms flushed\n",
              median_ms([&] { cudaMemcpyAsync(y, x, (size_t)N * C * H * W * 4, cudaMemcpyDeviceToDevice); }, true));
  return 0;
}
