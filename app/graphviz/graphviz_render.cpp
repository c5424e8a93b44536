#include "app/graphviz/graphviz_render.h"

#include <gvc.h>

namespace fx {

std::mutex& graphviz_mutex() {
  static std::mutex m;
  return m;
}

Expected<std::string> render_dot_svg(const std::string& dot) {
  std::lock_guard lock(graphviz_mutex());
  static GVC_t* gvc = gvContext();
  Agraph_t* g = agmemread(dot.c_str());
  if (!g) return Diagnostic{"", "Graphviz could not read the DOT text"};
  if (gvLayout(gvc, g, "dot") != 0) {
    agclose(g);
    return Diagnostic{"", "Graphviz dot failed to lay out the graph"};
  }
  char* data = nullptr;
  unsigned int length = 0;
  const int rendered = gvRenderData(gvc, g, "svg", &data, &length);
  std::string svg = rendered == 0 && data ? std::string(data, length) : std::string();
  if (data) gvFreeRenderData(data);
  gvFreeLayout(gvc, g);
  agclose(g);
  if (svg.empty()) return Diagnostic{"", "Graphviz has no SVG renderer here (its core plugins are missing)"};
  return svg;
}

}  // namespace fx
