// The GUI teaches truthfully: the Before view shows the unfused plan's own numbers, Before | After moves both
// panes together, why-not answers name the nodes and land on the graph, run reports are checked against the
// graph and plan, the roofline and mismatch flags come from what a run measured, fusion is visible on the
// edges, and the Help and projector settings exist. Offscreen, asserting on the scenes and the panels' text.
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QDockWidget>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <gtest/gtest.h>

#include "app/gui/candidates_panel.h"
#include "app/gui/charts.h"
#include "app/gui/explain_panel.h"
#include "app/gui/graph_scene.h"
#include "app/gui/graph_view.h"
#include "app/gui/help_dialog.h"
#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "app/gui/side_by_side_view.h"
#include "app/gui/whatif_panel.h"
#include "tests/app/picture_wait.h"
#include "core/graph/content_hash.h"
#include "core/graph/graph_io.h"
#include "tests/app/report_fixture.h"

namespace fx::app {
namespace {

const QString kSamples = QStringLiteral(FX_SOURCE_DIR "/sample_graphs/");

std::unique_ptr<MainWindow> open_window(const QString& sample) {
  auto w = std::make_unique<MainWindow>();
  w->set_confirm_close(false);
  w->resize(1400, 900);
  and_wait(*w, [&] { EXPECT_TRUE(w->open_file(kSamples + sample, true)); });
  return w;
}

NodeItem* box(GraphScene* scene, const Session& s, const char* name) {
  return scene->item_for(*s.graph().find_node(name));
}

// A report of the open graph: `plan_hash` decides whether it measured the plan on screen.
QString write_report(QTemporaryDir& dir, MainWindow& w, const QString& plan_hash, const QString& graph_hash) {
  RunReport r = test::two_plans(w.session().graph().name(),
                                {{"k1", "g:q_mm", {"q_mm"}, 11.0, 10.5}, {"k2", "g:q_b", {"q_b"}, 7.0}},
                                {{"k3", "g:q_mm", {"q_mm", "q_b"}, 99.0, 12.0, 300000000, 48234496, 135266304, true}});
  r.graph_hash = graph_hash.toStdString();
  r.plan_hash = plan_hash.toStdString();
  r.speedup = 1.4;
  r.hbm_traffic_reduction = 1.5;
  r.hbm_traffic_reduction_predicted = 1.6;
  return test::write_report(dir, r);
}

QString plan_hash(MainWindow& w) {
  return QString::fromStdString(plan_content_hash(w.session().graph(), w.session().engine().plan()));
}
QString graph_hash(MainWindow& w) { return QString::fromStdString(graph_content_hash(w.session().graph())); }

// 1. After accepting fusions, the Before view still shows each op's own prediction, the unfused plan's
// measurement, and only the refusals the engine makes on the unfused graph.
TEST(Truth, BeforeViewShowsTheUnfusedGraphsOwnNumbers) {
  auto w = open_window(QStringLiteral("gpt2_block.json"));
  and_wait(*w, [&] { w->session().auto_fuse(); });
  QTemporaryDir dir;
  ASSERT_TRUE(w->run_panel()->open_report(write_report(dir, *w, plan_hash(*w), graph_hash(*w))));
  and_wait(*w, [&] { w->set_view_mode(ViewMode::unfused); });
  const Session& s = w->session();
  const FusionEngine before(s.graph_ptr(), s.device(), s.engine().options());
  const Plan unfused = Plan::unfused(s.graph(), s.engine().cost_model());
  for (const NodeItem* item : w->scene()->node_items()) {
    if (item->node().kind != DrawnNode::Kind::op) continue;
    const Group& own = unfused.group_of_node(item->node().node);
    const QString bytes = QString::fromStdString(format_bytes(static_cast<double>(own.cost.bytes_read + own.cost.bytes_written)));
    // A reshape alone (q_r, the head split's view) is no kernel: its box says so instead of a prediction.
    const QString line = own.is_view() ? QStringLiteral("view of ") : QString(QStringLiteral("predicted ") + bytes);
    EXPECT_TRUE(item->node().kernel_line.startsWith(line)) << item->node().kernel_line.toStdString();
  }
  // q_mm's own measurement in the unfused plan (11 µs), not the fused kernel's 99 µs.
  EXPECT_TRUE(box(w->scene(), s, "q_mm")->measured().startsWith(QStringLiteral("11.0 µs")))
      << box(w->scene(), s, "q_mm")->measured().toStdString();
  EXPECT_TRUE(box(w->scene(), s, "q_b")->measured().startsWith(QStringLiteral("7.0 µs")));
  // A red edge is one the engine refuses on the unfused graph.
  int red = 0;
  for (const EdgeItem* e : w->scene()->edge_items()) {
    if (!e->rejected()) continue;
    ++red;
    const auto producer = s.graph().producer(e->edge().value);
    ASSERT_TRUE(producer);
    EXPECT_FALSE(before.explain(*producer, e->edge().consumer).fuse) << e->toolTip().toStdString();
  }
  EXPECT_GT(red, 0);
  EXPECT_FALSE(box(w->scene(), s, "scores")->node().kernel_line.isEmpty());
}

// Before | After: two panes, the unfused one without groups, the fused one with them; zoom and selection follow.
TEST(Truth, SideBySidePanesMoveTogether) {
  auto w = open_window(QStringLiteral("gpt2_block.json"));
  and_wait(*w, [&] { w->session().auto_fuse(); });
  and_wait(*w, [&] { w->set_side_by_side(true); });
  SideBySideView* side = w->side_by_side_view();
  GraphScene* before = side->scene(SideBySideView::before);
  GraphScene* after = side->scene(SideBySideView::after);
  ASSERT_NE(before->drawing(), nullptr);
  ASSERT_NE(after->drawing(), nullptr);
  EXPECT_EQ(before->drawing()->mode, ViewMode::unfused);
  EXPECT_EQ(after->drawing()->mode, ViewMode::fused);
  EXPECT_TRUE(before->cluster_items().empty());
  EXPECT_FALSE(after->cluster_items().empty());
  side->view(SideBySideView::before)->zoom_by(1.5);
  EXPECT_DOUBLE_EQ(side->view(SideBySideView::after)->zoom(), side->view(SideBySideView::before)->zoom());
  box(before, w->session(), "probs")->setSelected(true);
  EXPECT_TRUE(box(after, w->session(), "probs")->isSelected());
}

// 2. Why-not: the picked nodes named with their kernels, the path and blocking edge on the graph, the
// refusal in the edge's tool tip as a sentence.
TEST(Truth, WhyNotAnswersNameTheNodesAndLandOnTheGraph) {
  auto w = open_window(QStringLiteral("gpt2_block.json"));
  and_wait(*w, [&] { w->session().auto_fuse(); });
  const Session& s = w->session();
  box(w->scene(), s, "q_b")->setSelected(true);
  box(w->scene(), s, "masked")->setSelected(true);
  w->why_not_fused();
  ASSERT_TRUE(w->last_answer());
  const QString html = w->explain_panel()->html();
  EXPECT_TRUE(html.contains(QStringLiteral("(in kernel"))) << html.toStdString();
  EXPECT_FALSE(html.contains(QStringLiteral("NOT_RELATED")));
  ASSERT_TRUE(w->last_answer()->blocking);
  const auto [from, to] = *w->last_answer()->blocking;
  int lit = 0;
  for (const EdgeItem* e : w->scene()->edge_items()) {
    if (!e->highlighted()) continue;
    ++lit;
    EXPECT_EQ(e->edge().consumer, to);
    EXPECT_EQ(*s.graph().producer(e->edge().value), from);
  }
  EXPECT_EQ(lit, 1);
  EXPECT_TRUE(box(w->scene(), s, "q_b")->is_highlighted());
  EXPECT_TRUE(box(w->scene(), s, "masked")->is_highlighted());
  // A refused edge's tool tip is a sentence with the code, not the code alone.
  bool sentence = false;
  for (const EdgeItem* e : w->scene()->edge_items())
    if (e->rejected()) sentence = sentence || (e->toolTip().contains(QStringLiteral("Not fused")) && e->toolTip().size() > 80);
  EXPECT_TRUE(sentence);
}

// 3. A report of another graph is refused; of another plan it is shown in the tables with the plan to load;
// once loaded it is the plan on screen.
TEST(Truth, ReportsAreCheckedAgainstTheGraphAndPlan) {
  auto w = open_window(QStringLiteral("gpt2_block.json"));
  QTemporaryDir dir;
  RunPanel* run = w->run_panel();
  EXPECT_FALSE(run->open_report(write_report(dir, *w, plan_hash(*w), QStringLiteral("0123456789abcdef"))));
  EXPECT_FALSE(run->report());
  EXPECT_TRUE(run->findChild<QLabel*>()->text().contains(QStringLiteral("another graph")));

  // Measured for the auto-fused plan while the open plan is the unfused one.
  FusionEngine other(w->session().graph_ptr(), w->session().device());
  other.auto_fuse();
  const QString other_hash = QString::fromStdString(plan_content_hash(w->session().graph(), other.plan()));
  QString path = write_report(dir, *w, other_hash, graph_hash(*w));
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  QJsonObject doc = QJsonDocument::fromJson(f.readAll()).object();
  f.close();
  doc[QStringLiteral("fusion")] =
      QJsonDocument::fromJson(QByteArray::fromStdString(other.save_fused_graph())).object()[QStringLiteral("fusion")];
  ASSERT_TRUE(write_text_file_atomic(path.toStdString(), QJsonDocument(doc).toJson().toStdString()));
  ASSERT_TRUE(run->open_report(path));
  EXPECT_EQ(run->report_check().match, ReportMatch::other_plan);
  EXPECT_TRUE(run->measured_groups_of(QStringLiteral("fused")).empty());
  EXPECT_FALSE(run->measured_groups_of(QStringLiteral("unfused")).empty());
  QPushButton* load = nullptr;
  for (QPushButton* b : run->findChildren<QPushButton*>())
    if (b->text() == QStringLiteral("Load the measured plan")) load = b;
  ASSERT_TRUE(load);
  EXPECT_FALSE(load->isHidden());
  and_wait(*w, [&] { load->click(); });
  EXPECT_EQ(plan_hash(*w), other_hash);
  EXPECT_EQ(run->report_check().match, ReportMatch::same);
  EXPECT_FALSE(run->measured_groups_of(QStringLiteral("fused")).empty());
}

// 4 and 5. A real report (fusion-cli run on an H100) draws kernels on the roofline; a group measured far
// from its prediction is flagged in the table and on the graph; one summary line.
TEST(Truth, RooflineMismatchFlagsAndSummaryComeFromTheRun) {
  QFile f(QStringLiteral(FX_SOURCE_DIR "/tests/data/run-reports/relu_mul_add.h100.json"));
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  QString error;
  const auto real = read_report(f.readAll(), &error);
  ASSERT_TRUE(real) << error.toStdString();
  EXPECT_GT(roofs_of(*real).hbm_bandwidth, 1e12);
  EXPECT_GT(roofs_of(*real).peak_flops, 1e13);
  EXPECT_GE(roofline_points(*real).size(), 4u);  // 3 unfused kernels and the fused one
  EXPECT_EQ(summary_line(*real),
            QStringLiteral("Measured: HBM traffic 1.99× less (predicted 2.00×) · speedup %1× · outputs verified: yes")
                .arg(real->speedup, 0, 'f', 2));

  auto w = open_window(QStringLiteral("gpt2_block.json"));
  and_wait(*w, [&] { w->session().auto_fuse(); });
  QTemporaryDir dir;
  ASSERT_TRUE(w->run_panel()->open_report(write_report(dir, *w, plan_hash(*w), graph_hash(*w))));
  auto* table = w->run_panel()->findChild<QTableWidget*>();
  ASSERT_TRUE(table);
  int flagged = 0;
  for (int r = 0; r < table->rowCount(); ++r) flagged += table->item(r, 8)->text().startsWith(QStringLiteral("⚠"));
  EXPECT_EQ(flagged, 1);  // k3: 332 MiB vs 129 MiB, 99 µs vs 12 µs
  bool on_graph = false;
  for (const ClusterItem* c : w->scene()->cluster_items()) on_graph = on_graph || (c->cluster().label.startsWith("g:q_mm") && c->mismatch());
  EXPECT_TRUE(on_graph);
  bool summary = false;
  for (const QLabel* l : w->run_panel()->findChildren<QLabel*>())
    summary = summary || l->text().startsWith(QStringLiteral("Measured: HBM traffic 1.50× less (predicted 1.60×)"));
  EXPECT_TRUE(summary);
}

// 6. Edges inside a fused group are drawn as on chip; refusals stay red with their sentence; a legal merge
// that only does not pay is not drawn as a refusal.
TEST(Truth, FusionIsVisibleOnTheEdges) {
  auto w = open_window(QStringLiteral("gpt2_block.json"));
  and_wait(*w, [&] { w->session().auto_fuse(); });
  int on_chip = 0, hbm = 0;
  for (const EdgeItem* e : w->scene()->edge_items()) {
    if (e->edge().on_chip) {
      ++on_chip;
      EXPECT_EQ(e->edge().label, QStringLiteral("on chip"));
      EXPECT_FALSE(e->rejected());
      EXPECT_TRUE(e->toolTip().contains(QStringLiteral("never written to HBM")));
    } else {
      ++hbm;
      EXPECT_TRUE(e->edge().label.endsWith(QStringLiteral("iB"))) << e->edge().label.toStdString();
    }
  }
  EXPECT_GT(on_chip, 5);
  EXPECT_GT(hbm, 5);
  and_wait(*w, [&] { w->set_view_mode(ViewMode::collapsed); });
  for (const EdgeItem* e : w->scene()->edge_items()) {
    EXPECT_FALSE(e->edge().on_chip);
    EXPECT_NE(e->rejected_reason(), QStringLiteral("NOT_PROFITABLE"));
  }
}

// 7. Labels: a producer merged into a layernorm is a prologue (the exported block's residual add into the second
// layernorm); the GUI plans for the CLI's default device; the generated source folds the helpers every kernel shares.
TEST(Truth, LabelsSayWhatHappened) {
  auto w = open_window(QStringLiteral("gpt2_block_hf.json"));
  and_wait(*w, [&] { w->session().auto_fuse(); });
  bool prologue = false;
  for (const ClusterItem* c : w->scene()->cluster_items()) {
    EXPECT_FALSE(c->cluster().label.contains(QStringLiteral("(merge)")));
    prologue = prologue || c->cluster().label.contains(QStringLiteral("prologue"));
  }
  EXPECT_TRUE(prologue);
  EXPECT_EQ(w->session().device().name, DeviceDescription::default_device().name);
  const QString source = QStringLiteral(
      "// group 0\n// ---- Fusion Explorer device helpers (the same in every generated kernel) ----\n"
      "__device__ float fx_f16_to_f32(unsigned short h);\n// ---- end of helpers ----\n"
      "extern \"C\" __global__ void fx_g0_y() {}\n");
  const QString folded = fold_shared_helpers(source);
  EXPECT_FALSE(folded.contains(QStringLiteral("fx_f16_to_f32")));
  EXPECT_TRUE(folded.contains(QStringLiteral("3 lines of device helpers shared by every kernel")));
  EXPECT_TRUE(folded.contains(QStringLiteral("fx_g0_y")));
}

// 8. Help: the shortcuts page lists the window's own shortcuts; the reading guide explains the edges; the
// Why-not action no longer wears the "?" icon the Help menu uses.
TEST(Truth, HelpMenuAndItsPages) {
  MainWindow w;
  w.set_confirm_close(false);
  QStringList menus;
  for (QAction* a : w.menuBar()->actions()) menus << a->text();
  EXPECT_TRUE(menus.contains(QStringLiteral("&Help")));
  const QString keys = shortcuts_html(&w);
  EXPECT_TRUE(keys.contains(QStringLiteral("Why not fused?")));
  EXPECT_TRUE(keys.contains(QKeySequence(Qt::CTRL | Qt::Key_W).toString(QKeySequence::NativeText)));
  EXPECT_TRUE(keys.contains(QStringLiteral("Larger text")));
  EXPECT_TRUE(reading_guide_html().contains(QStringLiteral("on chip")));
  QAction* why = nullptr;
  QAction* help = nullptr;
  for (QAction* a : w.findChildren<QAction*>()) {
    if (a->text() == QStringLiteral("&Why not fused?")) why = a;
    if (a->text() == QStringLiteral("&Keyboard shortcuts")) help = a;
  }
  ASSERT_TRUE(why && help);
  EXPECT_NE(why->icon().pixmap(24).toImage(), help->icon().pixmap(24).toImage());
}

// 9. Projector: text zoom scales the graph's fonts and boxes; left-to-right layout; closed panels come back
// from the View menu.
TEST(Truth, ProjectorSettings) {
  auto w = open_window(QStringLiteral("relu_mul_add.json"));
  const double width = w->scene()->node_items().back()->node().size.width();
  and_wait(*w, [&] { w->set_ui_scale(1.5); });
  EXPECT_DOUBLE_EQ(title_font().pointSizeF(), 15.0);
  EXPECT_GT(w->scene()->node_items().back()->node().size.width(), width * 1.2);
  and_wait(*w, [&] { w->set_ui_scale(1.0); });
  and_wait(*w, [&] { w->set_left_to_right(true); });
  ASSERT_TRUE(w->scene()->drawing()->left_to_right);
  for (const EdgeItem* e : w->scene()->edge_items()) {
    const NodeItem* a = w->scene()->node_items()[static_cast<std::size_t>(e->edge().from)];
    const NodeItem* b = w->scene()->node_items()[static_cast<std::size_t>(e->edge().to)];
    EXPECT_LT(a->pos().x(), b->pos().x());
  }
  and_wait(*w, [&] { w->set_left_to_right(false); });
  QDockWidget* explanation = nullptr;
  for (QDockWidget* d : w->findChildren<QDockWidget*>())
    if (d->objectName() == QStringLiteral("dock.explain")) explanation = d;
  ASSERT_TRUE(explanation);
  w->show();
  explanation->close();
  EXPECT_FALSE(explanation->isVisible());
  bool found = false;
  for (QMenu* m : w->findChildren<QMenu*>()) {
    if (m->title() != QStringLiteral("&Panels")) continue;
    for (QAction* a : m->actions())
      if (a == explanation->toggleViewAction()) {
        found = true;
        a->trigger();
      }
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(explanation->isVisible());
}

// The what-if panel switches attention off like the other kinds: the attention candidate is then refused as
// disabled, and switching it back on offers it again.
TEST(Truth, WhatIfSwitchesAttentionOff) {
  auto w = open_window(QStringLiteral("attention_bf16.json"));
  auto* panel = w->findChild<WhatIfPanel*>();
  ASSERT_NE(panel, nullptr);
  QCheckBox* attention = nullptr;
  for (QCheckBox* box : panel->findChildren<QCheckBox*>()) {
    if (box->text().startsWith(QStringLiteral("Attention"))) attention = box;
  }
  ASSERT_NE(attention, nullptr);
  EXPECT_TRUE(attention->isChecked());
  const auto attention_reason = [&] {
    for (const Candidate& c : w->session().engine().candidates()) {
      if (c.kind == FusionKind::attention) return c.decision.reason;
    }
    return Reason::not_related;
  };
  EXPECT_EQ(attention_reason(), Reason::fusible);
  attention->setChecked(false);
  EXPECT_TRUE(panel->options().disabled_kinds.count(FusionKind::attention));
  EXPECT_EQ(attention_reason(), Reason::kind_disabled);
  attention->setChecked(true);
  EXPECT_EQ(attention_reason(), Reason::fusible);
  // A session's options set the box: attention off in them unchecks it.
  EngineOptions off;
  off.disabled_kinds = {FusionKind::attention};
  panel->set_from(off, panel->device());
  EXPECT_FALSE(attention->isChecked());
}

}  // namespace
}  // namespace fx::app
