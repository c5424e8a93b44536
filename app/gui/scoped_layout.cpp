#include "app/gui/scoped_layout.h"

#include <QElapsedTimer>
#include <algorithm>
#include <cmath>

namespace fx::app {
namespace {

class Fnv {
 public:
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= (v >> (8 * i)) & 0xffu;
      hash_ *= 1099511628211ull;
    }
  }
  void add(double v) { add(static_cast<std::uint64_t>(std::llround(v * 64.0))); }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 1469598103934665603ull;
};

LayoutInput level_input(const DrawnGraph& d, const ScopeLevel& lv, const std::vector<QSizeF>& frame_sizes) {
  LayoutInput input;
  for (int n : lv.nodes) input.node_sizes.push_back(d.nodes[static_cast<std::size_t>(n)].size);
  for (int c : lv.children) input.node_sizes.push_back(frame_sizes[static_cast<std::size_t>(c)]);
  input.edges = lv.ends;
  for (int c : lv.clusters) {
    const DrawnCluster& cluster = d.clusters[static_cast<std::size_t>(c)];
    std::vector<int> members;
    for (int m : cluster.members) {
      const auto at = std::find(lv.nodes.begin(), lv.nodes.end(), m);
      if (at != lv.nodes.end()) members.push_back(static_cast<int>(at - lv.nodes.begin()));
    }
    input.clusters.push_back(std::move(members));
    input.cluster_title_widths.push_back(cluster.title_width);
  }
  return input;
}

QSizeF frame_size(const DrawnGraph& d, const ScopeLevel& lv, const LayoutResult& laid_out) {
  const double title = lv.frame >= 0 ? d.clusters[static_cast<std::size_t>(lv.frame)].title_width : 0.0;
  return {std::ceil(std::max(laid_out.bounds.width() + 2 * kFrameMargin, title)),
          std::ceil(laid_out.bounds.height() + 2 * kFrameMargin + kClusterLabelHeight)};
}

// Copies a level's layout into the drawing's, moved by `origin` (where the level's contents start).
void place_level(const ScopeLevel& lv, const LayoutResult& local, QPointF origin, LayoutResult& out) {
  for (std::size_t i = 0; i < lv.nodes.size(); ++i)
    out.node_centres[static_cast<std::size_t>(lv.nodes[i])] = local.node_centres[i] + origin;
  for (std::size_t i = 0; i < lv.edges.size(); ++i) {
    const auto e = static_cast<std::size_t>(lv.edges[i]);
    out.edge_points[e] = local.edge_points[i];
    for (QPointF& p : out.edge_points[e]) p += origin;
    out.edge_arrow_tips[e] = local.edge_arrow_tips[i] + origin;
  }
  for (std::size_t i = 0; i < lv.clusters.size() && i < local.cluster_rects.size(); ++i)
    out.cluster_rects[static_cast<std::size_t>(lv.clusters[i])] = local.cluster_rects[i].translated(origin);
}

LayoutResult layout_levels(const DrawnGraph& d, LayoutCache* cache) {
  LayoutResult out;
  std::vector<LayoutResult> local(d.levels.size());
  std::vector<QSizeF> frames(d.levels.size());
  for (std::size_t i = 0; i < d.levels.size(); ++i) {
    const LayoutInput input = level_input(d, d.levels[i], frames);
    bool fresh = true;
    local[i] = cache != nullptr ? cache->layout(input, &fresh) : layout_with_dot(input);
    if (!local[i].ok) return local[i];
    if (fresh) {
      out.fresh_levels.push_back(static_cast<int>(i));
      ++out.dot_runs;
    }
    frames[i] = frame_size(d, d.levels[i], local[i]);
  }
  out.node_centres.resize(d.nodes.size());
  out.edge_points.resize(d.edges.size());
  out.edge_arrow_tips.resize(d.edges.size());
  out.cluster_rects.resize(d.clusters.size());
  // Parents come after their children: walk from the root down, placing each child's frame where its parent's
  // layout put the child's box.
  std::vector<QPointF> origin(d.levels.size());
  for (std::size_t i = d.levels.size(); i-- > 0;) {
    const ScopeLevel& lv = d.levels[i];
    place_level(lv, local[i], origin[i], out);
    for (std::size_t k = 0; k < lv.children.size(); ++k) {
      const auto child = static_cast<std::size_t>(lv.children[k]);
      const QSizeF size = frames[child];
      const QPointF centre = local[i].node_centres[lv.nodes.size() + k] + origin[i];
      const QRectF box(centre - QPointF(size.width() / 2, size.height() / 2), size);
      const ScopeLevel& inner = d.levels[child];
      if (inner.frame >= 0) out.cluster_rects[static_cast<std::size_t>(inner.frame)] = box;
      origin[child] = box.topLeft() + QPointF((size.width() - local[child].bounds.width()) / 2,
                                              kFrameMargin + kClusterLabelHeight);
    }
  }
  out.bounds = local.empty() ? QRectF() : local.back().bounds;
  out.ok = true;
  return out;
}

}  // namespace

std::uint64_t layout_key(const LayoutInput& input) {
  Fnv h;
  h.add(static_cast<std::uint64_t>(input.node_sizes.size()));
  for (const QSizeF& s : input.node_sizes) h.add(s.width()), h.add(s.height());
  h.add(static_cast<std::uint64_t>(input.edges.size()));
  for (const auto& [a, b] : input.edges) h.add(static_cast<std::uint64_t>(a) << 32 | static_cast<std::uint32_t>(b));
  for (std::size_t c = 0; c < input.clusters.size(); ++c) {
    h.add(static_cast<std::uint64_t>(input.clusters[c].size()));
    for (int m : input.clusters[c]) h.add(static_cast<std::uint64_t>(m));
    if (c < input.cluster_title_widths.size()) h.add(input.cluster_title_widths[c]);
  }
  h.add(static_cast<std::uint64_t>(input.fast));
  return h.value();
}

bool same_layout_input(const LayoutInput& a, const LayoutInput& b) {
  return a.node_sizes == b.node_sizes && a.edges == b.edges && a.clusters == b.clusters &&
         a.cluster_title_widths == b.cluster_title_widths && a.fast == b.fast;
}

LayoutResult LayoutCache::layout(const LayoutInput& input, bool* fresh) {
  const std::uint64_t key = layout_key(input);
  {
    std::lock_guard lock(mutex_);
    const auto [begin, end] = by_hash_.equal_range(key);
    for (auto it = begin; it != end; ++it) {
      if (!same_layout_input(it->second->input, input)) continue;
      entries_.splice(entries_.begin(), entries_, it->second);
      if (fresh != nullptr) *fresh = false;
      return entries_.front().result;
    }
    ++dot_runs_;
  }
  // dot runs outside this lock (it takes Graphviz's own), so a lookup never waits for a layout.
  LayoutResult result = layout_with_dot(input);
  if (fresh != nullptr) *fresh = true;
  if (!result.ok) return result;
  std::lock_guard lock(mutex_);
  entries_.push_front({input, result});
  by_hash_.emplace(key, entries_.begin());
  while (entries_.size() > capacity_) {
    const std::uint64_t old = layout_key(entries_.back().input);
    const auto [begin, end] = by_hash_.equal_range(old);
    for (auto it = begin; it != end; ++it) {
      if (it->second == std::prev(entries_.end())) {
        by_hash_.erase(it);
        break;
      }
    }
    entries_.pop_back();
  }
  return result;
}

int LayoutCache::dot_runs() const {
  std::lock_guard lock(mutex_);
  return dot_runs_;
}

void LayoutCache::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
  by_hash_.clear();
  dot_runs_ = 0;
}

LayoutResult layout_drawing(const DrawnGraph& drawing, LayoutCache* cache) {
  QElapsedTimer timer;
  timer.start();
  LayoutResult out;
  if (drawing.levels.empty()) {
    out = layout_with_dot(layout_input(drawing));
    out.dot_runs = 1;
  } else {
    out = layout_levels(drawing, cache);
  }
  out.seconds = static_cast<double>(timer.nsecsElapsed()) * 1e-9;
  return out;
}

}  // namespace fx::app
