#include "core/lesson/lesson.h"

#include <array>
#include <utility>

#include <nlohmann/json.hpp>

namespace fx {
namespace {

using json = nlohmann::json;

constexpr std::array<std::pair<StepKind, std::string_view>, 5> kKinds{{{StepKind::explain, "explain"},
                                                                       {StepKind::predict, "predict"},
                                                                       {StepKind::act, "act"},
                                                                       {StepKind::run, "run"},
                                                                       {StepKind::reflect, "reflect"}}};
constexpr std::array<std::pair<Quantity, std::string_view>, 7> kQuantities{{{Quantity::bytes_unfused, "bytes_unfused"},
                                                                            {Quantity::bytes_fused, "bytes_fused"},
                                                                            {Quantity::kernel_count, "kernel_count"},
                                                                            {Quantity::speedup, "speedup"},
                                                                            {Quantity::faster_plan, "faster_plan"},
                                                                            {Quantity::bound, "bound"},
                                                                            {Quantity::same_kernel, "same_kernel"}}};
constexpr std::array<std::pair<Action, std::string_view>, 2> kActions{{{Action::auto_fuse, "auto_fuse"},
                                                                       {Action::unfuse, "unfuse"}}};

template <typename E, std::size_t N>
std::optional<E> parse_name(const std::array<std::pair<E, std::string_view>, N>& names, std::string_view text) {
  for (const auto& [value, name] : names)
    if (name == text) return value;
  return std::nullopt;
}

template <typename E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& names, E value) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return "?";
}

// A required string member, or an error at pointer/key.
Expected<std::string> string_member(const json& j, const char* key, const std::string& pointer, bool required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) return Diagnostic{pointer, std::string("missing \"") + key + "\""};
    return std::string();
  }
  if (!it->is_string() || (required && it->get<std::string>().empty()))
    return Diagnostic{pointer + "/" + key, std::string("\"") + key + "\" must be a non-empty string"};
  return it->get<std::string>();
}

// How many nodes a question names: bound one, same_kernel two, bytes_* any number, the rest none.
Diagnostics check_question(const LessonStep& s, const std::string& pointer) {
  const std::size_t n = s.nodes.size();
  switch (*s.quantity) {
    case Quantity::bound:
      if (n != 1) return {{pointer + "/nodes", "\"bound\" asks about exactly one node"}};
      break;
    case Quantity::same_kernel:
      if (n != 2) return {{pointer + "/nodes", "\"same_kernel\" asks about exactly two nodes"}};
      break;
    case Quantity::bytes_unfused:
    case Quantity::bytes_fused: break;
    default:
      if (n != 0) return {{pointer + "/nodes", "this question is about the whole graph: it names no nodes"}};
  }
  return {};
}

Diagnostics read_step_details(const json& j, const std::string& pointer, LessonStep& s) {
  if (auto it = j.find("nodes"); it != j.end()) {
    if (!it->is_array()) return {{pointer + "/nodes", "\"nodes\" must be a list of node names"}};
    for (const json& n : *it) {
      if (!n.is_string()) return {{pointer + "/nodes", "\"nodes\" must be a list of node names"}};
      s.nodes.push_back(n.get<std::string>());
    }
  }
  if (s.kind == StepKind::predict) {
    auto q = string_member(j, "quantity", pointer, true);
    if (!q) return q.errors();
    s.quantity = parse_name(kQuantities, *q);
    if (!s.quantity) return {{pointer + "/quantity", "unknown quantity \"" + *q + "\""}};
    return check_question(s, pointer);
  }
  if (s.kind == StepKind::act) {
    auto a = string_member(j, "action", pointer, true);
    if (!a) return a.errors();
    s.action = parse_name(kActions, *a);
    if (!s.action) return {{pointer + "/action", "unknown action \"" + *a + "\" (auto_fuse or unfuse)"}};
  }
  return {};
}

Expected<LessonStep> read_step(const json& j, const std::string& pointer) {
  if (!j.is_object()) return Diagnostic{pointer, "a step must be an object"};
  auto kind = string_member(j, "kind", pointer, true);
  if (!kind) return kind.errors();
  LessonStep s;
  auto k = parse_name(kKinds, *kind);
  if (!k) return Diagnostic{pointer + "/kind", "unknown step kind \"" + *kind + "\""};
  s.kind = *k;
  auto title = string_member(j, "title", pointer, true);
  auto text = string_member(j, "text", pointer, true);
  if (!title) return title.errors();
  if (!text) return text.errors();
  s.title = *title;
  s.text = *text;
  if (Diagnostics d = read_step_details(j, pointer, s); !d.empty()) return d;
  return s;
}

Diagnostics read_header(const json& root, Lesson& out) {
  if (!root.contains("format") || root["format"] != kLessonFormat)
    return {{"/format", std::string("not a lesson: the format must be \"") + kLessonFormat + "\""}};
  if (!root.contains("version") || root["version"] != kLessonVersion)
    return {{"/version", "this reader knows lesson version " + std::to_string(kLessonVersion)}};
  for (auto [key, field] : {std::pair{"title", &out.title}, std::pair{"graph", &out.graph}}) {
    auto v = string_member(root, key, "", true);
    if (!v) return v.errors();
    *field = *v;
  }
  for (auto [key, field] : {std::pair{"summary", &out.summary}, std::pair{"device", &out.device}}) {
    auto v = string_member(root, key, "", false);
    if (!v) return v.errors();
    *field = *v;
  }
  if (auto it = root.find("minutes"); it != root.end()) {
    if (!it->is_number_integer() || it->get<int>() <= 0) return {{"/minutes", "\"minutes\" must be a whole number > 0"}};
    out.minutes = it->get<int>();
  }
  return {};
}

Diagnostics read_bundled_run(const json& root, Lesson& out) {
  auto it = root.find("run_report");
  if (it == root.end()) return {};
  if (!it->is_object()) return {{"/run_report", "\"run_report\" must be an object with file and measured_on"}};
  auto file = string_member(*it, "file", "/run_report", true);
  auto date = string_member(*it, "measured_on", "/run_report", true);
  if (!file) return file.errors();
  if (!date) return date.errors();
  if (date->size() != 10 || (*date)[4] != '-' || (*date)[7] != '-')
    return {{"/run_report/measured_on", "\"measured_on\" is a date, YYYY-MM-DD"}};
  out.run = BundledRun{*file, *date};
  return {};
}

}  // namespace

std::string_view to_string(StepKind k) { return name_of(kKinds, k); }
std::string_view to_string(Quantity q) { return name_of(kQuantities, q); }
bool is_choice(Quantity q) {
  return q == Quantity::faster_plan || q == Quantity::bound || q == Quantity::same_kernel;
}

Expected<Lesson> read_lesson(std::string_view json_text, std::string id) {
  json root = json::parse(json_text, nullptr, false);
  if (root.is_discarded() || !root.is_object()) return Diagnostic{"", "a lesson is a JSON object"};
  Lesson out;
  out.id = std::move(id);
  if (Diagnostics d = read_header(root, out); !d.empty()) return d;
  if (Diagnostics d = read_bundled_run(root, out); !d.empty()) return d;
  auto steps = root.find("steps");
  if (steps == root.end() || !steps->is_array() || steps->empty())
    return Diagnostic{"/steps", "a lesson needs a list of steps"};
  for (std::size_t i = 0; i < steps->size(); ++i) {
    auto step = read_step((*steps)[i], "/steps/" + std::to_string(i));
    if (!step) return step.errors();
    out.steps.push_back(std::move(*step));
  }
  return out;
}

}  // namespace fx
