// The op registry: every OpId has one entry under its format name, and the traits the passes decide by.
#include <gtest/gtest.h>

#include "core/graph/graph.h"
#include "core/graph/op_registry.h"

namespace fx {
namespace {

TEST(OpRegistry, EveryIdHasOneEntryNamedAsInTheFormat) {
  const auto& reg = OpRegistry::instance();
  ASSERT_EQ(reg.ops().size(), kNumOps);
  for (std::size_t i = 0; i < kNumOps; ++i) {
    const auto id = static_cast<OpId>(i);
    EXPECT_EQ(reg.get(id).id, id);
    EXPECT_EQ(reg.get(id).name, op_name(id));
    ASSERT_NE(reg.find(op_name(id)), nullptr);
    EXPECT_EQ(reg.find(op_name(id))->id, id);
    EXPECT_EQ(find_op_id(op_name(id)), id);
  }
  EXPECT_EQ(reg.find("gelu_exact"), nullptr);
  EXPECT_EQ(find_op_id("Add"), std::nullopt);
}

TEST(OpRegistry, TraitsSayHowPassesTreatAnOp) {
  EXPECT_EQ(op_def(OpId::sum).reduction, ReductionKind::statistic);
  EXPECT_EQ(op_def(OpId::rmsnorm).reduction, ReductionKind::normalization);
  EXPECT_EQ(op_def(OpId::softmax).reduction, ReductionKind::normalization);
  EXPECT_EQ(op_def(OpId::relu).reduction, ReductionKind::none);
  EXPECT_EQ(op_def(OpId::add).epilogue, EpilogueOp::add);
  EXPECT_EQ(op_def(OpId::gelu).epilogue, EpilogueOp::gelu_erf);
  EXPECT_EQ(op_def(OpId::gelu_tanh).epilogue, EpilogueOp::gelu_tanh);
  EXPECT_EQ(op_def(OpId::batchnorm).epilogue, EpilogueOp::batchnorm);
  EXPECT_EQ(op_def(OpId::silu).epilogue, EpilogueOp::none);
  EXPECT_TRUE(op_def(OpId::le).comparison);
  EXPECT_FALSE(op_def(OpId::sub).comparison);
  EXPECT_EQ(op_def(OpId::max_pool2d).op_class, OpClass::opaque);
  EXPECT_EQ(op_def(OpId::concat).max_inputs, -1);
  EXPECT_TRUE(op_def(OpId::dropout).random);
}

TEST(OpRegistry, NodesCarryTheirIdFromLoad) {
  GraphSpec spec;
  spec.name = "ids";
  spec.inputs.push_back(GraphInput{"x", TensorType{Shape{4, 8}, DType::f32}, Role::activation});
  NodeSpec a;
  a.name = "a";
  a.op = "gelu_tanh";
  a.inputs = {std::string("x")};
  NodeSpec s;
  s.name = "s";
  s.op = "sum";
  s.inputs = {std::string("a")};
  spec.nodes = {a, s};
  spec.outputs = {"s"};
  auto g = build_graph(spec);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->node(0).op_id(), OpId::gelu_tanh);
  EXPECT_EQ(g->node(1).op_id(), OpId::sum);
  EXPECT_EQ(g->node(1).op_class(), OpClass::reduction);
}

}  // namespace
}  // namespace fx
