// The hierarchy a large graph is shown by: scopes from the dotted or slashed prefixes of node names
// (`l0.attn.q_mm`, `/layer1/0/conv1/Conv`), with scopes too big to lay out in one go split into runs of
// consecutive items. Plain C++ with no Qt, so it is tested on its own; the view decides what is expanded.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fx::app {

// The scope part of a name: everything before its last '.' or '/' ("l0.attn.q_mm" -> "l0.attn",
// "/layer1/0/conv1/Conv" -> "/layer1/0/conv1", "relu" -> "").
std::string_view scope_prefix(std::string_view name);

// The deepest scope two scope strings share, cut at a component boundary ("l0.attn", "l0.mlp" -> "l0").
std::string_view common_scope(std::string_view a, std::string_view b);

struct Scope {
  std::string path;               // the name prefix it stands for; a run of items: "l0 … l399"
  std::string label;              // what its box shows: the last component(s), or the run's first and last
  int parent = -1;                // -1 for the root
  std::vector<int> scopes;        // child scopes, in the order of their first unit
  std::vector<int> units;         // units directly inside, in unit order
  std::size_t unit_count = 0;     // units in the whole subtree
  int first_unit = 0;             // the smallest unit index in the subtree (orders siblings)
  bool is_run = false;            // made to bound a scope's size, not from names
};

// A tree of scopes over units (graph nodes, or fusion groups): scope 0 is the root. Scopes holding one item
// only are dissolved into their parent, chains of single scopes are merged ("model/layers"), and no scope holds
// more than `max_items` items (units plus child scopes): larger ones get runs of consecutive items.
class ScopeTree {
 public:
  // unit_scopes[u] is unit u's scope string (see scope_prefix), unit_labels[u] its name (runs are labelled by
  // their first and last item); units are numbered in the graph's order.
  static ScopeTree build(const std::vector<std::string_view>& unit_scopes,
                         const std::vector<std::string_view>& unit_labels, std::size_t max_items);

  const std::vector<Scope>& scopes() const { return scopes_; }
  const Scope& scope(int id) const { return scopes_[static_cast<std::size_t>(id)]; }
  int scope_of_unit(int unit) const { return scope_of_unit_[static_cast<std::size_t>(unit)]; }
  std::size_t unit_count() const { return scope_of_unit_.size(); }
  // Root first: the chain of scopes from the root down to `id`.
  std::vector<int> ancestors_of(int id) const;
  // The scope depth of `id` (the root is 0).
  int depth(int id) const;

  // Expansion state: which scopes show their contents (the root always does).
  std::vector<bool> all_expanded() const { return std::vector<bool>(scopes_.size(), true); }
  // Expands whole levels, root first, while the items shown stay within `budget` (at least the root).
  std::vector<bool> expanded_within(std::size_t budget) const;
  // The visible item that stands for `unit`: the outermost collapsed scope above it, or -1 when it is shown.
  int collapsed_scope_of_unit(int unit, const std::vector<bool>& expanded) const;
  // Items shown (units and collapsed scopes) under the given expansion.
  std::size_t visible_items(const std::vector<bool>& expanded) const;

 private:
  int add_child(int parent, std::string path, std::string label);
  void dissolve_single_items(int id);
  void split_into_runs(int id, std::size_t max_items);
  void count_units(int id);
  void renumber();
  void label_runs(const std::vector<std::string_view>& unit_labels);

  std::vector<Scope> scopes_;
  std::vector<int> scope_of_unit_;
};

}  // namespace fx::app
