// Operator attributes: a small typed map, checked against each op's schema when a graph is built.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace fx {

using AttrValue = std::variant<std::int64_t, double, std::vector<std::int64_t>, std::string, bool>;

class Attrs {
 public:
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void set(const std::string& name, AttrValue value) { values_[name] = std::move(value); }
  const AttrValue* find(const std::string& name) const;

  // Typed reads of attributes already checked against the op's schema (defaults filled in).
  std::int64_t get_int(const std::string& name) const;
  double get_number(const std::string& name) const;
  std::vector<std::int64_t> get_ints(const std::string& name) const;  // a single int reads as a list of one
  // An int or [h, w] attribute (conv2d's and max_pool2d's windows) as (h, w); one value serves both.
  std::pair<std::int64_t, std::int64_t> get_int_pair(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  bool get_bool(const std::string& name) const;

  const std::map<std::string, AttrValue>& values() const { return values_; }
  bool operator==(const Attrs&) const = default;

 private:
  std::map<std::string, AttrValue> values_;
};

std::string attr_value_to_string(const AttrValue& value);

}  // namespace fx
