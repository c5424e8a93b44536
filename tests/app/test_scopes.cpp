// The hierarchy of large graphs: scope trees from names (pure), the scoped drawing and its per-scope layout cache,
// and the main window opening large graphs collapsed, expanding in place, finding into collapsed scopes, the
// minimap's viewport rectangle and relayouts that lay out only the scopes an accept touched.
#include <QApplication>
#include <QScrollBar>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <gtest/gtest.h>

#include "app/gui/graph_scene.h"
#include "app/gui/graph_view.h"
#include "app/gui/layout_runner.h"
#include "app/gui/main_window.h"
#include "app/gui/navigation.h"
#include "app/gui/scope_view.h"
#include "app/gui/scoped_drawing.h"
#include "app/gui/scoped_layout.h"
#include "app/gui/session.h"
#include "core/generate/transformer.h"

namespace fx::app {
namespace {

ScopeTree tree_of(const std::vector<std::string>& names, std::size_t max_items) {
  std::vector<std::string_view> scopes, labels;
  for (const std::string& n : names) {
    scopes.push_back(scope_prefix(n));
    labels.push_back(n);
  }
  return ScopeTree::build(scopes, labels, max_items);
}

std::vector<std::string> child_labels(const ScopeTree& t, int scope) {
  std::vector<std::string> out;
  for (int c : t.scope(scope).scopes) out.push_back(t.scope(c).label);
  return out;
}

TEST(ScopeTree, PrefixesOfDottedAndSlashedNames) {
  EXPECT_EQ(scope_prefix("l0.attn.q_mm"), "l0.attn");
  EXPECT_EQ(scope_prefix("/layer1/0/conv1/Conv"), "/layer1/0/conv1");
  EXPECT_EQ(scope_prefix("relu"), "");
  EXPECT_EQ(scope_prefix("a.b."), "a.b");
  EXPECT_EQ(common_scope("l0.attn", "l0.mlp"), "l0");
  EXPECT_EQ(common_scope("l1.attn", "l12.attn"), "");
  EXPECT_EQ(common_scope("/a/b/c", "/a/b"), "/a/b");
}

TEST(ScopeTree, ScopesFromNamesWithSinglesDissolvedAndChainsMerged) {
  // Two layers of two ops each; "solo.x" is a scope of one and joins the root; the ONNX-style names share a
  // chain "/model/enc" that becomes one scope.
  const ScopeTree t = tree_of({"l0.a", "l0.b", "l1.a", "l1.b", "solo.x", "/model/enc/c1", "/model/enc/c2", "out"}, 100);
  EXPECT_EQ(child_labels(t, 0), (std::vector<std::string>{"l0", "l1", "model/enc"}));
  EXPECT_EQ(t.scope(0).units, (std::vector<int>{4, 7}));
  EXPECT_EQ(t.scope(0).unit_count, 8u);
  const int l1 = t.scope(0).scopes[1];
  EXPECT_EQ(t.scope(l1).units, (std::vector<int>{2, 3}));
  EXPECT_EQ(t.scope_of_unit(3), l1);
  EXPECT_EQ(t.ancestors_of(l1), (std::vector<int>{0, l1}));
}

TEST(ScopeTree, LargeScopesAreSplitIntoRunsOfConsecutiveItems) {
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) names.push_back("n" + std::to_string(i));
  const ScopeTree t = tree_of(names, 100);
  ASSERT_EQ(t.scope(0).scopes.size(), 10u);
  EXPECT_TRUE(t.scope(0).units.empty());
  for (const Scope& s : t.scopes()) EXPECT_LE(s.units.size() + s.scopes.size(), 100u);
  const Scope& first = t.scope(t.scope(0).scopes.front());
  EXPECT_TRUE(first.is_run);
  EXPECT_EQ(first.label, "n0 … n99");
  // 200,000 items with 400 per scope: runs of runs, never more than 400 boxes in one layout.
  names.clear();
  for (int i = 0; i < 200000; ++i) names.push_back("c" + std::to_string(i));
  const ScopeTree big = tree_of(names, 400);
  for (const Scope& s : big.scopes()) EXPECT_LE(s.units.size() + s.scopes.size(), 400u);
  EXPECT_LE(big.scope(0).scopes.size(), 400u);
  EXPECT_EQ(big.scope(0).unit_count, 200000u);
}

TEST(ScopeTree, DeepNamesAreCutAndExpansionStaysWithinBudget) {
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "d.";
  const ScopeTree t = tree_of({deep + "x", deep + "y", "z"}, 100);
  for (std::size_t s = 0; s < t.scopes().size(); ++s) EXPECT_LE(t.depth(static_cast<int>(s)), 32);
  std::vector<std::string> names;
  for (int l = 0; l < 48; ++l)
    for (int k = 0; k < 30; ++k) names.push_back("l" + std::to_string(l) + ".op" + std::to_string(k));
  const ScopeTree layers = tree_of(names, 400);
  const std::vector<bool> open = layers.expanded_within(400);
  EXPECT_EQ(layers.visible_items(open), 48u);  // 48 x 30 does not fit: the layers stay collapsed
  EXPECT_EQ(layers.collapsed_scope_of_unit(31, open), layers.scope_of_unit(31));
  EXPECT_EQ(layers.visible_items(layers.expanded_within(2000)), 1440u);
}

struct Transformer {
  explicit Transformer(int layers) {
    TransformerShape shape;
    shape.layers = layers;
    auto graph = build_graph(transformer_spec(shape));
    auto doc = document_from_graph(QStringLiteral("t.json"), std::move(*graph), DeviceDescription::h200());
    session.set_document(std::get<LoadedDocument>(std::move(doc)));
  }
  Session session;
};

int level_of_scope(const DrawnGraph& d, int scope) {
  for (std::size_t i = 0; i < d.levels.size(); ++i)
    if (d.levels[i].scope == scope) return static_cast<int>(i);
  return -1;
}

TEST(ScopedLayout, ExpandingRelaysOutTheScopeAndItsParentOnlyAndCollapsingReusesTheCache) {
  Transformer t(40);
  const Graph& g = t.session.graph();
  const ScopeUnits units = scope_units(g, t.session.group_infos(), ViewMode::unfused);
  auto tree = build_scope_tree(g, units);
  ASSERT_EQ(tree->scope(0).scopes.size(), 40u);
  std::vector<bool> expanded = tree->expanded_within(kMaxItemsPerScope);
  LayoutCache cache;
  const DrawnGraph closed = build_scoped_drawing(g, t.session.group_infos(), ViewMode::unfused, tree, units, expanded);
  EXPECT_EQ(closed.nodes.size(), 41u);  // 40 layers and the input x
  LayoutResult first = layout_drawing(closed, &cache);
  ASSERT_TRUE(first.ok);
  EXPECT_EQ(cache.dot_runs(), 1);

  const int l7 = tree->scope(0).scopes[7];
  expanded[static_cast<std::size_t>(l7)] = true;
  const DrawnGraph open = build_scoped_drawing(g, t.session.group_infos(), ViewMode::unfused, tree, units, expanded);
  EXPECT_EQ(open.nodes.size(), 41u - 1 + 30);
  const LayoutResult second = layout_drawing(open, &cache);
  ASSERT_TRUE(second.ok);
  EXPECT_EQ(cache.dot_runs(), 3);  // the layer's contents, then the root with the layer's frame in it
  // The layer's frame holds its nodes.
  const QRectF frame = second.cluster_rects[static_cast<std::size_t>(open.levels[static_cast<std::size_t>(level_of_scope(open, l7))].frame)];
  for (int n : open.levels[static_cast<std::size_t>(level_of_scope(open, l7))].nodes)
    EXPECT_TRUE(frame.contains(second.node_centres[static_cast<std::size_t>(n)]));

  expanded[static_cast<std::size_t>(l7)] = false;
  const LayoutResult third = layout_drawing(build_scoped_drawing(g, t.session.group_infos(), ViewMode::unfused, tree, units, expanded), &cache);
  EXPECT_EQ(cache.dot_runs(), 3);  // the collapsed root again: from the cache
  EXPECT_EQ(third.node_centres, first.node_centres);
}

TEST(ScopedLayout, AnAcceptRelaysOutOnlyTheScopesItTouched) {
  Transformer t(40);
  const Graph& g = t.session.graph();
  const ScopeUnits units = scope_units(g, t.session.group_infos(), ViewMode::fused);
  auto tree = build_scope_tree(g, units);
  std::vector<bool> expanded = tree->expanded_within(kMaxItemsPerScope);
  const int l20 = tree->scope(0).scopes[20], l30 = tree->scope(0).scopes[30];
  expanded[static_cast<std::size_t>(l20)] = expanded[static_cast<std::size_t>(l30)] = true;
  LayoutCache cache;
  ASSERT_TRUE(layout_drawing(build_scoped_drawing(g, t.session.group_infos(), ViewMode::fused, tree, units, expanded), &cache).ok);
  EXPECT_EQ(cache.dot_runs(), 2);  // layers 20 and 30 have the same contents: one layout serves both, and the root
  // Accept a fusion of two groups of layer 30.
  std::string id;
  const auto in_l30 = [&](const std::string& group) {
    const Group* found = t.session.engine().plan().find(group);
    return found != nullptr && g.node(found->nodes.front()).name.rfind("l30.", 0) == 0;
  };
  for (const Candidate& c : t.session.engine().candidates())
    if (c.decision.fuse && in_l30(c.group_a) && in_l30(c.group_b)) id = c.id;
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(t.session.accept(QString::fromStdString(id)).fuse);
  const DrawnGraph after = build_scoped_drawing(g, t.session.group_infos(), ViewMode::fused, tree, units, expanded);
  const LayoutResult relaid = layout_drawing(after, &cache);
  ASSERT_TRUE(relaid.ok);
  const int level30 = level_of_scope(after, l30), level20 = level_of_scope(after, l20);
  EXPECT_NE(std::find(relaid.fresh_levels.begin(), relaid.fresh_levels.end(), level30), relaid.fresh_levels.end());
  EXPECT_EQ(std::find(relaid.fresh_levels.begin(), relaid.fresh_levels.end(), level20), relaid.fresh_levels.end());
  EXPECT_LE(relaid.dot_runs, 2);  // layer 30, and the root only if the layer's frame changed size
  EXPECT_GE(relaid.dot_runs, 1);
  EXPECT_EQ(cache.dot_runs(), 2 + relaid.dot_runs);
}

TEST(ScopedLayout, AChainOfTwoHundredThousandNodesLaysOutInBoundedPieces) {
  GraphSpec spec;
  spec.name = "chain";
  spec.inputs.push_back({"x", {{1024}, DType::f32}, Role::activation});
  std::string prev = "x";
  for (int i = 0; i < 200000; ++i) {
    NodeSpec n;
    n.name = "n" + std::to_string(i);
    n.op = "relu";
    n.inputs = {prev};
    prev = n.name;
    spec.nodes.push_back(std::move(n));
  }
  spec.outputs.push_back(prev);
  auto graph = build_graph(spec);
  ASSERT_TRUE(graph.ok());
  const ScopeUnits units = scope_units(*graph, {}, ViewMode::unfused);
  auto tree = build_scope_tree(*graph, units);
  std::vector<bool> expanded = tree->expanded_within(kMaxItemsPerScope);
  // Open every scope on the way to the chain's middle: still a few hundred boxes per dot run.
  for (int s : tree->ancestors_of(tree->scope_of_unit(100000))) expanded[static_cast<std::size_t>(s)] = true;
  const DrawnGraph d = build_scoped_drawing(*graph, {}, ViewMode::unfused, tree, units, expanded);
  for (const ScopeLevel& lv : d.levels) EXPECT_LE(lv.nodes.size() + lv.children.size(), kMaxItemsPerScope + 1);
  LayoutCache cache;
  const LayoutResult r = layout_drawing(d, &cache);
  ASSERT_TRUE(r.ok) << r.error.toStdString();
  EXPECT_EQ(static_cast<std::size_t>(cache.dot_runs()), d.levels.size());
}

// The main window on generated transformers, offscreen, with its settings in a temporary folder.
constexpr int kLayers = 24;
class LargeGraphWindow : public ::testing::Test {
 protected:
  void SetUp() override {
    QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, config_.path());
    window_ = std::make_unique<MainWindow>();
    window_->set_confirm_close(false);
    window_->resize(1200, 800);
    window_->show();
  }
  // Waits for the next picture; fails the test when none comes or a dialog opens.
  void wait_for_picture() {
    QSignalSpy spy(window_.get(), &MainWindow::picture_ready);
    ASSERT_TRUE(spy.wait(60000)) << "no picture";
    EXPECT_EQ(QApplication::activeModalWidget(), nullptr);
  }
  NodeItem* scope_box(const std::string& label) const {
    for (NodeItem* item : window_->scene()->node_items())
      if (item->node().kind == DrawnNode::Kind::scope && item->node().title == QString::fromStdString(label)) return item;
    return nullptr;
  }
  ClusterItem* frame_of(const std::string& label) const {
    const ScopeTree* t = window_->scopes()->tree();
    for (ClusterItem* c : window_->scene()->cluster_items())
      if (c->cluster().scope > 0 && t->scope(c->cluster().scope).label == label) return c;
    return nullptr;
  }
  QTemporaryDir config_;
  std::unique_ptr<MainWindow> window_;
};

TEST_F(LargeGraphWindow, OpensCollapsedWithoutAskingAndExpandsAndCollapsesInPlace) {
  QTimer watchdog;  // a modal dialog would block the wait below: close it and fail
  bool dialog = false;
  QObject::connect(&watchdog, &QTimer::timeout, [&] {
    if (QWidget* modal = QApplication::activeModalWidget()) dialog = true, modal->close();
  });
  watchdog.start(100);
  window_->set_view_mode(ViewMode::fused);
  // 720 nodes: above kScopedViewNodes, so it opens by hierarchy; a small size keeps the sanitizer pass quick.
  window_->open_generated_transformer(kLayers);
  wait_for_picture();
  EXPECT_FALSE(dialog);
  ASSERT_NE(scope_box("l12"), nullptr);
  EXPECT_EQ(window_->scene()->node_items().size(), kLayers + 1u);  // the layers and the input

  // Double-click a layer: it opens in place, its 30 nodes in a frame.
  GraphView* view = window_->view();
  view->centre_on_item(scope_box("l12"));
  QTest::mouseDClick(view->viewport(), Qt::LeftButton, {}, view->mapFromScene(scope_box("l12")->scenePos()));
  wait_for_picture();
  EXPECT_EQ(scope_box("l12"), nullptr);
  ClusterItem* frame = frame_of("l12");
  ASSERT_NE(frame, nullptr);
  NodeItem* fc2 = window_->scene()->item_for(window_->session().graph().find_node("l12.fc2").value());
  ASSERT_NE(fc2, nullptr);
  EXPECT_EQ(fc2->node().kind, DrawnNode::Kind::op);
  EXPECT_TRUE(frame->box().contains(fc2->scenePos()));

  // Left on a node inside collapses its scope again.
  window_->scene()->clearSelection();
  fc2->setSelected(true);
  view->setFocus();
  QTest::keyClick(view, Qt::Key_Left);
  wait_for_picture();
  EXPECT_EQ(frame_of("l12"), nullptr);
  ASSERT_NE(scope_box("l12"), nullptr);
  // Enter on the selected box opens it again.
  scope_box("l12")->setSelected(true);
  QTest::keyClick(view, Qt::Key_Return);
  wait_for_picture();
  EXPECT_NE(frame_of("l12"), nullptr);
}

TEST_F(LargeGraphWindow, FindExpandsWhatItMustToShowTheHit) {
  window_->set_view_mode(ViewMode::fused);
  window_->open_generated_transformer(kLayers);
  wait_for_picture();
  const NodeId target = window_->session().graph().find_node("l17.probs").value();
  ASSERT_NE(window_->scene()->item_for(target), nullptr);
  ASSERT_EQ(window_->scene()->item_for(target)->node().kind, DrawnNode::Kind::scope);
  window_->find_next(QStringLiteral("l17.probs"));
  wait_for_picture();
  NodeItem* hit = window_->scene()->item_for(target);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->node().kind, DrawnNode::Kind::op);
  EXPECT_TRUE(hit->isSelected());
  EXPECT_TRUE(window_->view()->mapToScene(window_->view()->viewport()->rect()).boundingRect().contains(hit->scenePos()));
  // The breadcrumbs name the hit's scope.
  EXPECT_TRUE(window_->breadcrumbs()->text().contains(QStringLiteral("l17")));
  // Groups are found too: accept everything, then find a fused group by its id.
  window_->accept_all_profitable();
  wait_for_picture();
  QString group_id;
  const Graph& g = window_->session().graph();
  for (const GroupInfo& info : window_->session().group_infos()) {
    const bool in_l20 = std::all_of(info.nodes.begin(), info.nodes.end(),
                                    [&](NodeId n) { return g.node(n).name.rfind("l20.", 0) == 0; });
    if (info.nodes.size() > 1 && in_l20) group_id = info.id;
  }
  ASSERT_FALSE(group_id.isEmpty());
  window_->find_next(group_id);
  wait_for_picture();
  bool framed = false;
  for (ClusterItem* c : window_->scene()->cluster_items()) framed = framed || c->cluster().label.startsWith(group_id + ' ');
  EXPECT_TRUE(framed) << group_id.toStdString();
  // In the kernels view (one box per fused group, by scope) a node is found as the box of its kernel.
  window_->set_view_mode(ViewMode::collapsed);
  wait_for_picture();
  const NodeId in_l15 = g.find_node("l15.fc1_bias").value();
  ASSERT_EQ(window_->scene()->item_for(in_l15)->node().kind, DrawnNode::Kind::scope);
  window_->find_next(QStringLiteral("l15.fc1_bias"));
  wait_for_picture();
  NodeItem* kernel = window_->scene()->item_for(in_l15);
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->node().kind, DrawnNode::Kind::group);
  EXPECT_TRUE(kernel->isSelected());
}

TEST_F(LargeGraphWindow, MinimapShowsTheViewportRectangle) {
  window_->open_generated_transformer(kLayers);
  wait_for_picture();
  Minimap* map = window_->minimap();
  ASSERT_TRUE(map->isVisible());
  EXPECT_LE(std::max(map->width(), map->height()), Minimap::kMaxSide);
  GraphView* view = window_->view();
  const QRectF scene = window_->scene()->itemsBoundingRect();
  // The marker is the visible scene rectangle mapped into the minimap: move the view, the marker follows.
  view->centerOn(scene.center().x(), scene.top() + scene.height() * 0.75);
  const QRectF visible = map->visible_scene_rect();
  const QRectF marker = map->viewport_marker();
  EXPECT_NEAR(marker.center().x(), map->to_minimap(visible.center()).x(), 1.0);
  EXPECT_NEAR(marker.center().y(), map->to_minimap(visible.center()).y(), 1.0);
  EXPECT_GT(marker.center().y(), map->height() / 2.0);
  // Clicking in the minimap moves the view there.
  const QPoint near_top = map->to_minimap(QPointF(scene.center().x(), scene.top() + scene.height() * 0.1)).toPoint();
  QTest::mouseClick(map, Qt::LeftButton, {}, near_top);
  EXPECT_LT(map->viewport_marker().center().y(), map->height() / 2.0);
  // Fit shows the whole graph.
  view->fit();
  EXPECT_TRUE(map->visible_scene_rect().adjusted(-2, -2, 2, 2).contains(scene));
}

TEST_F(LargeGraphWindow, AcceptAllRelaysOutOnlyTouchedScopesAndMarksTheChange) {
  window_->set_view_mode(ViewMode::fused);
  window_->open_generated_transformer(kLayers);
  wait_for_picture();
  window_->find_next(QStringLiteral("l3.gelu"));  // opens layer 3
  wait_for_picture();
  const int before = window_->layout_runner()->cache().dot_runs();
  window_->accept_all_profitable();
  wait_for_picture();
  // Layer 3's contents and the root around it; the other layers are boxes whose size did not change.
  EXPECT_LE(window_->layout_runner()->cache().dot_runs() - before, 2);
  int marked = 0;
  for (NodeItem* item : window_->scene()->node_items()) marked += item->is_highlighted() ? 1 : 0;
  EXPECT_GT(marked, 1);
  // Undo: the earlier layouts come back from the cache.
  const int after = window_->layout_runner()->cache().dot_runs();
  window_->session().undo_stack()->undo();
  wait_for_picture();
  EXPECT_EQ(window_->layout_runner()->cache().dot_runs(), after);
}

}  // namespace
}  // namespace fx::app
