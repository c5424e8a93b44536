// "Compare with plan...": our hand-made plan of the crafted MLP (python/tests/fixtures) with Inductor's plan of
// it laid over, offscreen: badges on the scene, the panel's lists, both sides' answers for a pair, a refusal
// of another graph's plan, and the comparison following accept/undo.
#include <QGraphicsItem>
#include <gtest/gtest.h>

#include "app/gui/compare_panel.h"
#include "app/gui/graph_drawing.h"
#include "app/gui/graph_layout.h"
#include "app/gui/graph_scene.h"
#include "app/gui/session.h"

namespace fx::app {
namespace {

const QString kFixtures = QStringLiteral(FX_SOURCE_DIR "/python/tests/fixtures/");

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto doc = load_document(kFixtures + "crafted_our_plan_mlp.json", DeviceDescription::h200());
    ASSERT_TRUE(std::holds_alternative<LoadedDocument>(doc)) << std::get<LoadFailure>(doc).text().toStdString();
    session.set_document(std::get<LoadedDocument>(std::move(doc)));
    draw();
    panel = std::make_unique<ComparePanel>(&session, &scene);
  }
  void draw() {
    auto drawing = std::make_shared<const DrawnGraph>(build_drawing(session.graph(), session.group_infos(), ViewMode::fused));
    const LayoutResult layout = layout_with_dot(layout_input(*drawing));
    ASSERT_TRUE(layout.ok) << layout.error.toStdString();
    scene.show_drawing(drawing, layout);
  }
  NodeId node(const char* name) const { return *session.graph().find_node(name); }
  QGraphicsItem* badge_of(const char* name) const {
    for (NodeItem* item : scene.node_items()) {
      if (item->node().kind == DrawnNode::Kind::op && item->node().node == node(name)) {
        for (QGraphicsItem* child : item->childItems())
          if (child->data(0).isValid()) return child;
      }
    }
    return nullptr;
  }
  Session session;
  GraphScene scene;
  std::unique_ptr<ComparePanel> panel;
};

TEST_F(CompareTest, BadgesMarkNodesWhoseGroupsAgreeAndDiffer) {
  ASSERT_TRUE(panel->load(kFixtures + "crafted_inductor_plan_mlp.json")) << panel->error().toStdString();
  EXPECT_EQ(panel->badge_count(true), 2);   // layer_norm and view: the same group on both sides
  EXPECT_EQ(panel->badge_count(false), 6);  // the two linears, gelu, the residual add
  ASSERT_NE(badge_of("gelu"), nullptr);
  EXPECT_TRUE(badge_of("gelu")->toolTip().contains("Grouped differently in crafted_inductor_plan_mlp.json"));
  EXPECT_TRUE(badge_of("gelu")->toolTip().contains("op2_op3"));
  EXPECT_TRUE(badge_of("linear/matmul")->toolTip().contains("library call extern_kernels.mm"));
  EXPECT_TRUE(badge_of("layer_norm")->toolTip().startsWith("Same group"));
  EXPECT_TRUE(panel->html().contains("2 groups agree, 3 only in this plan, 4 only in crafted_inductor_plan_mlp.json"));
  // A relayout makes new items: the overlay is put on them again, once.
  draw();
  EXPECT_EQ(panel->badge_count(false), 0);
  panel->apply_overlay();
  panel->apply_overlay();
  EXPECT_EQ(panel->badge_count(false), 6);
}

TEST_F(CompareTest, APairShowsOurReasonAndInductors) {
  ASSERT_TRUE(panel->load(kFixtures + "crafted_inductor_plan_mlp.json"));
  panel->show_pair(node("linear/matmul"), node("linear"));
  QString html = panel->html();
  EXPECT_TRUE(html.contains("one kernel, group")) << html.toStdString();  // ours fused them
  EXPECT_TRUE(html.contains("kept apart")) << html.toStdString();
  EXPECT_TRUE(html.contains("cannot fuse op1 with op2_op3: node1 is extern or nop")) << html.toStdString();
  // Inductor fused the bias add into the residual add; our plan did not: our engine's decision is shown.
  panel->show_pair(node("linear_1"), node("add"));
  html = panel->html();
  const FusionDecision ours = session.engine().explain(node("linear_1"), node("add"));
  EXPECT_TRUE(html.contains(QString::fromStdString(std::string(to_string(ours.reason))))) << html.toStdString();
  EXPECT_TRUE(html.contains("one kernel, <code>k4</code> (op5_op6)")) << html.toStdString();
}

TEST_F(CompareTest, SelectingTwoNodesAsksForThePair) {
  ASSERT_TRUE(panel->load(kFixtures + "crafted_inductor_plan_mlp.json"));
  for (NodeItem* item : scene.node_items()) {
    if (item->node().kind == DrawnNode::Kind::op &&
        (item->node().node == node("layer_norm") || item->node().node == node("linear/matmul")))
      item->setSelected(true);
  }
  EXPECT_TRUE(panel->html().contains("cannot fuse op0 with op1: node2 is extern or nop")) << panel->html().toStdString();
}

TEST_F(CompareTest, AnotherGraphsPlanIsRefusedAndNothingIsOverlaid) {
  EXPECT_FALSE(panel->load(QStringLiteral(FX_SOURCE_DIR "/sample_graphs/softmax.json")));
  EXPECT_TRUE(panel->error().contains("plan of another graph")) << panel->error().toStdString();
  EXPECT_FALSE(panel->active());
  EXPECT_EQ(panel->badge_count(false) + panel->badge_count(true), 0);
  EXPECT_FALSE(panel->load(kFixtures + "missing.json"));
  EXPECT_FALSE(panel->error().isEmpty());
}

TEST_F(CompareTest, TheComparisonFollowsThePlan) {
  ASSERT_TRUE(panel->load(kFixtures + "crafted_inductor_plan_mlp.json"));
  ASSERT_EQ(panel->comparison()->diff.only_a.size(), 3u);
  session.auto_fuse();  // our engine's own plan replaces the hand-made one
  ASSERT_TRUE(panel->active());
  const std::size_t after = panel->comparison()->diff.only_a.size() + panel->comparison()->diff.both.size();
  EXPECT_EQ(after, session.engine().plan().groups().size());
  session.undo_stack()->undo();
  EXPECT_EQ(panel->comparison()->diff.only_a.size(), 3u);
}

}  // namespace
}  // namespace fx::app
