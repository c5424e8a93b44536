#include "core/analysis/bounded_reach.h"

#include <algorithm>

namespace fx {

std::vector<int> BoundedReach::path_via_others(int source, int target, const Successors& successors,
                                               const Position& position) {
  if (++current_ == 0) {  // wrapped: clear the stamps once every 4 billion searches
    std::fill(stamp_.begin(), stamp_.end(), 0);
    current_ = 1;
  }
  reached_.clear();
  const int limit = position(target);
  std::vector<int> stack;
  int found_via = -1;  // the vertex whose edge into target closes the path
  auto expand = [&](int from) {
    successors(from, [&](int next) {
      if (found_via >= 0 || next == source) return;
      if (next == target) {
        if (from != source) found_via = from;
        return;
      }
      auto& st = stamp_[static_cast<std::size_t>(next)];
      if (st == current_ || position(next) >= limit) return;
      st = current_;
      parent_[static_cast<std::size_t>(next)] = from;
      reached_.push_back(next);
      stack.push_back(next);
    });
  };
  expand(source);
  while (!stack.empty() && found_via < 0) {
    const int v = stack.back();
    stack.pop_back();
    expand(v);
  }
  if (found_via < 0) return {};
  std::vector<int> path{target};
  for (int v = found_via; v != source; v = parent_[static_cast<std::size_t>(v)]) path.push_back(v);
  path.push_back(source);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace fx
