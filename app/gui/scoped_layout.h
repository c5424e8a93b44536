// Layout of a scoped drawing, one dot run per expanded scope, each cached by what it lays out: after an accept
// or reject only the scopes whose contents (or whose children's sizes) changed are laid out again. Children are
// laid out first; a child's frame is a box of its layout's size in its parent's layout.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <unordered_map>

#include "app/gui/graph_drawing.h"
#include "app/gui/graph_layout.h"

namespace fx::app {

// Room around an expanded scope's contents inside its frame (the title band comes on top of it).
inline constexpr double kFrameMargin = 12.0;

// Layouts by their input, shared by the layout worker's runs. Thread-safe.
class LayoutCache {
 public:
  explicit LayoutCache(std::size_t capacity = 4096) : capacity_(capacity) {}
  // The cached layout of `input`, or a new dot run (counted) that is then cached. `fresh` says which.
  LayoutResult layout(const LayoutInput& input, bool* fresh = nullptr);
  // dot runs made through this cache since it was made or cleared: what tests count.
  int dot_runs() const;
  void clear();

 private:
  struct Entry {
    LayoutInput input;
    LayoutResult result;
  };
  mutable std::mutex mutex_;
  std::size_t capacity_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_multimap<std::uint64_t, std::list<Entry>::iterator> by_hash_;
  int dot_runs_ = 0;
};

// Lays out a drawing: one dot run for a flat one, one per level for a scoped one (through `cache` where given).
// The result is in scene coordinates for every drawn node, edge and cluster (scope frames included);
// fresh_levels lists the levels that were laid out anew rather than taken from the cache.
LayoutResult layout_drawing(const DrawnGraph& drawing, LayoutCache* cache);

// A hash of everything dot is given (what the cache files a layout under).
std::uint64_t layout_key(const LayoutInput& input);
bool same_layout_input(const LayoutInput& a, const LayoutInput& b);

}  // namespace fx::app
