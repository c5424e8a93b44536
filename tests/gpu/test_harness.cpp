// libfusion_harness (app/harness/fusion_harness.h), the C ABI tests/bench/race.py loads: its refusals, with
// or without a device, and on a GPU the plans run on the caller's inputs, library steps included.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/harness/fusion_harness.h"
#include "tests/gpu/test_contraction_support.h"

namespace {

using fx::DType;
using fx::test::download;
using fx::test::Operand;
using fx::test::random_operand;

std::string temp_graph(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("fx_harness_" + name + ".json");
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
           {R"({"rest_ms": -1})", "warmup_ms, repeat_ms and rest_ms take 0 to 60000 ms"},
           {R"({"cold_l2": "yes"})", "option 'cold_l2' has the wrong type"},
           {R"({"device": "tpu"})", "unknown device 'tpu'"}}) {
    EXPECT_EQ(fx_harness_open(g.c_str(), options.c_str()), nullptr) << options;
    EXPECT_NE(std::string(fx_harness_last_error()).find(says), std::string::npos)
        << options << ": " << fx_harness_last_error();
  }
  EXPECT_EQ(fx_harness_enqueue(nullptr, 1), -1);
  EXPECT_STREQ(fx_harness_last_error(), "fx_harness_enqueue: a null handle");
  EXPECT_EQ(fx_harness_describe(nullptr), nullptr);
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
