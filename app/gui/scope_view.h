// The hierarchy of the open graph as the view shows it: which scopes are expanded, the drawing of what is
// visible, expand and collapse in place (double-click, Enter/Right and Left/Backspace on the scene), Find over
// nodes, groups and scopes that expands what it must to show the hit, and the breadcrumbs of a scope.
// Expansion is remembered by scope path, so it survives accept/reject and switching views.
#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "app/gui/graph_drawing.h"
#include "app/gui/scope_tree.h"
#include "app/gui/scoped_drawing.h"

class QGraphicsItem;

namespace fx::app {

class GraphScene;

struct FindHit {
  enum class Kind { node, group, scope } kind = Kind::node;
  NodeId node = -1;      // node: the node; group: its first node
  QString group;         // group: the engine's group id
  std::string scope;     // scope: its path (runs: their key)
  QString text;          // what matched, for the status bar
};

class ScopeView : public QObject {
  Q_OBJECT
 public:
  explicit ScopeView(GraphScene* scene, QObject* parent = nullptr);

  // A new document: forget the trees and what was expanded; the next drawing opens collapsed as far as needed.
  void reset();
  // Whether a graph is drawn by scope at all (small graphs are drawn whole).
  static bool applies(const Graph& g) { return g.num_nodes() > kScopedViewNodes; }

  // The drawing of what is visible now, for the view mode.
  std::shared_ptr<const DrawnGraph> drawing(const Graph& g, const std::vector<GroupInfo>& groups, ViewMode mode);

  // The tree of the last drawing (nullptr before the first).
  const ScopeTree* tree() const { return tree_.get(); }
  bool is_expanded(int scope) const;
  // Expands or collapses a scope of the last drawing's tree; emits expansion_changed when that changes anything.
  void set_expanded(int scope, bool on);

  // Every node, group and scope whose name contains `text` (case-insensitive): nodes first, in graph order.
  std::vector<FindHit> find(const Graph& g, const std::vector<GroupInfo>& groups, const QString& text) const;
  // Expands the scopes above a hit so that it is drawn; true when something had to be expanded.
  bool reveal(const Graph& g, const FindHit& hit);
  // What the view should centre on once the next picture lands (the scope just expanded or collapsed, or the
  // hit just revealed), once.
  std::optional<FindHit> take_focus();
  // The scene item that shows a hit in the current picture (a box, or a scope's box or frame), or nullptr.
  QGraphicsItem* item_for(const FindHit& hit) const;

  // The scope chain of a graph node or scope in the last tree, root first, as "graph › l3 › attn" pieces.
  std::vector<int> chain_of_node(NodeId node) const;
  QString scope_name(int scope) const;
  // The innermost scope of what is selected in the scene (0, the root, when nothing is).
  int selected_scope() const;
  // A scope's frame or box in the current picture.
  QGraphicsItem* scope_item(int scope) const;

 signals:
  void expansion_changed();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  static std::string key_of(const Scope& s);
  bool toggle_at(QGraphicsItem* item);
  bool key_pressed(int key);
  int scope_of_item(const QGraphicsItem* item) const;
  int scope_by_key(const std::string& key) const;

  GraphScene* scene_;
  // Trees by unit kind: node views share one (names do not change), the kernel view's follows the plan.
  std::shared_ptr<const ScopeTree> node_tree_, kernel_tree_, tree_;
  ScopeUnits node_units_, kernel_units_;
  const ScopeUnits* units_ = nullptr;
  const Graph* graph_ = nullptr;
  std::vector<GroupInfo> kernel_groups_;  // what kernel_tree_ was built from
  std::set<std::string> expanded_;        // by key_of
  bool opened_ = false;                   // the first drawing chose what to expand
  std::optional<FindHit> focus_;
};

}  // namespace fx::app
