// Reachability between two vertices of a DAG whose vertices carry positions in a topological order:
// a path from u to v can only pass through vertices positioned between them, so the search never looks
// past v's position. Used for the fusion cycle check: merging groups u and v is legal only if no path
// u -> w -> ... -> v passes through another group w. Graph algorithm only; the fusion passes use it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace fx {

class BoundedReach {
 public:
  using Successors = std::function<void(int vertex, const std::function<void(int)>& visit)>;
  using Position = std::function<int(int vertex)>;

  explicit BoundedReach(int vertex_count)
      : stamp_(static_cast<std::size_t>(vertex_count), 0), parent_(static_cast<std::size_t>(vertex_count), -1) {}

  // Searches forward from `source` through vertices positioned before `target`. Returns the vertices on a
  // path source -> ... -> target through at least one other vertex, or an empty vector if there is none.
  // `reached()` then lists every vertex visited (positioned strictly between the two).
  std::vector<int> path_via_others(int source, int target, const Successors& successors, const Position& position);
  const std::vector<int>& reached() const { return reached_; }

 private:
  std::vector<std::uint32_t> stamp_;
  std::vector<int> parent_;
  std::vector<int> reached_;
  std::uint32_t current_ = 0;
};

}  // namespace fx
