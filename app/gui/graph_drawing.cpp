#include "app/gui/graph_drawing.h"

#include <QFontMetricsF>
#include <QObject>
#include <algorithm>
#include <map>
#include <set>

#include "core/export/dot.h"

namespace fx::app {
namespace {

constexpr double kPadX = 10.0;
constexpr double kPadY = 6.0;
constexpr double kMinWidth = 70.0;

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString format_flops(double flops) {
  const char* units[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (flops >= 1000.0 && u < 5) {
    flops /= 1000.0;
    ++u;
  }
  return QStringLiteral("%1 %2FLOP").arg(flops, 0, 'g', 3).arg(units[u]);
}

QStringList side_inputs(const Graph& g, NodeId id) {
  QStringList lines;
  for (ValueId v : g.tensor_inputs(id)) {
    if (!g.is_input(v) || g.inputs()[static_cast<std::size_t>(v)].role == Role::activation) continue;
    lines << QStringLiteral("%1 %2").arg(qs(g.value_name(v)), qs(type_to_string(g.value_type(v))));
  }
  return lines;
}

// The line of a box that is a kernel of its own, until a run replaces it with what was measured; a view's says
// that it is none.
QString predicted_line(const GroupInfo& info) {
  return info.view ? info.summary : QStringLiteral("predicted ") + info.summary;
}

}  // namespace

QSizeF measure_node(const DrawnNode& n) {
  const QFontMetricsF title(title_font());
  const QFontMetricsF body(body_font());
  double w = title.horizontalAdvance(n.title);
  double h = title.height();
  for (const QString& line : QStringList{n.name, n.type} + n.extra + QStringList{n.kernel_line}) {
    if (line.isEmpty()) continue;
    w = std::max(w, body.horizontalAdvance(line));
    h += body.height();
  }
  return {std::max(kMinWidth, std::ceil(w + 2 * kPadX)), std::ceil(h + 2 * kPadY)};
}


DrawnNode drawn_op_node(const Graph& g, NodeId id, int group, const GroupInfo* info, ViewMode mode) {
  const Node& n = g.node(id);
  DrawnNode d;
  d.kind = DrawnNode::Kind::op;
  d.node = id;
  d.value = g.value_of(id);
  d.group = group;
  d.title = qs(n.op_id() == OpId::custom && !n.label.empty() ? n.label : n.op);
  d.name = qs(n.name);
  d.type = qs(type_to_string(n.type));
  d.extra = side_inputs(g, id);
  d.fill = QColor(op_class_color(n.op_class()));
  d.is_output = g.is_output(d.value);
  d.tooltip = node_tooltip(g, id, info);
  // An op that is a kernel of its own (every op before fusion, a group of one after) carries its time.
  if (info != nullptr && (mode == ViewMode::unfused || info->nodes.size() == 1)) d.kernel_line = predicted_line(*info);
  return d;
}

DrawnNode drawn_input_node(const Graph& g, ValueId v) {
  DrawnNode d;
  d.kind = DrawnNode::Kind::input;
  d.value = v;
  d.title = QStringLiteral("input");
  d.name = qs(g.value_name(v));
  d.type = qs(type_to_string(g.value_type(v)));
  d.fill = QColor("#ffffff");
  d.tooltip = QStringLiteral("<b>%1</b> (graph input)<br>%2 = %3")
                  .arg(d.name.toHtmlEscaped(), d.type, qs(format_bytes(static_cast<double>(g.value_type(v).bytes()))));
  return d;
}

DrawnNode drawn_group_node(const Graph& g, const GroupInfo& info, int group) {
  DrawnNode d;
  d.kind = DrawnNode::Kind::group;
  d.group = group;
  d.title = info.kind == QLatin1String("single") ? info.id : QStringLiteral("%1  %2").arg(info.id, info.kind);
  QStringList ops;
  for (NodeId n : info.nodes) ops << qs(g.node(n).op);
  d.name = ops.size() > 6 ? ops.mid(0, 5).join('+') + QStringLiteral("+… (%1 ops)").arg(ops.size()) : ops.join('+');
  d.kernel_line = predicted_line(info);
  d.fill = info.nodes.size() > 1 ? fusion_kind_color(info.kind) : QColor(op_class_color(g.node(info.nodes[0]).op_class()));
  d.node = info.nodes.front();
  d.value = g.value_of(info.nodes.back());
  d.is_output = std::any_of(info.nodes.begin(), info.nodes.end(), [&](NodeId n) { return g.is_output(g.value_of(n)); });
  QStringList names;
  for (NodeId n : info.nodes) names << qs(g.node(n).name).toHtmlEscaped();
  d.tooltip = QStringLiteral("<b>%1</b><br>%2 node(s): %3<br>%4")
                  .arg(d.title.toHtmlEscaped()).arg(info.nodes.size()).arg(names.join(", "), info.summary.toHtmlEscaped());
  if (!info.kernel.isEmpty()) d.tooltip += QObject::tr("<br>kernel: %1").arg(info.kernel.toHtmlEscaped());
  return d;
}

QString edge_label(const Graph& g, ValueId v) { return qs(format_bytes(static_cast<double>(g.value_type(v).bytes()))); }

namespace {

// One drawn box per activation input that something reads.
void add_inputs(const Graph& g, DrawnGraph& out, std::vector<int>& drawn_of_value) {
  for (ValueId v = 0; v < static_cast<ValueId>(g.inputs().size()); ++v) {
    if (g.inputs()[static_cast<std::size_t>(v)].role != Role::activation) continue;
    drawn_of_value[static_cast<std::size_t>(v)] = static_cast<int>(out.nodes.size());
    out.nodes.push_back(drawn_input_node(g, v));
  }
}

// An edge between two boxes of one fused group (drawn in the fused view) carries a tensor the kernel keeps on
// chip: it is drawn thin and grey and says so, where every other edge is a tensor written to HBM and read back.
bool inside_one_group(const DrawnGraph& out, int from, int to) {
  const int group = out.nodes[static_cast<std::size_t>(from)].group;
  return out.mode == ViewMode::fused && group >= 0 && group == out.nodes[static_cast<std::size_t>(to)].group &&
         out.groups[static_cast<std::size_t>(group)].nodes.size() > 1;
}

void add_edges(const Graph& g, DrawnGraph& out, const std::vector<int>& drawn_of_value) {
  std::set<std::pair<int, int>> seen;
  for (NodeId c : g.topo_order()) {
    const int to = out.node_of_graph_node[static_cast<std::size_t>(c)];
    for (ValueId v : g.tensor_inputs(c)) {
      const int from = drawn_of_value[static_cast<std::size_t>(v)];
      if (from < 0 || from == to || !seen.insert({from, to}).second) continue;
      const QString bytes = edge_label(g, v);
      const QString name = qs(g.value_name(v)).toHtmlEscaped();
      DrawnEdge e{from, to, v, c, bytes, false, {}};
      e.on_chip = inside_one_group(out, from, to);
      if (e.on_chip) {
        e.label = QObject::tr("on chip");
        e.tooltip = QObject::tr("<b>%1</b> (%2) stays on chip inside the kernel: never written to HBM").arg(name, bytes);
      } else {
        e.tooltip = QObject::tr("<b>%1</b>: %2 written to HBM and read back by the next kernel").arg(name, bytes);
      }
      out.edges.push_back(std::move(e));
    }
  }
}

}  // namespace

LayoutInput layout_input(const DrawnGraph& drawing) {
  LayoutInput input;
  input.node_sizes.reserve(drawing.nodes.size());
  for (const DrawnNode& n : drawing.nodes) input.node_sizes.push_back(n.size);
  for (const DrawnEdge& e : drawing.edges) input.edges.emplace_back(e.from, e.to);
  for (const DrawnCluster& c : drawing.clusters) {
    input.clusters.push_back(c.members);
    input.cluster_title_widths.push_back(c.title_width);
  }
  input.fast = drawing.nodes.size() > 800;
  input.left_to_right = drawing.left_to_right;
  return input;
}

namespace {
double g_text_scale = 1.0;

QFont scaled_font(double points, bool bold) {
  QFont font(QStringLiteral("DejaVu Sans"));
  font.setPointSizeF(points * g_text_scale);
  font.setBold(bold);
  return font;
}

// The graph's fonts, rebuilt when the text scale changes (references handed out stay valid).
struct GraphFonts {
  QFont title, body, edge, cluster;
  void rebuild() {
    title = scaled_font(10, true);
    body = scaled_font(8, false);
    edge = scaled_font(7, false);
    // The title band above a group's first box has a fixed height (kClusterLabelHeight): its font grows less.
    cluster = scaled_font(9 * std::min(g_text_scale, 1.2) / g_text_scale, true);
  }
  GraphFonts() { rebuild(); }
};
GraphFonts& fonts() {
  static GraphFonts f;
  return f;
}
}  // namespace

void set_text_scale(double scale) {
  g_text_scale = std::clamp(scale, 0.5, 4.0);
  fonts().rebuild();
}
double text_scale() { return g_text_scale; }

const QFont& cluster_font() { return fonts().cluster; }

double cluster_line_width(const QString& text) { return QFontMetricsF(cluster_font()).horizontalAdvance(text) + 16; }

const QFont& title_font() { return fonts().title; }
const QFont& body_font() { return fonts().body; }
const QFont& edge_font() { return fonts().edge; }

QColor fusion_kind_color(const QString& kind) {
  const QString first = kind.section('+', 0, 0);
  if (first == QLatin1String("vertical")) return QColor("#fff3c4");
  if (first == QLatin1String("epilogue") || first == QLatin1String("prologue")) return QColor("#ffd9d0");
  if (first == QLatin1String("horizontal")) return QColor("#d4f1f4");
  if (first == QLatin1String("attention")) return QColor("#e6d9f7");
  return QColor("#eeeeee");
}

QString node_tooltip(const Graph& g, NodeId id, const GroupInfo* group) {
  const Node& n = g.node(id);
  QString text = QStringLiteral("<b>%1</b> = %2(…)<br>class: %3<br>output: %4, %5<br>%6")
                     .arg(qs(n.name).toHtmlEscaped(), qs(n.op), qs(std::string(op_class_name(n.op_class()))),
                          qs(type_to_string(n.type)), qs(format_bytes(static_cast<double>(n.type.bytes()))),
                          format_flops(g.flops(id)));
  QStringList ins;
  for (ValueId v : g.tensor_inputs(id))
    ins << QStringLiteral("%1 (%2)").arg(qs(g.value_name(v)).toHtmlEscaped(),
                                        qs(format_bytes(static_cast<double>(g.value_type(v).bytes()))));
  if (!ins.isEmpty()) text += QStringLiteral("<br>reads: ") + ins.join(", ");
  if (!n.source.empty()) text += QStringLiteral("<br>source: %1").arg(qs(n.source).toHtmlEscaped());
  if (group != nullptr && group->nodes.size() > 1)
    text += QStringLiteral("<br>group: %1 (%2)").arg(group->id.toHtmlEscaped(), group->kind);
  if (group != nullptr && !group->kernel.isEmpty()) text += QObject::tr("<br>kernel: %1").arg(group->kernel.toHtmlEscaped());
  if (group != nullptr && group->view) text += QStringLiteral("<br>") + group->summary.toHtmlEscaped();
  return text;
}

DrawnGraph build_drawing(const Graph& g, const std::vector<GroupInfo>& groups, ViewMode mode) {
  DrawnGraph out;
  out.mode = mode;
  out.groups = groups;
  std::vector<int> group_of(static_cast<std::size_t>(g.num_nodes()), -1);
  for (std::size_t i = 0; i < groups.size(); ++i)
    for (NodeId n : groups[i].nodes) group_of[static_cast<std::size_t>(n)] = static_cast<int>(i);

  std::vector<int> drawn_of_value(static_cast<std::size_t>(g.num_values()), -1);
  out.node_of_graph_node.assign(static_cast<std::size_t>(g.num_nodes()), -1);
  add_inputs(g, out, drawn_of_value);

  std::map<int, int> drawn_of_group;
  std::map<int, std::vector<int>> cluster_members;
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const int gi = group_of[static_cast<std::size_t>(id)];
    const GroupInfo* info = gi >= 0 ? &groups[static_cast<std::size_t>(gi)] : nullptr;
    int drawn;
    if (mode == ViewMode::collapsed && info != nullptr) {
      auto [it, fresh] = drawn_of_group.try_emplace(gi, static_cast<int>(out.nodes.size()));
      if (fresh) out.nodes.push_back(drawn_group_node(g, *info, gi));
      drawn = it->second;
    } else {
      drawn = static_cast<int>(out.nodes.size());
      out.nodes.push_back(drawn_op_node(g, id, gi, info, mode));
      if (mode == ViewMode::fused && info != nullptr && info->nodes.size() > 1) cluster_members[gi].push_back(drawn);
    }
    out.node_of_graph_node[static_cast<std::size_t>(id)] = drawn;
    drawn_of_value[static_cast<std::size_t>(g.value_of(id))] = drawn;
  }
  for (auto& [gi, members] : cluster_members) {
    const GroupInfo& info = groups[static_cast<std::size_t>(gi)];
    const QString label = QStringLiteral("%1  %2").arg(info.id, info.kind);
    out.clusters.push_back({gi, label, fusion_kind_color(info.kind), std::move(members), cluster_line_width(label)});
  }
  add_edges(g, out, drawn_of_value);
  for (DrawnNode& d : out.nodes) d.size = measure_node(d);
  return out;
}

}  // namespace fx::app
