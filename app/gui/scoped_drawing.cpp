#include "app/gui/scoped_drawing.h"

#include <QObject>
#include <algorithm>
#include <set>
#include <tuple>

namespace fx::app {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// Builds one scoped drawing; the steps share the maps between drawn boxes, levels and units.
class ScopedBuilder {
 public:
  ScopedBuilder(const Graph& g, const std::vector<GroupInfo>& groups, ViewMode mode, const ScopeUnits& units,
                const std::vector<bool>& expanded, DrawnGraph& out)
      : g_(g), groups_(groups), mode_(mode), units_(units), expanded_(expanded), out_(out), tree_(*out.scopes) {}

  void run() {
    make_levels();
    map_graph_nodes();
    number_locally();
    add_edges();
    add_group_clusters();
    for (DrawnNode& d : out_.nodes) d.size = measure_node(d);
  }

 private:
  ScopeLevel& level(int index) { return out_.levels[static_cast<std::size_t>(index)]; }

  int add_node(DrawnNode node, int level_index) {
    const int drawn = static_cast<int>(out_.nodes.size());
    out_.nodes.push_back(std::move(node));
    level(level_index).nodes.push_back(drawn);
    level_of_drawn_.push_back(level_index);
    return drawn;
  }

  DrawnNode scope_node(int scope) const {
    const Scope& s = tree_.scope(scope);
    DrawnNode d;
    d.kind = DrawnNode::Kind::scope;
    d.scope = scope;
    d.title = qs(s.label);
    d.name = units_.kernels ? QObject::tr("%n kernel(s)", nullptr, static_cast<int>(s.unit_count))
                            : QObject::tr("%n node(s)", nullptr, static_cast<int>(s.unit_count));
    d.fill = scope_box_color();
    d.tooltip = QObject::tr("<b>%1</b><br>%2 — double-click or Enter to expand")
                    .arg(qs(s.is_run ? s.label : s.path).toHtmlEscaped(), d.name);
    return d;
  }

  DrawnNode unit_node(int unit) const {
    if (const ValueId input = units_.input_of_unit[static_cast<std::size_t>(unit)]; input >= 0) {
      return drawn_input_node(g_, input);
    }
    const std::vector<NodeId>& nodes = units_.nodes_of_unit[static_cast<std::size_t>(unit)];
    const int group = group_of_[static_cast<std::size_t>(nodes.front())];
    const GroupInfo* info = group >= 0 ? &groups_[static_cast<std::size_t>(group)] : nullptr;
    if (units_.kernels && info != nullptr) return drawn_group_node(g_, *info, group);
    return drawn_op_node(g_, nodes.front(), group, info, mode_);
  }

  // Levels in breadth-first order of their scopes, then reversed: children come before their parents.
  void make_levels() {
    group_of_.assign(static_cast<std::size_t>(g_.num_nodes()), -1);
    for (std::size_t i = 0; i < groups_.size(); ++i)
      for (NodeId n : groups_[i].nodes) group_of_[static_cast<std::size_t>(n)] = static_cast<int>(i);
    std::vector<int> order{0};
    for (std::size_t i = 0; i < order.size(); ++i)
      for (int c : tree_.scope(order[i]).scopes)
        if (expanded_[static_cast<std::size_t>(c)]) order.push_back(c);
    level_of_scope_.assign(tree_.scopes().size(), -1);
    out_.levels.resize(order.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      const int index = static_cast<int>(order.size() - 1 - i);
      level_of_scope_[static_cast<std::size_t>(order[i])] = index;
      level(index).scope = order[i];
    }
    item_of_unit_.assign(units_.nodes_of_unit.size(), -1);
    for (int scope : order) fill_level(scope);
  }

  void fill_level(int scope) {
    const int index = level_of_scope_[static_cast<std::size_t>(scope)];
    const Scope& s = tree_.scope(scope);
    if (scope != 0) add_frame(scope, index);
    for (int c : s.scopes) {
      if (expanded_[static_cast<std::size_t>(c)]) {
        level(index).children.push_back(level_of_scope_[static_cast<std::size_t>(c)]);
      } else {
        cover_units(c, add_node(scope_node(c), index));
      }
    }
    for (int u : s.units) item_of_unit_[static_cast<std::size_t>(u)] = add_node(unit_node(u), index);
  }

  void add_frame(int scope, int index) {
    const Scope& s = tree_.scope(scope);
    DrawnCluster frame;
    frame.scope = scope;
    frame.label = QStringLiteral("%1  (%2)").arg(
        qs(s.label), units_.kernels ? QObject::tr("%n kernel(s)", nullptr, static_cast<int>(s.unit_count))
                                    : QObject::tr("%n node(s)", nullptr, static_cast<int>(s.unit_count)));
    frame.color = scope_frame_color();
    frame.title_width = cluster_line_width(frame.label);
    level(index).frame = static_cast<int>(out_.clusters.size());
    out_.clusters.push_back(std::move(frame));
  }

  // Every unit under a collapsed scope is shown by that scope's box.
  void cover_units(int scope, int drawn) {
    std::vector<int> stack{scope};
    while (!stack.empty()) {
      const Scope& s = tree_.scope(stack.back());
      stack.pop_back();
      for (int u : s.units) item_of_unit_[static_cast<std::size_t>(u)] = drawn;
      stack.insert(stack.end(), s.scopes.begin(), s.scopes.end());
    }
  }

  void map_graph_nodes() {
    drawn_of_value_.assign(static_cast<std::size_t>(g_.num_values()), -1);
    for (std::size_t v = 0; v < units_.unit_of_input.size(); ++v)
      if (const int unit = units_.unit_of_input[v]; unit >= 0) drawn_of_value_[v] = item_of_unit_[static_cast<std::size_t>(unit)];
    out_.node_of_graph_node.assign(static_cast<std::size_t>(g_.num_nodes()), -1);
    for (NodeId n = 0; n < g_.num_nodes(); ++n) {
      const int drawn = item_of_unit_[static_cast<std::size_t>(units_.unit_of_node[static_cast<std::size_t>(n)])];
      out_.node_of_graph_node[static_cast<std::size_t>(n)] = drawn;
      drawn_of_value_[static_cast<std::size_t>(g_.value_of(n))] = drawn;
    }
  }

  // Each box's index within its level's layout, and each child level's (after the level's boxes).
  void number_locally() {
    local_of_drawn_.assign(out_.nodes.size(), -1);
    local_of_level_.assign(out_.levels.size(), -1);
    for (const ScopeLevel& lv : out_.levels) {
      for (std::size_t i = 0; i < lv.nodes.size(); ++i) local_of_drawn_[static_cast<std::size_t>(lv.nodes[i])] = static_cast<int>(i);
      for (std::size_t i = 0; i < lv.children.size(); ++i)
        local_of_level_[static_cast<std::size_t>(lv.children[i])] = static_cast<int>(lv.nodes.size() + i);
    }
  }

  // Where an end of an edge that is laid out at `at` sits there: the box itself when it lies directly in that
  // level, else the frame of the child scope that holds it.
  int local_end(int drawn, int at) const {
    const int lv = level_of_drawn_[static_cast<std::size_t>(drawn)];
    if (lv == at) return local_of_drawn_[static_cast<std::size_t>(drawn)];
    const int target = out_.levels[static_cast<std::size_t>(at)].scope;
    int scope = out_.levels[static_cast<std::size_t>(lv)].scope;
    while (tree_.scope(scope).parent != target) scope = tree_.scope(scope).parent;
    return local_of_level_[static_cast<std::size_t>(level_of_scope_[static_cast<std::size_t>(scope)])];
  }

  // The deepest expanded scope holding both ends.
  int common_level(int a, int b) const {
    int sa = out_.levels[static_cast<std::size_t>(level_of_drawn_[static_cast<std::size_t>(a)])].scope;
    int sb = out_.levels[static_cast<std::size_t>(level_of_drawn_[static_cast<std::size_t>(b)])].scope;
    int da = depth_of(sa), db = depth_of(sb);
    for (; da > db; --da) sa = tree_.scope(sa).parent;
    for (; db > da; --db) sb = tree_.scope(sb).parent;
    while (sa != sb) sa = tree_.scope(sa).parent, sb = tree_.scope(sb).parent;
    return level_of_scope_[static_cast<std::size_t>(sa)];
  }

  int depth_of(int scope) const {
    int d = 0;
    for (int s = scope; s > 0; s = tree_.scope(s).parent) ++d;
    return d;
  }

  void add_edges() {
    std::set<std::tuple<int, int, int>> seen;  // (level, local from, local to): one edge per pair of boxes
    for (NodeId c : g_.topo_order()) {
      const int to = out_.node_of_graph_node[static_cast<std::size_t>(c)];
      for (ValueId v : g_.tensor_inputs(c)) {
        const int from = drawn_of_value_[static_cast<std::size_t>(v)];
        if (from < 0 || from == to) continue;
        const int at = common_level(from, to);
        const std::pair<int, int> ends{local_end(from, at), local_end(to, at)};
        if (ends.first == ends.second || !seen.insert({at, ends.first, ends.second}).second) continue;
        level(at).edges.push_back(static_cast<int>(out_.edges.size()));
        level(at).ends.push_back(ends);
        out_.edges.push_back({from, to, v, c, edge_label(g_, v), false, {}});
      }
    }
  }

  // A fused group is drawn as a cluster where all its nodes are boxes of one level; a group that spans
  // scopes shows as its nodes' colours only.
  void add_group_clusters() {
    if (mode_ != ViewMode::fused) return;
    for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
      const GroupInfo& info = groups_[gi];
      if (info.nodes.size() < 2) continue;
      std::vector<int> members;
      int at = -1;
      bool one_level = true;
      for (NodeId n : info.nodes) {
        const int drawn = out_.node_of_graph_node[static_cast<std::size_t>(n)];
        const int lv = level_of_drawn_[static_cast<std::size_t>(drawn)];
        one_level = one_level && out_.nodes[static_cast<std::size_t>(drawn)].kind == DrawnNode::Kind::op &&
                    (at < 0 || lv == at);
        at = lv;
        members.push_back(drawn);
      }
      if (!one_level) continue;
      const QString label = QStringLiteral("%1  %2").arg(info.id, info.kind);
      level(at).clusters.push_back(static_cast<int>(out_.clusters.size()));
      out_.clusters.push_back({static_cast<int>(gi), label, fusion_kind_color(info.kind), std::move(members),
                               cluster_line_width(label)});
    }
  }

  const Graph& g_;
  const std::vector<GroupInfo>& groups_;
  ViewMode mode_;
  const ScopeUnits& units_;
  const std::vector<bool>& expanded_;
  DrawnGraph& out_;
  const ScopeTree& tree_;
  std::vector<int> group_of_;
  std::vector<int> level_of_scope_;
  std::vector<int> level_of_drawn_;
  std::vector<int> item_of_unit_;
  std::vector<int> drawn_of_value_;
  std::vector<int> local_of_drawn_;
  std::vector<int> local_of_level_;
};

}  // namespace

QColor scope_frame_color() { return QColor("#f1f4f9"); }
QColor scope_box_color() { return QColor("#dde5f2"); }

ScopeUnits scope_units(const Graph& g, const std::vector<GroupInfo>& groups, ViewMode mode) {
  ScopeUnits units;
  units.kernels = mode == ViewMode::collapsed;
  units.unit_of_node.assign(static_cast<std::size_t>(g.num_nodes()), -1);
  units.unit_of_input.assign(g.inputs().size(), -1);
  for (std::size_t v = 0; v < g.inputs().size(); ++v) {
    if (g.inputs()[v].role != Role::activation) continue;  // weights are drawn inside the boxes that read them
    units.unit_of_input[v] = static_cast<int>(units.nodes_of_unit.size());
    units.nodes_of_unit.emplace_back();
    units.input_of_unit.push_back(static_cast<ValueId>(v));
  }
  if (units.kernels) {
    for (const GroupInfo& info : groups) {
      if (info.nodes.empty()) continue;
      for (NodeId n : info.nodes) units.unit_of_node[static_cast<std::size_t>(n)] = static_cast<int>(units.nodes_of_unit.size());
      units.nodes_of_unit.push_back(info.nodes);
      units.input_of_unit.push_back(-1);
    }
  }
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    if (units.unit_of_node[static_cast<std::size_t>(n)] >= 0) continue;
    units.unit_of_node[static_cast<std::size_t>(n)] = static_cast<int>(units.nodes_of_unit.size());
    units.nodes_of_unit.push_back({n});
    units.input_of_unit.push_back(-1);
  }
  return units;
}

std::shared_ptr<const ScopeTree> build_scope_tree(const Graph& g, const ScopeUnits& units) {
  std::vector<std::string_view> scopes, labels;
  scopes.reserve(units.nodes_of_unit.size());
  labels.reserve(units.nodes_of_unit.size());
  for (std::size_t u = 0; u < units.nodes_of_unit.size(); ++u) {
    const std::vector<NodeId>& nodes = units.nodes_of_unit[u];
    if (nodes.empty()) {  // an input: by its own name
      const std::string& name = g.value_name(units.input_of_unit[u]);
      scopes.push_back(scope_prefix(name));
      labels.push_back(name);
      continue;
    }
    std::string_view scope = scope_prefix(g.node(nodes.front()).name);
    for (NodeId n : nodes) scope = common_scope(scope, scope_prefix(g.node(n).name));
    scopes.push_back(scope);
    labels.push_back(g.node(nodes.front()).name);
  }
  return std::make_shared<const ScopeTree>(ScopeTree::build(scopes, labels, kMaxItemsPerScope));
}

DrawnGraph build_scoped_drawing(const Graph& g, const std::vector<GroupInfo>& groups, ViewMode mode,
                                std::shared_ptr<const ScopeTree> tree, const ScopeUnits& units,
                                const std::vector<bool>& expanded) {
  DrawnGraph out;
  out.mode = mode;
  out.groups = groups;
  out.scopes = std::move(tree);
  ScopedBuilder(g, groups, mode, units, expanded, out).run();
  return out;
}

}  // namespace fx::app
