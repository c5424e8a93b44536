// A group has one name everywhere: the graph's labels and tooltips, the candidates table, the Explanation panel
// and the generated kernel all say g:mul / fx_g_mul, so a learner can match a run report's kernel to the graph.
#include <QAbstractItemModel>
#include <QApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <iostream>
#include <gtest/gtest.h>

#include "app/gui/candidates_panel.h"
#include "app/gui/explain_panel.h"
#include "app/gui/graph_scene.h"
#include "app/gui/main_window.h"
#include "tests/app/picture_wait.h"
#include "core/fusion/kernel_names.h"

namespace fx::app {
namespace {

TEST(GroupNames, OneNameOnTheGraphInThePanelsAndInTheKernel) {
  MainWindow w;
  w.set_confirm_close(false);
  w.resize(1400, 900);
  and_wait(w, [&] { ASSERT_TRUE(w.open_file(QStringLiteral(FX_SOURCE_DIR "/sample_graphs/relu_mul_add.json"), true)); });
  // Unfused: each op's tooltip names the kernel it runs as, after its own group.
  for (const NodeItem* item : w.scene()->node_items()) {
    if (item->node().kind != DrawnNode::Kind::op) continue;
    const Plan& plan = w.session().engine().plan();
    const int group = plan.group_of(item->node().node);
    const QString kernel = QString::fromStdString(group_kernel_name(w.session().graph(), plan, group));
    EXPECT_TRUE(item->toolTip().contains(QStringLiteral("kernel: ") + kernel)) << item->toolTip().toStdString();
  }
  and_wait(w, [&] { w.session().auto_fuse(); });
  const Plan& plan = w.session().engine().plan();
  ASSERT_EQ(plan.groups().size(), 1u);
  const QString id = QString::fromStdString(plan.groups()[0].id);
  const QString kernel = QString::fromStdString(group_kernel_name(w.session().graph(), plan, 0));
  EXPECT_EQ(id, QStringLiteral("g:mul"));
  EXPECT_EQ(kernel, QStringLiteral("fx_g_mul"));
  // The graph: the cluster is labelled with the id, its ops' tooltips name the kernel.
  ASSERT_EQ(w.scene()->cluster_items().size(), 1u);
  EXPECT_TRUE(w.scene()->cluster_items()[0]->cluster().label.startsWith(id));
  int ops = 0;
  for (const NodeItem* item : w.scene()->node_items()) {
    if (item->node().kind != DrawnNode::Kind::op) continue;
    ++ops;
    EXPECT_TRUE(item->toolTip().contains(QStringLiteral("group: ") + id)) << item->toolTip().toStdString();
    EXPECT_TRUE(item->toolTip().contains(QStringLiteral("kernel: ") + kernel)) << item->toolTip().toStdString();
  }
  EXPECT_EQ(ops, 3);
  // The Explanation panel: the id as its title, the kernel by the same name, and the generated source's kernel.
  ExplainPanel* explain = w.explain_panel();
  explain->show_group(w.session(), 0);
  EXPECT_TRUE(explain->html().contains(id));
  EXPECT_TRUE(explain->html().contains(kernel));
  QElapsedTimer clock;
  clock.start();
  while (explain->source().contains(QStringLiteral("// generating")) && clock.elapsed() < 60000) QApplication::processEvents();
  if (explain->source().contains(QStringLiteral("extern \"C\"")))
    EXPECT_TRUE(explain->source().contains(QStringLiteral("void __launch_bounds__(")) &&
                explain->source().contains(QStringLiteral(") ") + kernel + QStringLiteral("(")))
        << explain->source().toStdString();
  else
    std::cout << "[ note ] no generated source here (" << explain->source().left(80).toStdString() << ")\n";
}

// After a merge, the candidates table names the merged group by the id its cluster on the graph carries.
TEST(GroupNames, CandidatesNameGroupsAsTheGraphDoes) {
  MainWindow w;
  w.set_confirm_close(false);
  w.resize(1400, 900);
  and_wait(w, [&] { ASSERT_TRUE(w.open_file(QStringLiteral(FX_SOURCE_DIR "/sample_graphs/relu_mul_add.json"), true)); });
  and_wait(w, [&] { ASSERT_TRUE(w.session().accept(QStringLiteral("v:mul+add")).fuse); });
  ASSERT_EQ(w.scene()->cluster_items().size(), 1u);
  const QString cluster = w.scene()->cluster_items()[0]->cluster().label.section(QLatin1Char(' '), 0, 0);
  EXPECT_EQ(cluster, QStringLiteral("g:mul"));
  QAbstractItemModel* model = w.candidates_panel()->model();
  ASSERT_EQ(model->rowCount(), 1);
  const QString tip = model->data(model->index(0, 0), Qt::ToolTipRole).toString();
  EXPECT_TRUE(tip.contains(cluster + QStringLiteral(" + g:y"))) << tip.toStdString();
}

// An attention chain auto-fuses to one group: the Explanation names its cuDNN call and says what the one kernel saves.
TEST(GroupNames, AttentionGroupIsExplainedWithTheBytesItSaves) {
  MainWindow w;
  w.set_confirm_close(false);
  w.resize(1400, 900);
  and_wait(w, [&] { ASSERT_TRUE(w.open_file(QStringLiteral(FX_SOURCE_DIR "/sample_graphs/attention_bf16.json"), true)); });
  and_wait(w, [&] { w.session().auto_fuse(); });
  ASSERT_EQ(w.session().engine().plan().groups().size(), 1u);
  ExplainPanel* explain = w.explain_panel();
  explain->show_group(w.session(), 0);
  const QString html = explain->html();
  EXPECT_TRUE(html.contains(QStringLiteral("attention"))) << html.toStdString();
  EXPECT_TRUE(html.contains(QStringLiteral("cudnn_g_kT"))) << html.toStdString();
  EXPECT_TRUE(html.contains(QStringLiteral("score matrix (192 MiB) never reaches HBM"))) << html.toStdString();
}

}  // namespace
}  // namespace fx::app
