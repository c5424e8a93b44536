#include "kernels/executor/step_identity.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/executor/contraction_step.h"
#include "kernels/tuning/tuning_keys.h"

namespace fx::gpu {
namespace {

bool identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// A graph name as the generator spells it in identifiers: '_' for each character C does not allow.
std::string identifier_of(const std::string& name) {
  std::string out = name;
  for (char& c : out) c = identifier_char(c) ? c : '_';
  return out;
}

// Whether `name` may be replaced at [at, at + name.size()) of identifier `token`. A name of one or two characters
// ("x") only between '_' or the token's ends ("in_x", "x_v"), so that it does not eat into other identifiers.
bool replaceable(std::string_view token, std::size_t at, const std::string& name) {
  if (name.size() > 2) return true;
  const std::size_t end = at + name.size();
  return (at == 0 || token[at - 1] == '_') && (end == token.size() || token[end] == '_');
}

// One identifier with every occurrence of the names replaced by "@i", i the name's role; `names` longest first.
std::string canonical_token(std::string_view token, const std::vector<std::pair<std::string, int>>& names) {
  std::string out;
  for (std::size_t at = 0; at < token.size();) {
    bool replaced = false;
    for (const auto& [name, role] : names) {
      if (token.compare(at, name.size(), name) == 0 && replaceable(token, at, name)) {
        out += "@" + std::to_string(role);
        at += name.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += token[at++];
  }
  return out;
}

// `source` with the graph's names in its identifiers (and comments) replaced by their roles: kernels generated
// alike for different groups differ only in the names they were written with (the entry point's, the values'),
// which change nothing they do. `names` in the order of their roles (entry point, inputs, outputs, nodes).
std::string canonical_source(const std::string& source, const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, int>> roles;
  for (const std::string& n : names) {
    const std::string id = identifier_of(n);
    const bool seen = std::any_of(roles.begin(), roles.end(), [&](const auto& r) { return r.first == id; });
    if (!id.empty() && !seen) roles.emplace_back(id, static_cast<int>(roles.size()));
  }
  std::stable_sort(roles.begin(), roles.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string out;
  for (std::size_t at = 0; at < source.size();) {
    std::size_t end = at;
    while (end < source.size() && identifier_char(source[end])) ++end;
    if (end == at) {
      out += source[at++];
      continue;
    }
    const std::string_view token(source.data() + at, end - at);
    out += token.front() >= '0' && token.front() <= '9' ? std::string(token) : canonical_token(token, roles);
    at = end;
  }
  return out;
}

std::optional<std::string> kernel_identity(const std::string& source, const std::vector<std::string>& names, int block,
                                           std::int64_t grid, bool channels_last) {
  if (source.empty()) return std::nullopt;
  return "generated; block " + std::to_string(block) + " grid " + std::to_string(grid) +
         (channels_last ? "; NHWC buffers" : "") + "; source\n" + canonical_source(source, names);
}

// The names a step's generated kernel was written with, in the order of their roles.
std::vector<std::string> names_of(const GeneratedKernel& k, const Graph& g) {
  std::vector<std::string> names = {k.name};
  for (ValueId v : k.inputs) names.push_back(g.value_name(v));
  for (ValueId v : k.outputs) names.push_back(g.value_name(v));
  for (NodeId n : k.nodes) names.push_back(g.node(n).name);
  return names;
}

// The alignment a library may assume of a pointer: its largest power-of-two divisor, capped at 256 bytes.
std::uint32_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t a = 1;
  while (a < 256 && address % (2 * a) == 0) a *= 2;
  return a;
}

}  // namespace

std::optional<std::string> generated_identity(const GeneratedKernel& kernel, bool channels_last,
                                              const std::vector<std::string>& names) {
  return kernel_identity(kernel.source, names.empty() ? std::vector<std::string>{kernel.name} : names, kernel.block,
                         kernel.grid, channels_last);
}

std::string LibraryStep::measurement_identity(const PlanBuffers& b, CallPart part) const {
  if (part == CallPart::to_nhwc || part == CallPart::to_nchw) return {};
  if (is_gemm()) {
    if (!runtime_->matmul) return {};
    const MatmulProblem p = gemm_problem(b);
    const GemmOperands o = gemm_operands(b);
    std::string align;
    for (const void* ptr : {o.a, o.b, o.epilogue.bias, o.epilogue.residual, static_cast<const void*>(o.c)}) {
      align += " " + (ptr ? std::to_string(alignment_of(ptr)) : std::string("-"));
    }
    return "cuBLASLt; " + matmul_problem_text(p) + "; align" + align + "; " + runtime_->matmul->algorithm_choice(p);
  }
  if (call_.kind == LibraryCallKind::conv2d && runtime_->conv) {
    const bool nhwc = part == CallPart::conv_nhwc;
    const Conv2dProblem& p = nhwc ? nhwc_problem_ : call_.conv;
    const std::string algorithm = runtime_->conv->algorithm(p);
    if (algorithm.empty()) return {};
    return "cuDNN; " + conv_problem_text(p) + (nhwc && plan_buffers_ ? "; plan NHWC buffers" : "") +
           "; algorithm " + algorithm;
  }
  return {};  // attention, matmul graphs: their engine's choice is not established per problem here
}

std::optional<std::string> measurement_identity(const Step& st, const PlanBuffers& b) {
  if (const GeneratedLaunch* g = st.generated()) {
    // A buffer's offset within a 32-byte sector changes how many sectors an access touches.
    std::optional<std::string> id = generated_identity(st.kernel, g->channels_last, names_of(st.kernel, b.graph));
    if (!id) return id;
    std::string align;
    for (const void* p : g->pointers(st, b)) align += " " + std::to_string(alignment_of(p));
    return "align" + align + "; " + *id;
  }
  if (const ConversionLaunch* c = st.conversion()) {
    if (!st.kernel.source.empty()) return generated_identity(st.kernel, false, names_of(st.kernel, b.graph));
    if (!c->owner) return std::nullopt;
    const GeneratedKernel& k = c->owner->conversion(c->conversion.to_nhwc ? CallPart::to_nhwc : CallPart::to_nchw);
    return kernel_identity(k.source, {k.name}, st.kernel.block, st.kernel.grid, false);
  }
  if (const LibraryLaunch* l = st.library()) {
    if (l->is_conversion()) return generated_identity(l->call->conversion(l->part), false);
    std::string id = l->call->measurement_identity(b, l->part);
    if (id.empty()) return std::nullopt;
    return id;
  }
  return std::nullopt;  // a sort: its traffic may depend on the keys
}

}  // namespace fx::gpu
