// Disjoint sets with path halving; the representative of a merged set is chosen by the
// caller (auto-fuse keeps the set whose first node comes first, so group ids stay stable).
#pragma once

#include <numeric>
#include <vector>

namespace fx {

class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(static_cast<std::size_t>(n)) { std::iota(parent_.begin(), parent_.end(), 0); }
  int find(int x) {
    while (parent_[static_cast<std::size_t>(x)] != x) {
      auto& p = parent_[static_cast<std::size_t>(x)];
      p = parent_[static_cast<std::size_t>(p)];
      x = p;
    }
    return x;
  }
  // Makes `root` the representative of the union of the sets of a and root.
  void unite_into(int a, int root) {
    a = find(a);
    root = find(root);
    if (a != root) parent_[static_cast<std::size_t>(a)] = root;
  }

 private:
  std::vector<int> parent_;
};

}  // namespace fx
