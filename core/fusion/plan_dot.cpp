#include "core/fusion/plan_dot.h"

#include <algorithm>

#include "core/graph/utf8.h"

namespace fx {

const char* fusion_kind_color(const Group& group) {
  auto has = [&](FusionKind k) { return std::find(group.kinds.begin(), group.kinds.end(), k) != group.kinds.end(); };
  if (has(FusionKind::attention)) return "#e8dcf5";
  if (has(FusionKind::epilogue)) return "#dbe8fb";
  if (has(FusionKind::horizontal)) return "#fde9cf";
  if (has(FusionKind::vertical)) return "#dff3df";
  return "#ffffff";
}

std::vector<DotCluster> plan_clusters(const Graph& g, const Plan& plan) {
  std::vector<DotCluster> out;
  for (std::size_t i = 0; i < plan.groups().size(); ++i) {
    const Group& grp = plan.groups()[i];
    if (grp.nodes.size() < 2) continue;
    DotCluster c;
    c.id = std::string("g").append(std::to_string(i));
    std::string kinds, names;
    for (FusionKind k : grp.kinds) {
      if (!kinds.empty()) kinds += '+';
      kinds += to_string(k);
    }
    for (NodeId n : grp.nodes) {
      if (!names.empty()) names += '+';
      names += g.node(n).name;
    }
    if (names.size() > 60) names = std::string(utf8_prefix(names, 57)) + "...";
    c.label = grp.id + " " + kinds + ": " + names;
    c.color = fusion_kind_color(grp);
    c.nodes = grp.nodes;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace fx
