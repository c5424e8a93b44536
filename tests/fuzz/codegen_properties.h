// What must hold for code generation over any graph that loads: every group of the unfused plan, of the plan
// auto-fuse makes and of a fused file's own plan generates code or is refused with a message, and the source
// is well formed for NVRTC in the ways a graph file could break it (names only ever reach comments; literals
// are constants, never "inf"; no comment line ends in a backslash, which would splice the next line into it).
// Shared by tests/fuzz/fuzz_codegen.cpp and the replay test tests/kernels/test_codegen_fuzz_regressions.cpp.
#pragma once

#include <optional>
#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/cost/device_description.h"
#include "core/fusion/engine.h"
#include "core/fusion/kernel_names.h"
#include "core/graph/graph_io.h"
#include "kernels/codegen/codegen.h"

namespace fx::fuzz {

// The source with // comments and string literals removed; nullopt after setting `why` if a comment line ends
// in a backslash.
inline std::optional<std::string> code_without_comments(const std::string& source, std::string& why) {
  std::string code;
  std::size_t i = 0;
  while (i < source.size()) {
    if (source.compare(i, 2, "//") == 0) {
      const std::size_t end = source.find('\n', i);
      const std::size_t last = (end == std::string::npos ? source.size() : end) - 1;
      if (source[last] == '\\') {
        why = "a comment line ends in a backslash: " + source.substr(i, last + 1 - i);
        return std::nullopt;
      }
      i = end == std::string::npos ? source.size() : end;
    } else if (source[i] == '"') {
      const std::size_t end = source.find('"', i + 1);
      i = end == std::string::npos ? source.size() : end + 1;
    } else {
      code += source[i++];
    }
  }
  return code;
}

inline bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `code` has one of `words` as a whole word. A hand scan: std::regex over a whole generated source took
// longer than the fuzzer's per-input limit under the sanitizers.
inline bool has_word(const std::string& code, std::initializer_list<std::string_view> words) {
  for (std::size_t i = 0; i < code.size();) {
    if (!word_char(code[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < code.size() && word_char(code[j])) ++j;
    const std::string_view w(code.data() + i, j - i);
    for (std::string_view x : words)
      if (w == x) return true;
    i = j;
  }
  return false;
}

inline std::optional<std::string> check_kernel_source(const std::string& name, const std::string& source) {
  const bool identifier = !name.empty() && std::isalpha(static_cast<unsigned char>(name[0])) &&
                          std::all_of(name.begin(), name.end(), word_char);
  if (!identifier) return "kernel name '" + name + "' is not a C identifier";
  std::string why;
  auto code = code_without_comments(source, why);
  if (!code) return name + ": " + why;
  int braces = 0, parens = 0;
  for (char c : *code) {
    if (static_cast<unsigned char>(c) >= 0x80) return name + ": a non-ASCII byte outside comments";
    braces += (c == '{') - (c == '}');
    parens += (c == '(') - (c == ')');
    if (braces < 0 || parens < 0) return name + ": a closing bracket without its opening one";
  }
  if (braces != 0 || parens != 0) return name + ": unbalanced brackets";
  if (has_word(*code, {"inf", "nan", "INF", "NAN"})) return name + ": a non-finite constant written as a word";
  return std::nullopt;
}

// Generates every group of `plan` (with the plan's own outputs, so recomputed producers are included).
inline std::optional<std::string> check_plan_codegen(const Graph& g, const Plan& plan, const char* which) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < plan.groups().size(); ++i) {
    const Group& grp = plan.groups()[i];
    if (!gpu::unsupported_reason(g, grp.nodes).empty()) continue;  // library calls and custom ops
    std::vector<NodeId> nodes = grp.nodes;
    nodes.insert(nodes.end(), grp.recomputed.begin(), grp.recomputed.end());
    gpu::GroupCode code;
    try {
      code = gpu::generate_group(g, nodes, grp.io.outputs, generated_kernel_name(plan, static_cast<int>(i)));
    } catch (const std::invalid_argument& e) {
      if (std::string_view(e.what()).empty()) return std::string(which) + ": " + grp.id + " refused without a message";
      continue;
    }
    for (const gpu::GeneratedKernel& k : code.kernels) {
      if (!names.insert(k.name).second) return std::string(which) + ": two kernels named " + k.name;
      if (auto bad = check_kernel_source(k.name, k.source)) return std::string(which) + ": " + *bad;
      for (const gpu::KernelLayout& alt : k.alternatives) {
        if (auto bad = check_kernel_source(k.name, alt.source)) return std::string(which) + " (alternative): " + *bad;
      }
    }
  }
  return std::nullopt;
}

// For a graph or fused-graph document that loads: the unfused plan, the file's plan and auto-fuse's plan.
inline std::optional<std::string> check_codegen_document(std::string_view text) {
  auto engine = FusionEngine::load_fused_graph(text, DeviceDescription::h100_sxm());
  if (!engine) return std::nullopt;  // loading is the other targets' business
  const Graph& g = engine->graph();
  if (auto bad = check_plan_codegen(g, Plan::unfused(g, engine->cost_model()), "unfused")) return bad;
  if (auto bad = check_plan_codegen(g, engine->plan(), "as loaded")) return bad;
  engine->auto_fuse();
  return check_plan_codegen(g, engine->plan(), "auto-fused");
}

}  // namespace fx::fuzz
