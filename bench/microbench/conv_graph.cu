// Micro-benchmark behind docs/benchmarks.md (conv_bn_relu): the sample's 3x3 conv + bias + ReLU
// (x[32,64,56,56] f32, 64 filters, pad 1, TF32 allowed) through cuDNN's graph (backend) API, the way PyTorch's
// cuDNN v9 path runs convolutions: one operation graph (conv -> add bias -> relu), every engine configuration the
// heuristics offer (modes A and FALLBACK), each finalized into a plan and timed after a 256 MB flush; for the
// layouts NHWC -> NHWC, NCHW -> NCHW and NHWC -> NCHW, fused and conv alone. Prints each configuration's engine
// (global index), notes (runtime compiled, tensor cores), knob choices and time; conv_algos.cu times the legacy
// calls alike. Heuristic modes A and B rank the same configurations differently; FALLBACK lists the slow safe ones.
// nvcc -O2 -std=c++17 -arch=sm_90 -Wno-deprecated-declarations bench/microbench/conv_graph.cu -lcudnn -o conv_graph
#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common.cuh"

#define CD(x) do { cudnnStatus_t s_ = (x); if (s_ != CUDNN_STATUS_SUCCESS) { std::printf("%s: %s line %d\n", #x, cudnnGetErrorString(s_), __LINE__); std::exit(1); } } while (0)

namespace {
constexpr std::int64_t N = 32, C = 64, H = 56, W = 56, K = 64, R = 3;
cudnnHandle_t h;

using Desc = cudnnBackendDescriptor_t;
Desc make(cudnnBackendDescriptorType_t t) { Desc d; CD(cudnnBackendCreateDescriptor(t, &d)); return d; }
template <class T> void set(Desc d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, const T& v, std::int64_t n = 1) {
  CD(cudnnBackendSetAttribute(d, a, t, n, &v));
}
void set_desc(Desc d, cudnnBackendAttributeName_t a, Desc v) { CD(cudnnBackendSetAttribute(d, a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v)); }

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

Desc pointwise(cudnnPointwiseMode_t mode, Desc x, Desc b, Desc y) {
  Desc pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, mode);
  set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  CD(cudnnBackendFinalize(pw));
  Desc op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  CD(cudnnBackendFinalize(op));
  return op;
}

std::string notes(Desc engine) {
  std::string s;
  cudnnBackendNumericalNote_t nn[16]; std::int64_t n = 0;
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, 16, &n, nn) == CUDNN_STATUS_SUCCESS) {
    for (int i = 0; i < n; ++i) {
      if (nn[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) s += " tensor-core";
      if (nn[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) s += " down-convert";
      if (nn[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) s += " nondeterministic";
    }
  }
  cudnnBackendBehaviorNote_t bn[16];
  if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, 16, &n, bn) == CUDNN_STATUS_SUCCESS) {
    for (int i = 0; i < n; ++i) {
      if (bn[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) s += " runtime-compiled";
    }
  }
  return s;
}

// The knob choices of a configuration, "type=value" pairs: two configurations of one engine differ only here
// (tile sizes, kernel variants), so each is timed.
std::string knobs(Desc cfg) {
  Desc choices[32];
  for (auto& c : choices) c = make(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
  std::int64_t n = 0;
  std::string s;
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, 32, &n, choices) == CUDNN_STATUS_SUCCESS) {
    for (int i = 0; i < n; ++i) {
      cudnnBackendKnobType_t type; std::int64_t value = 0, got = 0;
      cudnnBackendGetAttribute(choices[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &got, &type);
      cudnnBackendGetAttribute(choices[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &got, &value);
      s += " " + std::to_string((int)type) + "=" + std::to_string(value);
    }
  }
  for (auto& c : choices) cudnnBackendDestroyDescriptor(c);
  return s;
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
  std::vector<Desc> ops = {conv};
  if (fused) {
    ops.push_back(pointwise(CUDNN_POINTWISE_ADD, conv_out, bd, biased));
    ops.push_back(pointwise(CUDNN_POINTWISE_RELU_FWD, biased, nullptr, yd));
  }
  Desc graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  CD(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, (std::int64_t)ops.size(), ops.data()));
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, h);
  CD(cudnnBackendFinalize(graph));
  std::int64_t engines = 0;
  CD(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, nullptr, &engines));
  std::printf("%s (%s): %lld engines in all\n", what, fused ? "conv + bias + relu" : "conv", (long long)engines);
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B, CUDNN_HEUR_MODE_FALLBACK}) {
    Desc heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
    set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, mode);
    if (cudnnBackendFinalize(heur) != CUDNN_STATUS_SUCCESS) { std::printf("  heuristics mode %d: not finalized\n", (int)mode); continue; }
    constexpr int kMax = 32;
    Desc cfgs[kMax];
    for (auto& c : cfgs) c = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    std::int64_t count = 0;
    if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, kMax, &count, cfgs) != CUDNN_STATUS_SUCCESS) {
      std::printf("  heuristics mode %d: no results\n", (int)mode); continue;
    }
    std::printf("  heuristics mode %s: %lld configurations\n", mode == CUDNN_HEUR_MODE_A ? "A" : mode == CUDNN_HEUR_MODE_B ? "B" : "FALLBACK",
                (long long)count);
    for (int i = 0; i < count; ++i) {
      Desc engine = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      std::int64_t got = 0, index = -1;
      CD(cudnnBackendGetAttribute(cfgs[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &engine));
      CD(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got, &index));
      const std::string note = notes(engine) + " knobs" + knobs(cfgs[i]);
      Desc plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, h);
      set_desc(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfgs[i]);
      const cudnnStatus_t fin = cudnnBackendFinalize(plan);
      if (fin != CUDNN_STATUS_SUCCESS) {
        std::printf("    #%d engine %lld%s: plan not finalized (%s)\n", i, (long long)index, note.c_str(), cudnnGetErrorString(fin));
        continue;
      }
      std::int64_t need = 0;
      CD(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got, &need));
      if (need > (std::int64_t)ws_bytes) { std::printf("    #%d engine %lld: workspace %lld too big\n", i, (long long)index, (long long)need); continue; }
      Desc pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
      std::vector<std::int64_t> uids = {'x', 'w', 'y'};
      std::vector<void*> ptrs = {x, w, y};
      if (fused) uids.push_back('b'), ptrs.push_back(b);
      CD(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, (std::int64_t)uids.size(), uids.data()));
      CD(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, (std::int64_t)ptrs.size(), ptrs.data()));
      CD(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
      CD(cudnnBackendFinalize(pack));
      const cudnnStatus_t ex = cudnnBackendExecute(h, plan, pack);
      if (ex != CUDNN_STATUS_SUCCESS) { std::printf("    #%d engine %lld: execute failed (%s)\n", i, (long long)index, cudnnGetErrorString(ex)); continue; }
      const float flushed = median_ms([&] { cudnnBackendExecute(h, plan, pack); }, true);
      const float warm = median_ms([&] { cudnnBackendExecute(h, plan, pack); }, false);
      std::printf("    #%d engine %lld%s: %.4f ms flushed, %.4f back to back (workspace %lld)\n", i, (long long)index, note.c_str(),
                  flushed, warm, (long long)need);
    }
  }
  CK(cudaDeviceSynchronize());
}
}  // namespace

int main() {
  CD(cudnnCreate(&h));
  std::printf("cuDNN %zu\n", cudnnGetVersion());
  const std::size_t ws_bytes = 256u << 20;
  void *ws, *x, *w, *b, *y;
  CK(cudaMalloc(&ws, ws_bytes));
  CK(cudaMalloc(&g_flush, 256u << 20));
  CK(cudaMalloc(&x, (size_t)N * C * H * W * 4)); CK(cudaMalloc(&y, (size_t)N * K * H * W * 4));
  CK(cudaMalloc(&w, (size_t)K * C * R * R * 4)); CK(cudaMalloc(&b, K * 4));
  CK(cudaMemset(x, 0, (size_t)N * C * H * W * 4)); CK(cudaMemset(w, 0, (size_t)K * C * R * R * 4)); CK(cudaMemset(b, 0, K * 4));
  for (bool fused : {true, false}) {
    run_graph("NHWC -> NHWC", true, true, fused, x, w, b, y, ws, ws_bytes);
    run_graph("NCHW -> NCHW", false, false, fused, x, w, b, y, ws, ws_bytes);
    run_graph("NHWC -> NCHW", true, false, fused, x, w, b, y, ws, ws_bytes);
  }
  std::printf("copy of x: %.4f ms flushed\n",
              median_ms([&] { cudaMemcpyAsync(y, x, (size_t)N * C * H * W * 4, cudaMemcpyDeviceToDevice); }, true));
  return 0;
}
