// A step's identity for the counter pass (kernels/executor/step_identity.h): generated kernels alike but for their
// entry point's name are one kernel; a different source, launch shape or buffer layout is another; a sort has no
// identity and is always measured. A generated step's buffers and library calls' chosen algorithms need the device:
// tests/gpu/test_profile_pass.cpp covers them.
#include <gtest/gtest.h>

#include <memory>

#include "kernels/codegen/codegen.h"
#include "kernels/executor/memory_plan.h"
#include "kernels/executor/sort_step.h"
#include "kernels/executor/step_identity.h"

namespace fx::gpu {
namespace {

GeneratedKernel transpose(const std::string& name, std::int64_t rows = 64 * 64) {
  return generate_layout_transpose(DType::f32, 8, rows, 128, name);
}

TEST(StepIdentity, GeneratedKernelsAlikeButForTheirNameAreOneKernel) {
  const auto a = generated_identity(transpose("fx_g_layer1_0_x_to_nhwc"), false);
  const auto b = generated_identity(transpose("fx_g_layer1_1_x_to_nhwc"), false);
  ASSERT_TRUE(a);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->find("layer1"), std::string::npos) << "the entry point's name is no part of the identity";
}

TEST(StepIdentity, AnotherProblemLaunchShapeOrBufferLayoutIsAnotherKernel) {
  const GeneratedKernel k = transpose("fx_g_a");
  const auto id = generated_identity(k, false);
  EXPECT_NE(id, generated_identity(transpose("fx_g_a", 32 * 32), false)) << "another shape";
  EXPECT_NE(id, generated_identity(k, true)) << "NHWC buffers";
  GeneratedKernel wider = k;
  wider.block *= 2;
  EXPECT_NE(id, generated_identity(wider, false)) << "another block";
  GeneratedKernel more = k;
  more.grid += 1;
  EXPECT_NE(id, generated_identity(more, false)) << "another grid";
}

GeneratedKernel written(const std::string& name, const std::string& source) {
  GeneratedKernel k;
  k.name = name;
  k.source = source;
  return k;
}

TEST(StepIdentity, AShortNameIsReplacedOnlyWhereItIsAWholeName) {
  // "k" is the entry point; "kin" and "kk" are other identifiers and stay, so these two sources differ.
  const GeneratedKernel a = written("k", "extern \"C\" __global__ void k(float* kin) { kin[0] = 1; }");
  const GeneratedKernel b = written("j", "extern \"C\" __global__ void j(float* kk) { kk[0] = 1; }");
  const GeneratedKernel c = written("j", "extern \"C\" __global__ void j(float* kin) { kin[0] = 1; }");
  EXPECT_NE(generated_identity(a, false), generated_identity(b, false));
  EXPECT_EQ(generated_identity(a, false), generated_identity(c, false));
  EXPECT_FALSE(generated_identity(written("empty", ""), false)) << "no source, no identity";
}

// Two groups' kernels written with their own value names are one kernel when the names play the same roles; the
// same names in other roles, or another op, are another kernel.
TEST(StepIdentity, ValueNamesAreReplacedByTheirRoles) {
  auto relu = [](const std::string& in, const std::string& out) {
    return written("fx_g_" + out, "// " + out + " = relu(" + in + ")\nvoid fx_g_" + out + "(const float* in_" + in +
                                       ", float* out_" + out + ") { out_" + out + "[0] = fx_relu(in_" + in + "[0]); }");
  };
  const auto one = generated_identity(relu("layer1_0_bn1", "layer1_0_relu"), false,
                                      {"fx_g_layer1_0_relu", "layer1_0_bn1", "layer1_0_relu"});
  const auto two = generated_identity(relu("layer1_1_bn1", "layer1_1_relu"), false,
                                      {"fx_g_layer1_1_relu", "layer1_1_bn1", "layer1_1_relu"});
  ASSERT_TRUE(one);
  EXPECT_EQ(one, two);
  EXPECT_EQ(one->find("layer1"), std::string::npos);
  const auto swapped = generated_identity(relu("layer1_1_bn1", "layer1_1_relu"), false,
                                          {"fx_g_layer1_1_relu", "layer1_1_relu", "layer1_1_bn1"});
  EXPECT_NE(one, swapped) << "input and output in each other's roles";
  GeneratedKernel sigmoid = relu("layer1_1_bn1", "layer1_1_relu");
  sigmoid.source.replace(sigmoid.source.find("fx_relu"), 7, "fx_sigmoid");
  EXPECT_NE(one, generated_identity(sigmoid, false, {"fx_g_layer1_1_relu", "layer1_1_bn1", "layer1_1_relu"}));
}

// The unfused plan's relu kernels of two branches, as the generator writes them: short value names inside
// identifiers ("in_m1", "m1_v", "out_r1_v") are replaced; the kernels are one.
TEST(StepIdentity, TwoBranchesReluKernelsAreOne) {
  auto relu = [](const std::string& in, const std::string& out) {
    return written("fx_g_" + out, "void fx_g_" + out + "(const float* in_" + in + ", float* out_" + out + ") {\n" +
                                      "  const fx_vec<float, 4> " + in + "_v = *(in_" + in + " + base);\n" +
                                      "  fx_vec<float, 4> out_" + out + "_v;\n  const float " + out + " = fx_relu(" +
                                      in + ");  // " + out + " = relu(" + in + ")\n}");
  };
  const auto one = generated_identity(relu("m1", "r1"), false, {"fx_g_r1", "m1", "r1", "r1"});
  const auto two = generated_identity(relu("m2", "r2"), false, {"fx_g_r2", "m2", "r2", "r2"});
  ASSERT_TRUE(one);
  EXPECT_EQ(one, two);
  EXPECT_EQ(one->find("m1"), std::string::npos) << *one;
  EXPECT_NE(one->find("fx_vec"), std::string::npos) << "names do not eat into other identifiers";
}

TEST(StepIdentity, ASortIsAlwaysMeasured) {
  Graph g;
  MemoryPlan memory;
  const PlanBuffers b{g, memory, PlanId::unfused};
  Step sort;
  sort.kernel.name = "cub_topk";
  sort.action = SortLaunch{std::make_shared<SortStep>(RowSort{}, 0, 1)};
  EXPECT_FALSE(measurement_identity(sort, b));
}

}  // namespace
}  // namespace fx::gpu
