#include "app/graphviz/plan_pictures.h"

#include "app/graphviz/graphviz_render.h"
#include "core/export/dot.h"
#include "core/fusion/plan_dot.h"

namespace fx {

void render_plan_pictures(SessionReportInput& input) {
  const Graph& g = input.engine->graph();
  if (g.num_nodes() > kMaxPictureNodes) {
    input.pictures_note = "The graph has " + std::to_string(g.num_nodes()) + " nodes, more than the " +
                          std::to_string(kMaxPictureNodes) + " a report draws; see the plan table below.";
    return;
  }
  DotOptions before;
  before.edge_labels = g.num_nodes() <= 300;  // labels make dot slow and the picture crowded on large graphs
  DotOptions after = before;
  after.clusters = plan_clusters(g, input.engine->plan());
  auto before_svg = render_dot_svg(to_dot(g, before));
  auto after_svg = render_dot_svg(to_dot(g, after));
  if (!before_svg || !after_svg) {
    input.pictures_note = "No pictures: " + (before_svg ? after_svg.errors() : before_svg.errors()).front().message;
    return;
  }
  input.before_svg = std::move(*before_svg);
  input.after_svg = std::move(*after_svg);
}

}  // namespace fx
