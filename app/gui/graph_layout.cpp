#include "app/gui/graph_layout.h"

#include "app/graphviz/graphviz_render.h"

#include <gvc.h>

#include <QElapsedTimer>
#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>

namespace fx::app {
namespace {

// Graphviz 2.42 takes char* for names and values it never modifies.
void set_attr(void* object, const char* name, const std::string& value) {
  agsafeset(object, const_cast<char*>(name), const_cast<char*>(value.c_str()), const_cast<char*>(""));
}

std::string inches(double points) { return std::to_string(points / 72.0); }

void set_graph_attributes(Agraph_t* g, bool fast, bool left_to_right) {
  set_attr(g, "rankdir", left_to_right ? "LR" : "TB");
  set_attr(g, "nodesep", "0.3");
  set_attr(g, "ranksep", "0.45");
  set_attr(g, "splines", "spline");
  if (fast) {
    // Fewer network-simplex iterations: a less tidy layout of a large graph in a fraction of the time.
    set_attr(g, "nslimit", "0.2");
    set_attr(g, "nslimit1", "0.2");
    set_attr(g, "mclimit", "0.1");
  }
}

std::vector<Agnode_t*> add_nodes(Agraph_t* g, const LayoutInput& input) {
  std::vector<Agnode_t*> nodes;
  nodes.reserve(input.node_sizes.size());
  for (std::size_t i = 0; i < input.node_sizes.size(); ++i) {
    std::string name = "n" + std::to_string(i);
    Agnode_t* n = agnode(g, name.data(), 1);
    set_attr(n, "shape", "box");
    set_attr(n, "fixedsize", "true");
    set_attr(n, "label", "");
    set_attr(n, "width", inches(input.node_sizes[i].width()));
    set_attr(n, "height", inches(input.node_sizes[i].height()));
    nodes.push_back(n);
  }
  return nodes;
}

void add_clusters(Agraph_t* g, const LayoutInput& input, const std::vector<Agnode_t*>& nodes) {
  for (std::size_t c = 0; c < input.clusters.size(); ++c) {
    std::string name = "cluster_" + std::to_string(c);
    Agraph_t* sub = agsubg(g, name.data(), 1);
    // A blank label of the title's size makes dot reserve room at the top for the title the app draws, and
    // make the box at least as wide: a fixed-size empty HTML table (dot measures no text here).
    const double width = c < input.cluster_title_widths.size() ? input.cluster_title_widths[c] : 0.0;
    const std::string table = "<TABLE BORDER=\"0\" CELLPADDING=\"0\" CELLSPACING=\"0\" FIXEDSIZE=\"TRUE\" WIDTH=\"" +
                              std::to_string(std::max(1, static_cast<int>(std::ceil(width)))) + "\" HEIGHT=\"" +
                              std::to_string(static_cast<int>(kClusterLabelHeight)) + "\"><TR><TD></TD></TR></TABLE>";
    char* html = agstrdup_html(g, const_cast<char*>(table.c_str()));
    agsafeset(sub, const_cast<char*>("label"), html, const_cast<char*>(""));
    agstrfree(g, html);
    set_attr(sub, "margin", "10");
    for (int member : input.clusters[c]) agsubnode(sub, nodes[static_cast<std::size_t>(member)], 1);
  }
}

QPointF to_scene(pointf p, const boxf& bb) { return {p.x - bb.LL.x, bb.UR.y - p.y}; }

void read_edges(const std::vector<Agedge_t*>& edges, const boxf& bb, LayoutResult& out) {
  out.edge_points.resize(edges.size());
  out.edge_arrow_tips.resize(edges.size());
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const splines* spl = ED_spl(edges[i]);
    if (spl == nullptr || spl->size == 0) continue;
    const bezier& bz = spl->list[0];
    auto& pts = out.edge_points[i];
    pts.reserve(static_cast<std::size_t>(bz.size));
    for (int k = 0; k < bz.size; ++k) pts.push_back(to_scene(bz.list[k], bb));
    out.edge_arrow_tips[i] = bz.eflag ? to_scene(bz.ep, bb) : (pts.empty() ? QPointF() : pts.back());
  }
}

void read_clusters(Agraph_t* g, const boxf& bb, std::size_t count, LayoutResult& out) {
  out.cluster_rects.resize(count);
  for (int c = 1; c <= GD_n_cluster(g); ++c) {
    Agraph_t* sub = GD_clust(g)[c];
    // Clusters come back in Graphviz's order: map them by the index in their name.
    const std::string name = agnameof(sub);
    const std::size_t index = std::stoul(name.substr(std::string("cluster_").size()));
    if (index >= count) continue;
    const boxf b = GD_bb(sub);
    out.cluster_rects[index] = QRectF(to_scene({b.LL.x, b.UR.y}, bb), to_scene({b.UR.x, b.LL.y}, bb));
  }
}

}  // namespace

LayoutResult layout_with_dot(const LayoutInput& input) {
  QElapsedTimer timer;
  timer.start();
  LayoutResult out;
  std::lock_guard lock(graphviz_mutex());
  static GVC_t* gvc = gvContext();
  char graph_name[] = "fx";
  Agraph_t* g = agopen(graph_name, Agdirected, nullptr);
  set_graph_attributes(g, input.fast, input.left_to_right);
  const std::vector<Agnode_t*> nodes = add_nodes(g, input);
  add_clusters(g, input, nodes);
  std::vector<Agedge_t*> edges;
  edges.reserve(input.edges.size());
  for (const auto& [from, to] : input.edges)
    edges.push_back(agedge(g, nodes[static_cast<std::size_t>(from)], nodes[static_cast<std::size_t>(to)], nullptr, 1));

  if (gvLayout(gvc, g, "dot") != 0) {
    agclose(g);
    out.error = QStringLiteral("Graphviz dot failed to lay out the graph");
    return out;
  }
  const boxf bb = GD_bb(g);
  out.bounds = QRectF(0, 0, bb.UR.x - bb.LL.x, bb.UR.y - bb.LL.y);
  out.node_centres.reserve(nodes.size());
  for (Agnode_t* n : nodes) out.node_centres.push_back(to_scene(ND_coord(n), bb));
  read_edges(edges, bb, out);
  read_clusters(g, bb, input.clusters.size(), out);
  gvFreeLayout(gvc, g);
  agclose(g);
  out.ok = true;
  out.seconds = static_cast<double>(timer.nsecsElapsed()) * 1e-9;
  return out;
}

}  // namespace fx::app
