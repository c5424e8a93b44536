#include "core/graph/op_id.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace fx {

std::optional<OpId> find_op_id(std::string_view name) {
  static const std::unordered_map<std::string_view, OpId> by_name = [] {
    std::unordered_map<std::string_view, OpId> m;
    for (std::size_t i = 0; i < kNumOps; ++i) m.emplace(kOpNames[i], static_cast<OpId>(i));
    return m;
  }();
  auto it = by_name.find(name);
  if (it == by_name.end()) return std::nullopt;
  return it->second;
}

}  // namespace fx
