// libfusion_harness (bench/harness/fusion_harness.h), the C ABI bench/python/race.py loads: its refusals, with
// or without a device, and on a GPU the plans run on the caller's inputs, library steps included.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "bench/harness/fusion_harness.h"
#include "tests/gpu/test_contraction_support.h"

namespace {

using fx::DType;
using fx::test::download;
using fx::test::Operand;
using fx::test::random_operand;

// One file per process: ctest runs the tests of this file in parallel processes that write the same graphs.
std::string temp_graph(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("fx_harness_" + name + "_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << text;
  return path.string();
}

const char* kElementwise = R"({"format": "fusion-explorer/graph", "version": 1, "name": "harness_relu",
  "inputs": [{"name": "x", "shape": [256, 1024], "dtype": "f32"}, {"name": "w", "shape": [256, 1024], "dtype": "f32"},
             {"name": "b", "shape": [1024], "dtype": "f32"}],
  "nodes": [{"name": "mul", "op": "mul", "inputs": ["x", "w"]}, {"name": "add", "op": "add", "inputs": ["mul", "b"]},
            {"name": "y", "op": "relu", "inputs": ["add"]}],
  "outputs": ["y"]})";

// Q, K, V as one GEMM on weights stacked at preparation: they must be stacked from the caller's weights.
const char* kQkv = R"({"format": "fusion-explorer/graph", "version": 1, "name": "harness_qkv",
  "inputs": [{"name": "x", "shape": [256, 512], "dtype": "bf16"},
             {"name": "Wq", "shape": [512, 128], "dtype": "bf16", "role": "weight"},
             {"name": "Wk", "shape": [512, 128], "dtype": "bf16", "role": "weight"},
             {"name": "Wv", "shape": [512, 128], "dtype": "bf16", "role": "weight"}],
  "nodes": [{"name": "q", "op": "matmul", "inputs": ["x", "Wq"]}, {"name": "k", "op": "matmul", "inputs": ["x", "Wk"]},
            {"name": "v", "op": "matmul", "inputs": ["x", "Wv"]}],
  "outputs": ["q", "k", "v"]})";

struct Closer {
  fx_harness* h;
  ~Closer() { fx_harness_close(h); }
};

TEST(Harness, OpenNamesWhatIsWrongBeforeAskingForADevice) {
  EXPECT_EQ(fx_harness_open("/no/such/graph.json", nullptr), nullptr);
  EXPECT_NE(std::string(fx_harness_last_error()).find("cannot open /no/such/graph.json"), std::string::npos)
      << fx_harness_last_error();
  const std::string cycle = std::string(FX_SOURCE_DIR) + "/tests/data/bad/cycle.json";
  EXPECT_EQ(fx_harness_open(cycle.c_str(), nullptr), nullptr);
  EXPECT_NE(std::string(fx_harness_last_error()).find("cycle"), std::string::npos) << fx_harness_last_error();
  const std::string g = temp_graph("relu", kElementwise);
  for (const auto& [options, says] : std::vector<std::pair<std::string, std::string>>{
           {R"({"bogus": 1})", "unknown option 'bogus'"},
           {"[1]", "options must be a JSON object"},
           {"{", "options are not JSON"},
           {R"({"layout": 0})", "layout counts from 1"},
           {R"({"layout": 1.5})", "option 'layout' has the wrong type"},
           {R"({"seed": -1})", "option 'seed' has the wrong type"},
           {R"({"warmup_ms": true})", "option 'warmup_ms' has the wrong type"},
           {R"({"rest_ms": -1})", "warmup_ms, repeat_ms, rest_ms and tuning_rest_ms take 0 to 60000 ms"},
           {R"({"tuning_rest_ms": 1e9})", "warmup_ms, repeat_ms, rest_ms and tuning_rest_ms take 0 to 60000 ms"},
           {R"({"cold_l2": "yes"})", "option 'cold_l2' has the wrong type"},
           {R"({"device": "tpu"})", "unknown device 'tpu'"}}) {
    EXPECT_EQ(fx_harness_open(g.c_str(), options.c_str()), nullptr) << options;
    EXPECT_NE(std::string(fx_harness_last_error()).find(says), std::string::npos)
        << options << ": " << fx_harness_last_error();
  }
  EXPECT_EQ(fx_harness_enqueue(nullptr, 1), -1);
  EXPECT_STREQ(fx_harness_last_error(), "fx_harness_enqueue: a null handle");
  EXPECT_EQ(fx_harness_describe(nullptr), nullptr);
  EXPECT_EQ(fx_harness_bind_outputs(nullptr, 1, 0, nullptr, nullptr), -1);
  EXPECT_STREQ(fx_harness_last_error(), "fx_harness_bind_outputs: a null handle");
  fx_harness_close(nullptr);  // harmless
}

TEST(Harness, OpenWithoutADeviceSaysSo) {
  if (fx::test::no_device_reason().empty()) GTEST_SKIP() << "a device exists: HarnessGpu covers the open";
  const std::string g = temp_graph("relu", kElementwise);
  EXPECT_EQ(fx_harness_open(g.c_str(), nullptr), nullptr);
  EXPECT_NE(std::string(fx_harness_last_error()).find("no CUDA device"), std::string::npos) << fx_harness_last_error();
}

TEST(HarnessGpu, RunsTheFusedPlanOnTheCallersInputs) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  const std::string g = temp_graph("relu", kElementwise);
  fx_harness* h = fx_harness_open(g.c_str(), R"({"warmup_ms": 1, "repeat_ms": 2})");
  ASSERT_NE(h, nullptr) << fx_harness_last_error();
  Closer closer{h};
  EXPECT_EQ(fx_harness_enqueue(h, 1), -1);
  EXPECT_NE(std::string(fx_harness_last_error()).find("call fx_harness_prepare first"), std::string::npos);

  const Operand x = random_operand(256 * 1024, DType::f32, 2.0f, 1);
  const Operand w = random_operand(256 * 1024, DType::f32, 2.0f, 2);
  const Operand b = random_operand(1024, DType::f32, 1.0f, 3);
  const char* names[] = {"x", "w", "b"};
  void* const pointers[] = {x.device.get(), w.device.get(), b.device.get()};
  const char* bad[] = {"x", "nope"};
  EXPECT_EQ(fx_harness_prepare(h, 2, bad, pointers), -1);
  EXPECT_NE(std::string(fx_harness_last_error()).find("'nope' is not an input of graph harness_relu"),
            std::string::npos) << fx_harness_last_error();
  ASSERT_EQ(fx_harness_prepare(h, 3, names, pointers), 0) << fx_harness_last_error();

  const auto d = nlohmann::json::parse(fx_harness_describe(h));
  EXPECT_EQ(d["graph"], "harness_relu");
  EXPECT_TRUE(d["prepared"].get<bool>());
  EXPECT_EQ(d["plans"]["unfused"].size(), 3u);
  ASSERT_EQ(d["plans"]["fused"].size(), 1u);
  EXPECT_NE(d["plans"]["fused"][0]["path"].get<std::string>().find("elements per thread"), std::string::npos);
  EXPECT_EQ(d["outputs"][0]["bytes"], 256 * 1024 * 4);
  ASSERT_EQ(d["checks"].size(), 1u);
  EXPECT_TRUE(d["checks"][0]["passed"].get<bool>());

  // The fused plan again, enqueued on the harness's stream, into a poisoned output.
  fx::test::DeviceArray y(256 * 1024 * 4);
  ASSERT_EQ(cudaMemset(y.get(), 0xFF, y.bytes()), cudaSuccess);
  ASSERT_EQ(fx_harness_enqueue(h, 1), 0) << fx_harness_last_error();
  EXPECT_EQ(fx_harness_copy_value(h, 1, "y", y.get(), 12), -1);
  EXPECT_NE(std::string(fx_harness_last_error()).find("'y' holds 1048576 bytes, not 12"), std::string::npos);
  ASSERT_EQ(fx_harness_copy_value(h, 1, "y", y.get(), y.bytes()), 0) << fx_harness_last_error();
  const std::vector<double> got = download(y.get(), 256 * 1024, DType::f32);
  int wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double want = std::max(0.0, x.host[i] * w.host[i] + b.host[i % 1024]);
    wrong += std::abs(got[i] - want) > 1e-5 * (1 + std::abs(want));
  }
  EXPECT_EQ(wrong, 0) << "elements of y that are not relu(x * w + b) of the caller's inputs";

  // Prepared again with another x: the plans now run on it.
  const Operand x2 = random_operand(256 * 1024, DType::f32, 2.0f, 8);
  void* const again[] = {x2.device.get(), w.device.get(), b.device.get()};
  ASSERT_EQ(fx_harness_prepare(h, 3, names, again), 0) << fx_harness_last_error();
  ASSERT_EQ(fx_harness_enqueue(h, 1), 0) << fx_harness_last_error();
  ASSERT_EQ(fx_harness_copy_value(h, 1, "y", y.get(), y.bytes()), 0) << fx_harness_last_error();
  const std::vector<double> got2 = download(y.get(), 256 * 1024, DType::f32);
  wrong = 0;
  for (std::size_t i = 0; i < got2.size(); ++i) {
    const double want = std::max(0.0, x2.host[i] * w.host[i] + b.host[i % 1024]);
    wrong += std::abs(got2[i] - want) > 1e-5 * (1 + std::abs(want));
  }
  EXPECT_EQ(wrong, 0) << "elements of y that are not relu(x2 * w + b) after the second preparation";
}

// relu(x * w + b) with x * w + b an output too: in the unfused plan the relu reads it where the plan wrote it.
const char* kTwoOutputs = R"({"format": "fusion-explorer/graph", "version": 1, "name": "harness_two",
  "inputs": [{"name": "x", "shape": [256, 1024], "dtype": "f32"}, {"name": "w", "shape": [256, 1024], "dtype": "f32"},
             {"name": "b", "shape": [1024], "dtype": "f32"}],
  "nodes": [{"name": "mul", "op": "mul", "inputs": ["x", "w"]}, {"name": "add", "op": "add", "inputs": ["mul", "b"]},
            {"name": "y", "op": "relu", "inputs": ["add"]}],
  "outputs": ["add", "y"]})";

TEST(HarnessGpu, BoundOutputsAreWrittenInTheCallersMemory) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  const std::string g = temp_graph("two", kTwoOutputs);
  fx_harness* h = fx_harness_open(g.c_str(), nullptr);
  ASSERT_NE(h, nullptr) << fx_harness_last_error();
  Closer closer{h};
  constexpr std::size_t kN = 256 * 1024;
  const Operand x = random_operand(kN, DType::f32, 2.0f, 11);
  const Operand w = random_operand(kN, DType::f32, 2.0f, 12);
  const Operand b = random_operand(1024, DType::f32, 1.0f, 13);
  const char* inputs[] = {"x", "w", "b"};
  void* const pointers[] = {x.device.get(), w.device.get(), b.device.get()};
  fx::test::DeviceArray add(kN * 4), y(kN * 4), y2(kN * 4);
  const char* both[] = {"add", "y"};
  void* const targets[] = {add.get(), y.get()};
  EXPECT_EQ(fx_harness_bind_outputs(h, 1, 2, both, targets), -1);
  EXPECT_STREQ(fx_harness_last_error(), "fx_harness_bind_outputs: call fx_harness_prepare first");
  ASSERT_EQ(fx_harness_prepare(h, 3, inputs, pointers), 0) << fx_harness_last_error();

  auto refused = [&](int plan, const char* name, void* ptr, const std::string& says) {
    const char* names[] = {name};
    void* const ptrs[] = {ptr};
    EXPECT_EQ(fx_harness_bind_outputs(h, plan, 1, names, ptrs), -1) << name;
    EXPECT_NE(std::string(fx_harness_last_error()).find(says), std::string::npos) << fx_harness_last_error();
  };
  refused(1, "x", y.get(), "'x' is not a graph output that the fused plan of harness_two writes");
  refused(0, "mul", y.get(), "'mul' is not a graph output that the unfused plan of harness_two writes");
  refused(1, "y", static_cast<char*>(y.get()) + 4, "output 'y': a device pointer not aligned to 256 bytes");
  refused(1, "y", nullptr, "output 'y': a null device pointer");
  refused(2, "y", y.get(), "no plan 2");

  // Done before the plan runs: the memset goes on the legacy stream, which the harness's non-blocking stream
  // does not wait for.
  auto poison = [&](fx::test::DeviceArray& a) {
    ASSERT_EQ(cudaMemset(a.get(), 0xFF, a.bytes()), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  };
  auto run = [&](int plan) {
    ASSERT_EQ(fx_harness_enqueue(h, plan), 0) << fx_harness_last_error();
    ASSERT_EQ(cudaStreamSynchronize(static_cast<cudaStream_t>(fx_harness_stream(h))), cudaSuccess);
  };
  // Elements of `a` that are not add (relu false) or y (relu true) of the caller's inputs; NaN (the poison) counts.
  auto wrong = [&](const fx::test::DeviceArray& a, bool relu) {
    const std::vector<double> got = download(a.get(), kN, DType::f32);
    int n = 0;
    for (std::size_t i = 0; i < kN; ++i) {
      const double sum = x.host[i] * w.host[i] + b.host[i % 1024];
      const double want = relu ? std::max(0.0, sum) : sum;
      n += !(std::abs(got[i] - want) <= 1e-5 * (1 + std::abs(want)));
    }
    return n;
  };
  // The unfused plan, three kernels, writes add and y to the caller's buffers (that its relu then reads add
  // there, ExecutorGpu.ALaterStepReadsABoundOutputWhereItWasWritten shows).
  poison(add);
  poison(y);
  ASSERT_EQ(fx_harness_bind_outputs(h, 0, 2, both, targets), 0) << fx_harness_last_error();
  run(0);
  EXPECT_EQ(wrong(add, false), 0) << "the unfused plan's add, bound";
  EXPECT_EQ(wrong(y, true), 0) << "the unfused plan's y, bound";
  // The fused plan's y bound to y2 only: y, bound to the unfused plan, is left alone.
  poison(y);
  poison(y2);
  const char* just_y[] = {"y"};
  void* const to_y2[] = {y2.get()};
  ASSERT_EQ(fx_harness_bind_outputs(h, 1, 1, just_y, to_y2), 0) << fx_harness_last_error();
  run(1);
  EXPECT_EQ(wrong(y2, true), 0) << "the fused plan's y, bound to y2";
  EXPECT_EQ(wrong(y, true), static_cast<int>(kN)) << "the fused plan wrote the unfused plan's binding";
  // A refused binding binds nothing: y2 stays bound.
  const char* with_bad[] = {"y", "x"};
  void* const bad_targets[] = {y.get(), y.get()};
  EXPECT_EQ(fx_harness_bind_outputs(h, 1, 2, with_bad, bad_targets), -1);
  poison(y2);
  run(1);
  EXPECT_EQ(wrong(y2, true), 0) << "a refused binding changed the plan's";
  // No outputs: the fused plan writes its own buffer again, which copy_value reads.
  ASSERT_EQ(fx_harness_bind_outputs(h, 1, 0, nullptr, nullptr), 0) << fx_harness_last_error();
  poison(y2);
  run(1);
  EXPECT_EQ(wrong(y2, true), static_cast<int>(kN)) << "the fused plan still wrote y2 after it was unbound";
  ASSERT_EQ(fx_harness_copy_value(h, 1, "y", y2.get(), y2.bytes()), 0) << fx_harness_last_error();
  EXPECT_EQ(wrong(y2, true), 0) << "the fused plan's own y";
  // A preparation unbinds too.
  ASSERT_EQ(fx_harness_prepare(h, 3, inputs, pointers), 0) << fx_harness_last_error();
  poison(add);
  poison(y);
  run(0);
  EXPECT_EQ(wrong(add, false), static_cast<int>(kN)) << "the unfused plan still wrote add after a preparation";
}

TEST(HarnessGpu, StackedWeightsAreMadeFromTheCallersWeights) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  const std::string g = temp_graph("qkv", kQkv);
  // Layout 1 of every step: the merged call (tuning might otherwise run the three GEMMs alone).
  fx_harness* h = fx_harness_open(g.c_str(), R"({"layout": 1})");
  ASSERT_NE(h, nullptr) << fx_harness_last_error();
  Closer closer{h};
  const Operand x = random_operand(256 * 512, DType::bf16, 1.0f, 4);
  const Operand wq = random_operand(512 * 128, DType::bf16, 0.1f, 5);
  const Operand wk = random_operand(512 * 128, DType::bf16, 0.1f, 6);
  const Operand wv = random_operand(512 * 128, DType::bf16, 0.1f, 7);
  const char* names[] = {"x", "Wq", "Wk", "Wv"};
  void* const pointers[] = {x.device.get(), wq.device.get(), wk.device.get(), wv.device.get()};
  ASSERT_EQ(fx_harness_prepare(h, 4, names, pointers), 0) << fx_harness_last_error();
  const auto d = nlohmann::json::parse(fx_harness_describe(h));
  ASSERT_EQ(d["plans"]["fused"].size(), 1u) << d.dump();  // the three GEMMs as one
  EXPECT_EQ(d["plans"]["fused"][0]["library"], "cuBLASLt");
  // Its parts lie at equal spacing in the plan's own buffer: they cannot be bound one by one.
  fx::test::DeviceArray q(256 * 128 * 2);
  const char* q_name[] = {"q"};
  void* const q_target[] = {q.get()};
  EXPECT_EQ(fx_harness_bind_outputs(h, 1, 1, q_name, q_target), -1);
  EXPECT_NE(std::string(fx_harness_last_error()).find("output 'q' is one of the 3 parts that"), std::string::npos)
      << fx_harness_last_error();
  ASSERT_EQ(fx_harness_bind_outputs(h, 0, 1, q_name, q_target), 0) << fx_harness_last_error();  // unfused: one GEMM

  // The fused plan's v against x @ Wv on the host.
  auto v_error = [&](const Operand& weight) {
    EXPECT_EQ(fx_harness_enqueue(h, 1), 0) << fx_harness_last_error();
    fx::test::DeviceArray v(256 * 128 * 2);
    EXPECT_EQ(fx_harness_copy_value(h, 1, "v", v.get(), v.bytes()), 0) << fx_harness_last_error();
    const std::vector<double> got = download(v.get(), 256 * 128, DType::bf16);
    double err = 0, norm = 0;
    for (std::size_t i = 0; i < 256; ++i) {
      for (std::size_t j = 0; j < 128; ++j) {
        double want = 0;
        for (std::size_t k = 0; k < 512; ++k) want += x.host[i * 512 + k] * weight.host[k * 128 + j];
        const double diff = got[i * 128 + j] - want;
        err += diff * diff;
        norm += want * want;
      }
    }
    return std::sqrt(err / norm);
  };
  EXPECT_LT(v_error(wv), 1e-2) << "v is not x @ Wv of the caller's x and Wv";
  // Prepared again with another Wv: the weights are stacked anew from it.
  const Operand wv2 = random_operand(512 * 128, DType::bf16, 0.1f, 9);
  void* const again[] = {x.device.get(), wq.device.get(), wk.device.get(), wv2.device.get()};
  ASSERT_EQ(fx_harness_prepare(h, 4, names, again), 0) << fx_harness_last_error();
  EXPECT_LT(v_error(wv2), 1e-2) << "v is not x @ Wv of the second preparation's Wv";
}

}  // namespace
