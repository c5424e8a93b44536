// A view (a reshape alone: core/analysis/views.h) is no kernel anywhere in the window: not in the status bar's
// kernel count, not as a predicted 48 MiB box on the graph or in the kernels view, and the Explanation says what
// it is. The exported GPT-2 block has 12 of them.
#include <QLabel>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTextDocumentFragment>
#include <gtest/gtest.h>

#include "app/gui/explain_panel.h"
#include "app/gui/graph_scene.h"
#include "app/gui/main_window.h"
#include "tests/app/picture_wait.h"

namespace fx::app {
namespace {

QString plain(const QString& html) { return QTextDocumentFragment::fromHtml(html).toPlainText(); }

const NodeItem* op_item(const GraphScene& scene, const QString& name) {
  for (const NodeItem* item : scene.node_items()) {
    if (item->node().name == name && item->node().kind != DrawnNode::Kind::input) return item;
  }
  return nullptr;
}

TEST(ViewsGui, AViewIsNoKernelOnTheGraphInTheCountsAndInTheExplanation) {
  MainWindow w;
  w.set_confirm_close(false);
  w.resize(1400, 900);
  and_wait(w, [&] { ASSERT_TRUE(w.open_file(QStringLiteral(FX_SOURCE_DIR "/sample_graphs/gpt2_block_hf.json"), true)); });
  const Graph& g = w.session().graph();
  const auto* kernels = w.statusBar()->findChild<QLabel*>(QStringLiteral("status.kernels"));
  ASSERT_NE(kernels, nullptr);
  const int ops = g.num_nodes();
  EXPECT_EQ(kernels->text(), QStringLiteral("kernels %1 → %1").arg(ops - 12));
  EXPECT_TRUE(kernels->toolTip().contains(QStringLiteral("12 before, 12 after"))) << kernels->toolTip().toStdString();

  // On the graph: view_6 (between the attention output GEMM and the residual add) says it is a view, names no
  // kernel and predicts no bytes; its neighbour add_1 is a kernel with its time.
  const NodeItem* view = op_item(*w.scene(), QStringLiteral("view_6"));
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view->node().kernel_line, QStringLiteral("view of addmm_1: no kernel, 0 B"));
  EXPECT_FALSE(view->toolTip().contains(QStringLiteral("kernel: fx_"))) << view->toolTip().toStdString();
  EXPECT_TRUE(view->toolTip().contains(QStringLiteral("view of addmm_1: no kernel"))) << view->toolTip().toStdString();
  const NodeItem* add = op_item(*w.scene(), QStringLiteral("add_1"));
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(add->node().kernel_line.startsWith(QStringLiteral("predicted "))) << add->node().kernel_line.toStdString();
  EXPECT_TRUE(add->toolTip().contains(QStringLiteral("kernel: fx_g_add_1"))) << add->toolTip().toStdString();

  // The kernels view (one box per group): the view's box is no kernel either.
  and_wait(w, [&] { w.set_view_mode(ViewMode::collapsed); });
  int view_boxes = 0;
  for (const NodeItem* item : w.scene()->node_items()) {
    if (item->node().kind != DrawnNode::Kind::group && item->node().kind != DrawnNode::Kind::op) continue;
    if (!item->node().kernel_line.contains(QStringLiteral("no kernel"))) continue;
    ++view_boxes;
    EXPECT_FALSE(item->node().kernel_line.contains(QStringLiteral("MiB"))) << item->node().kernel_line.toStdString();
  }
  EXPECT_EQ(view_boxes, 12);

  // The Explanation panel: what a view is, and no kernel name.
  ExplainPanel* explain = w.explain_panel();
  const Plan& plan = w.session().engine().plan();
  explain->show_group(w.session(), plan.group_of(*g.find_node("view_6")));
  const QString text = plain(explain->html());
  EXPECT_TRUE(text.contains(QStringLiteral("A view: no kernel, no HBM traffic"))) << text.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral("view_6 (reshape) reads the bytes of addmm_1 as they lie"))) << text.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral("It is not counted as a kernel"))) << text.toStdString();
  EXPECT_FALSE(text.contains(QStringLiteral("Kernel:"))) << text.toStdString();
  EXPECT_FALSE(text.contains(QStringLiteral("Memory traffic"))) << text.toStdString();

  // Fused: the count drops, and a fused kernel holding reshapes counts only its other ops as unfused kernels.
  and_wait(w, [&] { w.set_view_mode(ViewMode::fused); });
  and_wait(w, [&] { w.session().auto_fuse(); });
  const Plan& fused = w.session().engine().plan();
  EXPECT_EQ(kernels->text(), QStringLiteral("kernels %1 → %2").arg(ops - 12).arg(fused.kernel_count()));
  const int mlp = fused.group_of(*g.find_node("mul_1"));
  const Group& group = fused.groups()[static_cast<std::size_t>(mlp)];
  int reshapes = 0;
  for (NodeId n : group.nodes) reshapes += g.node(n).op_id() == OpId::reshape ? 1 : 0;
  ASSERT_GT(reshapes, 0) << group.id;  // the GELU between the MLP's GEMMs takes view_8 and view_9 in
  explain->show_group(w.session(), mlp);
  const QString unfused_row = QStringLiteral("Unfused (%1 kernels)").arg(group.nodes.size() - reshapes);
  EXPECT_TRUE(plain(explain->html()).contains(unfused_row)) << plain(explain->html()).toStdString();
}

}  // namespace
}  // namespace fx::app
