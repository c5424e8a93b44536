// Shared by the cuDNN graph (backend API) micro-benchmarks conv_graph.cu and matmul_graph.cu: owned-by-nobody
// descriptors (a benchmark process exits), pointwise operations, an engine's notes and knobs, and the loop that
// finalizes every configuration the heuristics offer for a graph and times each one.
#pragma once

#include <cudnn.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common.cuh"

#define CD(x) do { cudnnStatus_t s_ = (x); if (s_ != CUDNN_STATUS_SUCCESS) { std::printf("%s: %s line %d\n", #x, cudnnGetErrorString(s_), __LINE__); std::exit(1); } } while (0)

inline cudnnHandle_t h;

using Desc = cudnnBackendDescriptor_t;
inline Desc make(cudnnBackendDescriptorType_t t) { Desc d; CD(cudnnBackendCreateDescriptor(t, &d)); return d; }
template <class T> void set(Desc d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, const T& v, std::int64_t n = 1) {
  CD(cudnnBackendSetAttribute(d, a, t, n, &v));
}
inline void set_desc(Desc d, cudnnBackendAttributeName_t a, Desc v) { CD(cudnnBackendSetAttribute(d, a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v)); }

inline Desc pointwise(cudnnPointwiseMode_t mode, Desc x, Desc b, Desc y) {
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

inline std::string notes(Desc engine) {
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
inline std::string knobs(Desc cfg) {
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


inline Desc operation_graph(const std::vector<Desc>& ops) {
  Desc graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  CD(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, (std::int64_t)ops.size(), ops.data()));
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, h);
  CD(cudnnBackendFinalize(graph));
  return graph;
}

// Every configuration heuristics modes A, B and FALLBACK offer for `graph`, finalized (with the seconds that
// took: a run-time compiled engine compiles then) and timed after a flush and back to back; at most
// `max_per_mode` of each mode's list (a run-time compiled engine can take seconds each).
inline void time_configurations(Desc graph, const std::vector<std::int64_t>& uids, const std::vector<void*>& ptrs,
                                void* ws, std::size_t ws_bytes, int max_per_mode = 32) {
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
    for (int i = 0; i < count && i < max_per_mode; ++i) {
      Desc engine = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      std::int64_t got = 0, index = -1;
      CD(cudnnBackendGetAttribute(cfgs[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &engine));
      CD(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got, &index));
      const std::string note = notes(engine) + " knobs" + knobs(cfgs[i]);
      Desc plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, h);
      set_desc(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfgs[i]);
      const auto start = std::chrono::steady_clock::now();
      const cudnnStatus_t fin = cudnnBackendFinalize(plan);
      const double finalize_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (fin != CUDNN_STATUS_SUCCESS) {
        std::printf("    #%d engine %lld%s: plan not finalized (%s)\n", i, (long long)index, note.c_str(), cudnnGetErrorString(fin));
        continue;
      }
      std::int64_t need = 0;
      CD(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got, &need));
      if (need > (std::int64_t)ws_bytes) { std::printf("    #%d engine %lld: workspace %lld too big\n", i, (long long)index, (long long)need); continue; }
      Desc pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
      CD(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, (std::int64_t)uids.size(), uids.data()));
      CD(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, (std::int64_t)ptrs.size(), ptrs.data()));
      CD(cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
      CD(cudnnBackendFinalize(pack));
      const cudnnStatus_t ex = cudnnBackendExecute(h, plan, pack);
      if (ex != CUDNN_STATUS_SUCCESS) { std::printf("    #%d engine %lld: execute failed (%s)\n", i, (long long)index, cudnnGetErrorString(ex)); continue; }
      const float flushed = median_ms([&] { cudnnBackendExecute(h, plan, pack); }, true);
      const float warm = median_ms([&] { cudnnBackendExecute(h, plan, pack); }, false);
      std::printf("    #%d engine %lld%s: %.4f ms flushed, %.4f back to back (workspace %lld, finalized in %.2f s)\n", i,
                  (long long)index, note.c_str(), flushed, warm, (long long)need, finalize_s);
    }
  }
  CK(cudaDeviceSynchronize());
}

// The handle, the flush buffer and zeroed operands of one graph: x, w, b (a bias) and y, and a 256 MB workspace.
struct Buffers {
  void *ws = nullptr, *x = nullptr, *w = nullptr, *b = nullptr, *y = nullptr;
  std::size_t ws_bytes = 256u << 20;
};
inline Buffers start(std::size_t x_bytes, std::size_t w_bytes, std::size_t b_bytes, std::size_t y_bytes) {
  CD(cudnnCreate(&h));
  std::printf("cuDNN %zu\n", cudnnGetVersion());
  Buffers m;
  CK(cudaMalloc(&m.ws, m.ws_bytes));
  CK(cudaMalloc(&g_flush, 256u << 20));
  CK(cudaMalloc(&m.x, x_bytes)); CK(cudaMalloc(&m.w, w_bytes)); CK(cudaMalloc(&m.b, b_bytes)); CK(cudaMalloc(&m.y, y_bytes));
  CK(cudaMemset(m.x, 0, x_bytes)); CK(cudaMemset(m.w, 0, w_bytes)); CK(cudaMemset(m.b, 0, b_bytes));
  return m;
}

// `op` (a convolution or matmul writing `out`), then, when `fused`, + the bias `bd` into `biased` and
// `activation` into `yd`, as one graph on operands x, w, b and y (uids 'x', 'w', 'b', 'y'), every configuration
// timed.
inline void time_graph(const std::string& label, Desc op, Desc out, Desc bd, Desc biased, Desc yd,
                       cudnnPointwiseMode_t activation, bool fused, void* x, void* w, void* b, void* y, void* ws,
                       std::size_t ws_bytes, int max_per_mode = 32) {
  std::vector<Desc> ops = {op};
  if (fused) {
    ops.push_back(pointwise(CUDNN_POINTWISE_ADD, out, bd, biased));
    ops.push_back(pointwise(activation, biased, nullptr, yd));
  }
  Desc graph = operation_graph(ops);
  std::int64_t engines = 0;
  CD(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, nullptr, &engines));
  std::printf("%s: %lld engines in all\n", label.c_str(), (long long)engines);
  std::vector<std::int64_t> uids = {'x', 'w', 'y'};
  std::vector<void*> ptrs = {x, w, y};
  if (fused) uids.push_back('b'), ptrs.push_back(b);
  time_configurations(graph, uids, ptrs, ws, ws_bytes, max_per_mode);
  CK(cudaDeviceSynchronize());
}
