#include "app/gui/scope_view.h"

#include <QGraphicsSceneMouseEvent>
#include <QKeyEvent>
#include <algorithm>
#include <cctype>

#include "app/gui/graph_scene.h"

namespace fx::app {
namespace {

bool contains_ignoring_case(std::string_view haystack, std::string_view needle) {
  const auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
  return it != haystack.end();
}

bool same_groups(const std::vector<GroupInfo>& a, const std::vector<GroupInfo>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const GroupInfo& x, const GroupInfo& y) { return x.id == y.id && x.nodes == y.nodes; });
}

}  // namespace

ScopeView::ScopeView(GraphScene* scene, QObject* parent) : QObject(parent), scene_(scene) {
  scene_->installEventFilter(this);
}

void ScopeView::reset() {
  node_tree_.reset();
  kernel_tree_.reset();
  tree_.reset();
  node_units_ = {};
  kernel_units_ = {};
  units_ = nullptr;
  graph_ = nullptr;
  kernel_groups_.clear();
  expanded_.clear();
  focus_.reset();
  opened_ = false;
}

std::string ScopeView::key_of(const Scope& s) { return s.is_run ? "#" + s.label : s.path; }

std::shared_ptr<const DrawnGraph> ScopeView::drawing(const Graph& g, const std::vector<GroupInfo>& groups,
                                                     ViewMode mode) {
  if (graph_ != &g) {
    reset();
    graph_ = &g;
  }
  if (mode == ViewMode::collapsed) {
    if (!kernel_tree_ || !same_groups(kernel_groups_, groups)) {
      kernel_units_ = scope_units(g, groups, mode);
      kernel_tree_ = build_scope_tree(g, kernel_units_);
      kernel_groups_ = groups;
    }
    tree_ = kernel_tree_;
    units_ = &kernel_units_;
  } else {
    if (!node_tree_) {
      node_units_ = scope_units(g, groups, mode);
      node_tree_ = build_scope_tree(g, node_units_);
    }
    tree_ = node_tree_;
    units_ = &node_units_;
  }
  std::vector<bool> expanded(tree_->scopes().size(), false);
  if (!opened_) {
    opened_ = true;
    expanded = tree_->expanded_within(kMaxItemsPerScope);
    for (std::size_t s = 1; s < expanded.size(); ++s)
      if (expanded[s]) expanded_.insert(key_of(tree_->scope(static_cast<int>(s))));
  }
  expanded[0] = true;
  for (std::size_t s = 1; s < expanded.size(); ++s) expanded[s] = expanded_.count(key_of(tree_->scope(static_cast<int>(s)))) != 0;
  return std::make_shared<const DrawnGraph>(build_scoped_drawing(g, groups, mode, tree_, *units_, expanded));
}

bool ScopeView::is_expanded(int scope) const {
  if (!tree_ || scope < 0 || scope >= static_cast<int>(tree_->scopes().size())) return false;
  return scope == 0 || expanded_.count(key_of(tree_->scope(scope))) != 0;
}

void ScopeView::set_expanded(int scope, bool on) {
  if (!tree_ || scope <= 0 || scope >= static_cast<int>(tree_->scopes().size()) || is_expanded(scope) == on) return;
  const std::string key = key_of(tree_->scope(scope));
  if (on) {
    expanded_.insert(key);
  } else {
    expanded_.erase(key);
  }
  focus_ = FindHit{FindHit::Kind::scope, -1, {}, key, {}};
  emit expansion_changed();
}

std::vector<FindHit> ScopeView::find(const Graph& g, const std::vector<GroupInfo>& groups, const QString& text) const {
  std::vector<FindHit> hits;
  if (text.isEmpty()) return hits;
  const std::string needle = text.toStdString();
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    if (contains_ignoring_case(g.node(n).name, needle)) hits.push_back({FindHit::Kind::node, n, {}, {}, {}});
  for (const GroupInfo& info : groups)
    if (info.nodes.size() > 1 && info.id.contains(text, Qt::CaseInsensitive))
      hits.push_back({FindHit::Kind::group, info.nodes.front(), info.id, {}, info.id});
  if (tree_) {
    for (std::size_t s = 1; s < tree_->scopes().size(); ++s) {
      const Scope& scope = tree_->scope(static_cast<int>(s));
      if (!scope.is_run && contains_ignoring_case(scope.path, needle))
        hits.push_back({FindHit::Kind::scope, -1, {}, key_of(scope), QString::fromStdString(scope.path)});
    }
  }
  return hits;
}

int ScopeView::scope_by_key(const std::string& key) const {
  if (!tree_) return -1;
  for (std::size_t s = 1; s < tree_->scopes().size(); ++s)
    if (key_of(tree_->scope(static_cast<int>(s))) == key) return static_cast<int>(s);
  return -1;
}

bool ScopeView::reveal(const Graph& g, const FindHit& hit) {
  if (!tree_ || !units_ || graph_ != &g) return false;
  std::vector<int> chain;
  if (hit.kind == FindHit::Kind::scope) {
    const int scope = scope_by_key(hit.scope);
    if (scope < 0) return false;
    chain = tree_->ancestors_of(tree_->scope(scope).parent);
  } else if (hit.node >= 0 && hit.node < g.num_nodes()) {
    chain = tree_->ancestors_of(tree_->scope_of_unit(units_->unit_of_node[static_cast<std::size_t>(hit.node)]));
  }
  bool changed = false;
  for (int s : chain)
    if (s > 0) changed = expanded_.insert(key_of(tree_->scope(s))).second || changed;
  focus_ = hit;
  if (changed) emit expansion_changed();
  return changed;
}

std::optional<FindHit> ScopeView::take_focus() {
  std::optional<FindHit> f = std::move(focus_);
  focus_.reset();
  return f;
}

QGraphicsItem* ScopeView::item_for(const FindHit& hit) const {
  if (hit.kind == FindHit::Kind::scope) return scope_item(scope_by_key(hit.scope));
  return scene_->item_for(hit.node);
}

QGraphicsItem* ScopeView::scope_item(int scope) const {
  if (scope < 0) return nullptr;
  for (NodeItem* item : scene_->node_items())
    if (item->node().kind == DrawnNode::Kind::scope && item->node().scope == scope) return item;
  for (ClusterItem* item : scene_->cluster_items())
    if (item->cluster().scope == scope) return item;
  return nullptr;
}

std::vector<int> ScopeView::chain_of_node(NodeId node) const {
  if (!tree_ || !units_ || node < 0 || node >= static_cast<NodeId>(units_->unit_of_node.size())) return {0};
  return tree_->ancestors_of(tree_->scope_of_unit(units_->unit_of_node[static_cast<std::size_t>(node)]));
}

QString ScopeView::scope_name(int scope) const {
  if (!tree_ || scope <= 0 || scope >= static_cast<int>(tree_->scopes().size())) return tr("graph");
  return QString::fromStdString(tree_->scope(scope).label);
}

// The scope an item stands in: a scope's box or frame is that scope; a node's box is its innermost scope.
int ScopeView::scope_of_item(const QGraphicsItem* item) const {
  if (item == nullptr || !tree_) return 0;
  if (item->type() == NodeItem::Type) {
    const DrawnNode& n = static_cast<const NodeItem*>(item)->node();
    if (n.kind == DrawnNode::Kind::scope) return n.scope;
    if (n.node >= 0) return chain_of_node(n.node).back();
  } else if (item->type() == ClusterItem::Type) {
    const int scope = static_cast<const ClusterItem*>(item)->cluster().scope;
    if (scope >= 0) return scope;
  }
  return 0;
}

int ScopeView::selected_scope() const {
  const QList<QGraphicsItem*> selected = scene_->selectedItems();
  return selected.isEmpty() ? 0 : scope_of_item(selected.front());
}

bool ScopeView::toggle_at(QGraphicsItem* item) {
  if (item == nullptr || !tree_) return false;
  if (item->type() == NodeItem::Type) {
    const DrawnNode& n = static_cast<const NodeItem*>(item)->node();
    if (n.kind != DrawnNode::Kind::scope) return false;
    set_expanded(n.scope, true);
    return true;
  }
  if (item->type() == ClusterItem::Type && static_cast<const ClusterItem*>(item)->cluster().scope > 0) {
    set_expanded(static_cast<const ClusterItem*>(item)->cluster().scope, false);
    return true;
  }
  return false;
}

bool ScopeView::key_pressed(int key) {
  const QList<QGraphicsItem*> selected = scene_->selectedItems();
  if (selected.isEmpty() || !tree_) return false;
  QGraphicsItem* item = selected.front();
  const bool on_scope_box =
      item->type() == NodeItem::Type && static_cast<const NodeItem*>(item)->node().kind == DrawnNode::Kind::scope;
  if (key == Qt::Key_Return || key == Qt::Key_Enter || key == Qt::Key_Right) {
    return on_scope_box && toggle_at(item);
  }
  if (key == Qt::Key_Left || key == Qt::Key_Backspace) {
    // Collapse the scope the selection stands in (for a scope's box: the scope around it).
    int scope = scope_of_item(item);
    if (on_scope_box) scope = tree_->scope(scope).parent;
    if (scope <= 0) return false;
    set_expanded(scope, false);
    return true;
  }
  return false;
}

bool ScopeView::eventFilter(QObject* watched, QEvent* event) {
  if (watched != scene_ || !tree_ || scene_->drawing() == nullptr || !scene_->drawing()->scopes) return false;
  if (event->type() == QEvent::GraphicsSceneMouseDoubleClick) {
    const auto* mouse = static_cast<QGraphicsSceneMouseEvent*>(event);
    // The topmost box or frame under the pointer (titles and edges let the click through).
    for (QGraphicsItem* item : scene_->items(mouse->scenePos())) {
      if (item->type() != NodeItem::Type && item->type() != ClusterItem::Type) continue;
      if (toggle_at(item)) {
        event->accept();
        return true;
      }
      if (item->type() == NodeItem::Type) break;  // an op's box: not ours to handle
    }
  } else if (event->type() == QEvent::KeyPress) {
    if (key_pressed(static_cast<QKeyEvent*>(event)->key())) {
      event->accept();
      return true;
    }
  }
  return false;
}

}  // namespace fx::app
