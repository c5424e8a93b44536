// The test-only fault switch (kernels/codegen/test_fault.h) and the fault report (report_json.h), without a GPU:
// unset, the switch leaves every generated source alone; set, it changes exactly the kernel it names, the result
// still compiles for sm_90, and a name that matches nothing is refused. The fault report is checked against
// tests/data/run-reports/gpu_fault.h100.json, the file the GUI's tests read (tests/app/test_runner.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/fusion/engine.h"
#include "core/fusion/kernel_names.h"
#include "core/graph/graph_io.h"
#include "kernels/codegen/test_fault.h"
#include "kernels/common/sticky_error.h"
#include "kernels/executor/report_json.h"
#include "kernels/nvrtc/nvrtc_compiler.h"

namespace fx::gpu {
namespace {

// Sets FX_TEST_FAULT_KERNEL for one scope and restores the environment after.
class FaultVariable {
 public:
  explicit FaultVariable(const char* value) {
    if (const char* old = std::getenv(codegen::kTestFaultVariable)) old_ = old;
    if (value) {
      setenv(codegen::kTestFaultVariable, value, 1);
    } else {
      unsetenv(codegen::kTestFaultVariable);
    }
  }
  ~FaultVariable() {
    if (old_) {
      setenv(codegen::kTestFaultVariable, old_->c_str(), 1);
    } else {
      unsetenv(codegen::kTestFaultVariable);
    }
  }
  FaultVariable(const FaultVariable&) = delete;
  FaultVariable& operator=(const FaultVariable&) = delete;

 private:
  std::optional<std::string> old_;
};

struct PlanKernels {
  std::vector<std::string> groups;
  std::vector<GeneratedKernel> kernels;
  std::vector<std::pair<std::string, GeneratedKernel*>> launch_order() {
    std::vector<std::pair<std::string, GeneratedKernel*>> out;
    for (std::size_t i = 0; i < kernels.size(); ++i) out.emplace_back(groups[i], &kernels[i]);
    return out;
  }
};

// The unfused plan of a sample (one group per node), generated as the executor generates it.
PlanKernels unfused_kernels(const std::string& sample) {
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + sample);
  EXPECT_TRUE(g.ok());
  FusionEngine engine(std::move(g).value(), DeviceDescription::h100_sxm());
  PlanKernels out;
  for (int i = 0; i < static_cast<int>(engine.plan().groups().size()); ++i) {
    const Group& group = engine.plan().groups()[static_cast<std::size_t>(i)];
    const std::string name = generated_kernel_name(engine.plan(), i);
    for (auto& k : generate_group(engine.graph(), group.nodes, group.io.outputs, name).kernels) {
      out.groups.push_back(group.id);
      out.kernels.push_back(std::move(k));
    }
  }
  return out;
}

TEST(TestFaultSwitch, UnsetLeavesEverySourceAlone) {
  FaultVariable unset(nullptr);
  PlanKernels plan = unfused_kernels("relu_mul_add.json");
  const PlanKernels before = plan;
  EXPECT_FALSE(codegen::apply_test_fault(plan.launch_order()));
  ASSERT_EQ(plan.kernels.size(), 3u);
  for (std::size_t i = 0; i < plan.kernels.size(); ++i) EXPECT_EQ(plan.kernels[i].source, before.kernels[i].source);
  FaultVariable empty("");
  EXPECT_FALSE(codegen::apply_test_fault(plan.launch_order()));
}

TEST(TestFaultSwitch, ChangesOnlyTheNamedKernelAndStillCompiles) {
  PlanKernels plan = unfused_kernels("relu_mul_add.json");
  const PlanKernels before = plan;
  FaultVariable set("g:add");
  const auto note = codegen::apply_test_fault(plan.launch_order());
  ASSERT_TRUE(note);
  EXPECT_NE(note->find(plan.kernels[1].name), std::string::npos) << *note;
  EXPECT_EQ(plan.kernels[0].source, before.kernels[0].source);
  EXPECT_EQ(plan.kernels[2].source, before.kernels[2].source);
  const std::string& changed = plan.kernels[1].source;
  EXPECT_NE(changed, before.kernels[1].source);
  EXPECT_NE(changed.find("st.global.u32 [%0], %1;"), std::string::npos) << changed;
  // The store is the first statement of the kernel's body: before any early return of the generated code.
  const std::size_t body = changed.find('{', changed.find(" " + plan.kernels[1].name + "("));
  EXPECT_LT(changed.find("FX_TEST_FAULT_KERNEL", body), changed.find(';', body)) << changed;
  NvrtcCompiler compiler{std::filesystem::path()};  // no disk cache
  const Cubin cubin = compiler.compile(changed, plan.kernels[1].name, "sm_90");
  EXPECT_GT(cubin->size(), 0u);
}

TEST(TestFaultSwitch, FirstPicksTheFirstKernelAndUnknownGroupsAreRefused) {
  PlanKernels plan = unfused_kernels("relu_mul_add.json");
  const PlanKernels before = plan;
  {
    FaultVariable first("first");
    ASSERT_TRUE(codegen::apply_test_fault(plan.launch_order()));
    EXPECT_NE(plan.kernels[0].source, before.kernels[0].source);
    EXPECT_EQ(plan.kernels[1].source, before.kernels[1].source);
  }
  FaultVariable typo("g:nope");
  EXPECT_THROW(codegen::apply_test_fault(plan.launch_order()), std::invalid_argument);
  EXPECT_THROW(codegen::with_test_fault("__global__ void k() {}", "other"), std::logic_error);
}

TEST(StickyErrors, FaultsAreStickyAndOutOfMemoryIsNot) {
  for (long long code : {700, 710, 715, 716, 719}) EXPECT_TRUE(is_sticky_cuda_error(code)) << code;
  for (long long code : {0, 2, 1, 98, 209}) EXPECT_FALSE(is_sticky_cuda_error(code)) << code;  // 2: out of memory
  EXPECT_TRUE(is_sticky(GpuError("CUDA", 700, "cudaErrorIllegalAddress", "c", "f", 1, "w")));
  EXPECT_FALSE(is_sticky(GpuError("cuBLASLt", 700, "x", "c", "f", 1, "w")));  // only CUDA runtime codes
}

// The fault the GPU test expects from FX_TEST_FAULT_KERNEL=first on a one-group graph, as the executor builds it.
GpuFault sample_fault() {
  const GpuError cause("CUDA", 700, "cudaErrorIllegalAddress", "cudaStreamSynchronize(stream)", "executor.cpp", 282,
                       "CUDA error 700 (cudaErrorIllegalAddress): an illegal memory access was encountered");
  FaultSite site;
  site.phase = "verification";
  site.plan = "fused";
  site.step = 0;
  site.kernel = "fx_g_mul";
  site.group = "g:mul";
  site.exact = true;
  return GpuFault(cause, site);
}

DeviceInfo h100() {
  DeviceInfo d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.sm_count = 132;
  d.cc_major = 9;
  d.total_memory = 85017493504;  // as in relu_mul_add.h100.json
  d.free_memory = 84465090560;
  d.clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_bits = 5120;
  d.l2_bytes = 52428800;
  return d;
}

TEST(FaultReport, MatchesTheFileTheGuiReads) {
  const GpuFault fault = sample_fault();
  EXPECT_EQ(fault.message(), "an illegal memory access was encountered");  // cudaGetErrorString, no driver needed
  const auto j = to_json(fault_report(fault, h100(), "fault_probe", "auto-fuse (2 merges)"));
  EXPECT_EQ(j["status"], "gpu_fault");
  EXPECT_FALSE(j.contains("plans"));  // nothing measured is reported
  EXPECT_EQ(j["fault"]["attribution"], "exact");
  const std::string path = std::string(FX_SOURCE_DIR) + "/tests/data/run-reports/gpu_fault.h100.json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(nlohmann::ordered_json::parse(text.str()), j) << "the writer changed; the GUI's test file should be:\n"
                                                          << j.dump(2);
  // Read back, it is the report written: what faulted, where, and nothing measured.
  auto back = read_run_report(text.str());
  ASSERT_TRUE(back) << back.errors().front().to_string();
  EXPECT_EQ(*back, fault_report(fault, h100(), "fault_probe", "auto-fuse (2 merges)"));
  EXPECT_FALSE(back->completed());
}

TEST(FaultReport, AFaultBeforeAnyStepNamesNone) {
  FaultSite site;
  site.phase = "inputs";
  GpuFault fault(GpuError("CUDA", 719, "cudaErrorLaunchFailure", "c", "f", 1, "w"), site);
  const auto j = to_json(fault_report(fault, std::nullopt, "g", "auto-fuse"));
  EXPECT_EQ(j["fault"]["attribution"], "none");
  EXPECT_TRUE(j["fault"]["step"].is_null());
  EXPECT_TRUE(j["device"].is_null());
  EXPECT_NE(fault.summary().find("no plan step"), std::string::npos) << fault.summary();
}

}  // namespace
}  // namespace fx::gpu
