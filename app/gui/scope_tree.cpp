#include "app/gui/scope_tree.h"

#include <algorithm>
#include <unordered_map>

namespace fx::app {
namespace {

bool is_separator(char c) { return c == '.' || c == '/'; }

// Names nested deeper than this are cut there: it bounds the tree's depth (and every recursion over it)
// whatever a file's names look like.
constexpr int kMaxNameDepth = 24;

// A scope's label: its path after the path of the nearest named scope above it, without separators at the ends.
std::string relative_label(const std::string& path, const std::string& parent_path) {
  std::string_view rest(path);
  if (rest.substr(0, parent_path.size()) == parent_path) rest.remove_prefix(parent_path.size());
  while (!rest.empty() && is_separator(rest.front())) rest.remove_prefix(1);
  return rest.empty() ? path : std::string(rest);
}

}  // namespace

std::string_view scope_prefix(std::string_view name) {
  const std::size_t cut = name.find_last_of("./");
  if (cut == std::string_view::npos) return {};
  std::string_view prefix = name.substr(0, cut);
  // "a.b." has an empty leaf in "a.b"; "/x" has only the leading slash before it, which is no scope.
  while (!prefix.empty() && is_separator(prefix.back())) prefix.remove_suffix(1);
  return prefix;
}

std::string_view common_scope(std::string_view a, std::string_view b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  const auto boundary = [](std::string_view s, std::size_t at) { return at == s.size() || is_separator(s[at]); };
  while (n > 0 && !(boundary(a, n) && boundary(b, n))) --n;
  while (n > 0 && is_separator(a[n - 1])) --n;
  return a.substr(0, n);
}

int ScopeTree::add_child(int parent, std::string path, std::string label) {
  const int id = static_cast<int>(scopes_.size());
  Scope s;
  s.path = std::move(path);
  s.label = std::move(label);
  s.parent = parent;
  scopes_.push_back(std::move(s));
  scopes_[static_cast<std::size_t>(parent)].scopes.push_back(id);
  return id;
}

ScopeTree ScopeTree::build(const std::vector<std::string_view>& unit_scopes,
                           const std::vector<std::string_view>& unit_labels, std::size_t max_items) {
  ScopeTree t;
  t.scopes_.push_back(Scope{});
  t.scope_of_unit_.assign(unit_scopes.size(), 0);
  std::unordered_map<std::string, int> by_path;
  for (std::size_t u = 0; u < unit_scopes.size(); ++u) {
    const std::string_view s = unit_scopes[u];
    int at = 0;
    if (auto hit = s.empty() ? by_path.end() : by_path.find(std::string(s)); hit != by_path.end()) {
      at = hit->second;
    } else {
      // Walk the components: each prefix that ends before a separator (or at the end) is a scope.
      int depth = 0;
      for (std::size_t i = 0; i <= s.size() && depth < kMaxNameDepth; ++i) {
        if (i < s.size() && !is_separator(s[i])) continue;
        if (i == 0 || is_separator(s[i - 1])) continue;  // leading or doubled separators
        std::string prefix(s.substr(0, i));
        auto [it, fresh] = by_path.try_emplace(prefix, 0);
        if (fresh) it->second = t.add_child(at, prefix, {});
        at = it->second;
        ++depth;
      }
    }
    t.scopes_[static_cast<std::size_t>(at)].units.push_back(static_cast<int>(u));
  }
  t.dissolve_single_items(0);
  // A root holding one scope and nothing else (ONNX's "/model/..."): show that scope's contents at the top.
  Scope& root = t.scopes_[0];
  while (root.units.empty() && root.scopes.size() == 1) {
    Scope& only = t.scopes_[static_cast<std::size_t>(root.scopes.front())];
    root.path = only.path;
    root.scopes = std::move(only.scopes);
    root.units = std::move(only.units);
    only.parent = -2;  // dead
    for (int c : root.scopes) t.scopes_[static_cast<std::size_t>(c)].parent = 0;
  }
  t.count_units(0);
  t.split_into_runs(0, std::max<std::size_t>(2, max_items));
  t.renumber();
  t.label_runs(unit_labels);
  return t;
}

// Post-order: a child scope holding a single item (one unit, or one scope) is replaced by that item.
void ScopeTree::dissolve_single_items(int id) {
  std::vector<int> kept;
  const std::vector<int> children = scopes_[static_cast<std::size_t>(id)].scopes;
  for (int c : children) {
    dissolve_single_items(c);
    Scope& child = scopes_[static_cast<std::size_t>(c)];
    if (child.units.size() + child.scopes.size() != 1) {
      kept.push_back(c);
      continue;
    }
    child.parent = -2;  // dead
    if (!child.units.empty()) {
      scopes_[static_cast<std::size_t>(id)].units.push_back(child.units.front());
    } else {
      const int grandchild = child.scopes.front();
      scopes_[static_cast<std::size_t>(grandchild)].parent = id;
      kept.push_back(grandchild);
    }
  }
  Scope& s = scopes_[static_cast<std::size_t>(id)];
  s.scopes = std::move(kept);
  std::sort(s.units.begin(), s.units.end());
}

void ScopeTree::count_units(int id) {
  Scope& s = scopes_[static_cast<std::size_t>(id)];
  s.unit_count = s.units.size();
  s.first_unit = s.units.empty() ? static_cast<int>(scope_of_unit_.size()) : s.units.front();
  for (int c : s.scopes) {
    count_units(c);
    const Scope& child = scopes_[static_cast<std::size_t>(c)];
    Scope& self = scopes_[static_cast<std::size_t>(id)];
    self.unit_count += child.unit_count;
    self.first_unit = std::min(self.first_unit, child.first_unit);
  }
  Scope& self = scopes_[static_cast<std::size_t>(id)];
  std::sort(self.scopes.begin(), self.scopes.end(), [this](int a, int b) {
    return scopes_[static_cast<std::size_t>(a)].first_unit < scopes_[static_cast<std::size_t>(b)].first_unit;
  });
}

// A scope with more than max_items items gets runs of consecutive items (by first unit) as child scopes,
// repeatedly, so that dot never sees more than max_items boxes in one layout.
void ScopeTree::split_into_runs(int id, std::size_t max_items) {
  const std::vector<int> named_children = scopes_[static_cast<std::size_t>(id)].scopes;
  while (scopes_[static_cast<std::size_t>(id)].units.size() + scopes_[static_cast<std::size_t>(id)].scopes.size() >
         max_items) {
    Scope& s = scopes_[static_cast<std::size_t>(id)];
    // Items ordered by their first unit: a unit u is encoded as ~u to tell it from a scope id.
    std::vector<std::pair<int, int>> items;
    for (int c : s.scopes) items.emplace_back(scopes_[static_cast<std::size_t>(c)].first_unit, c);
    for (int u : s.units) items.emplace_back(u, ~u);
    std::sort(items.begin(), items.end());
    s.scopes.clear();
    s.units.clear();
    const std::size_t runs = (items.size() + max_items - 1) / max_items;
    const std::size_t per_run = (items.size() + runs - 1) / runs;
    for (std::size_t begin = 0; begin < items.size(); begin += per_run) {
      const std::size_t end = std::min(items.size(), begin + per_run);
      const int run = add_child(id, {}, {});
      Scope& r = scopes_[static_cast<std::size_t>(run)];
      r.is_run = true;
      r.first_unit = items[begin].first;
      for (std::size_t i = begin; i < end; ++i) {
        const int item = items[i].second;
        if (item >= 0) {
          r.scopes.push_back(item);
        } else {
          r.units.push_back(~item);
        }
      }
      for (int c : scopes_[static_cast<std::size_t>(run)].scopes) scopes_[static_cast<std::size_t>(c)].parent = run;
      count_units(run);
    }
  }
  for (int c : named_children) split_into_runs(c, max_items);
}

// Drops dissolved scopes, numbers the rest root first (breadth first), and fills paths, labels and
// scope_of_unit.
void ScopeTree::renumber() {
  std::vector<int> order{0};
  for (std::size_t i = 0; i < order.size(); ++i)
    for (int c : scopes_[static_cast<std::size_t>(order[i])].scopes) order.push_back(c);
  std::vector<int> new_id(scopes_.size(), -1);
  for (std::size_t i = 0; i < order.size(); ++i) new_id[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
  std::vector<Scope> kept;
  kept.reserve(order.size());
  for (int old : order) {
    Scope s = std::move(scopes_[static_cast<std::size_t>(old)]);
    if (s.parent >= 0) s.parent = new_id[static_cast<std::size_t>(s.parent)];
    for (int& c : s.scopes) c = new_id[static_cast<std::size_t>(c)];
    kept.push_back(std::move(s));
  }
  scopes_ = std::move(kept);
  for (std::size_t id = 0; id < scopes_.size(); ++id) {
    for (int u : scopes_[id].units) scope_of_unit_[static_cast<std::size_t>(u)] = static_cast<int>(id);
    if (id == 0 || scopes_[id].is_run) continue;
    int named = scopes_[id].parent;
    while (named > 0 && scopes_[static_cast<std::size_t>(named)].is_run) named = scopes_[static_cast<std::size_t>(named)].parent;
    scopes_[id].label = relative_label(scopes_[id].path, scopes_[static_cast<std::size_t>(named)].path);
  }
}

// Children are numbered after their parents: label the runs deepest first, so a run of runs reads its
// children's labels ("l0 … l399").
void ScopeTree::label_runs(const std::vector<std::string_view>& unit_labels) {
  auto unit_label = [&](int u) {
    if (static_cast<std::size_t>(u) < unit_labels.size()) return std::string(unit_labels[static_cast<std::size_t>(u)]);
    std::string numbered("#");
    numbered += std::to_string(u);
    return numbered;
  };
  for (std::size_t i = scopes_.size(); i-- > 1;) {
    Scope& s = scopes_[i];
    if (!s.is_run) continue;
    // The first and last items in unit order: a child scope or a unit, whichever comes first (or last).
    std::string first, last;
    int first_at = -1, last_at = -1;
    for (int c : s.scopes) {
      const Scope& child = scopes_[static_cast<std::size_t>(c)];
      if (first_at < 0 || child.first_unit < first_at) first_at = child.first_unit, first = child.label;
      if (child.first_unit > last_at) last_at = child.first_unit, last = child.label;
    }
    for (int u : s.units) {
      if (first_at < 0 || u < first_at) first_at = u, first = unit_label(u);
      if (u > last_at) last_at = u, last = unit_label(u);
    }
    const std::size_t dots = first.find(" … ");
    const std::size_t dots_last = last.find(" … ");
    if (dots != std::string::npos) first = first.substr(0, dots);
    if (dots_last != std::string::npos) last = last.substr(dots_last + std::string(" … ").size());
    s.label = first + " … " + last;
  }
}

std::vector<int> ScopeTree::ancestors_of(int id) const {
  std::vector<int> chain;
  for (int s = id; s >= 0; s = scopes_[static_cast<std::size_t>(s)].parent) chain.push_back(s);
  std::reverse(chain.begin(), chain.end());
  return chain;
}

int ScopeTree::depth(int id) const { return static_cast<int>(ancestors_of(id).size()) - 1; }

std::vector<bool> ScopeTree::expanded_within(std::size_t budget) const {
  std::vector<bool> expanded(scopes_.size(), false);
  expanded[0] = true;
  std::vector<int> level = scopes_[0].scopes;
  std::size_t shown = scopes_[0].units.size() + scopes_[0].scopes.size();
  while (!level.empty()) {
    std::size_t next_shown = shown;
    std::vector<int> next;
    for (int id : level) {
      const Scope& s = scopes_[static_cast<std::size_t>(id)];
      next_shown += s.units.size() + s.scopes.size() - 1;
      next.insert(next.end(), s.scopes.begin(), s.scopes.end());
    }
    if (next_shown > budget) break;
    for (int id : level) expanded[static_cast<std::size_t>(id)] = true;
    shown = next_shown;
    level = std::move(next);
  }
  return expanded;
}

int ScopeTree::collapsed_scope_of_unit(int unit, const std::vector<bool>& expanded) const {
  int outermost = -1;
  for (int s = scope_of_unit(unit); s >= 0; s = scopes_[static_cast<std::size_t>(s)].parent)
    if (!expanded[static_cast<std::size_t>(s)]) outermost = s;
  return outermost;
}

std::size_t ScopeTree::visible_items(const std::vector<bool>& expanded) const {
  std::size_t n = 0;
  std::vector<int> stack{0};
  while (!stack.empty()) {
    const Scope& s = scopes_[static_cast<std::size_t>(stack.back())];
    stack.pop_back();
    n += s.units.size();
    for (int c : s.scopes) {
      if (expanded[static_cast<std::size_t>(c)]) {
        stack.push_back(c);
      } else {
        ++n;
      }
    }
  }
  return n;
}

}  // namespace fx::app
