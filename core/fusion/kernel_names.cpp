#include "core/fusion/kernel_names.h"

#include <algorithm>
#include <cctype>

#include "core/fusion/attention.h"
#include "core/fusion/library_epilogue.h"

namespace fx {

std::string c_identifier(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char ch : name) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

std::string kernel_stem(const Plan& plan, int group_index) {
  const auto& groups = plan.groups();
  const std::string stem = c_identifier(groups.at(static_cast<std::size_t>(group_index)).id);
  for (int i = 0; i < group_index; ++i) {
    if (c_identifier(groups[static_cast<std::size_t>(i)].id) == stem) return stem + "_" + std::to_string(group_index);
  }
  return stem;
}

std::string generated_kernel_name(const Plan& plan, int group_index) { return "fx_" + kernel_stem(plan, group_index); }

std::string group_kernel_name(const Graph& g, const Plan& plan, int group_index) {
  const Group& group = plan.groups().at(static_cast<std::size_t>(group_index));
  if (!group.launched()) return {};
  if (const auto chain = attention_group(g, group.nodes)) {  // one fused attention kernel
    return attention_kernel_prefix(attention_kernel(*chain)) + kernel_stem(plan, group_index);
  }
  for (NodeId n : group.nodes) {
    const OpId op = g.node(n).op_id();
    if (op == OpId::sort || op == OpId::topk) return "cub_" + kernel_stem(plan, group_index);
    if (g.node(n).op_class() != OpClass::contraction) continue;
    // A group's one matmul with a tail only cuDNN's matmul graph takes runs there (library_epilogue).
    const auto contractions = std::count_if(group.nodes.begin(), group.nodes.end(), [&](NodeId m) {
      return g.node(m).op_class() == OpClass::contraction;
    });
    const bool cudnn =
        op == OpId::conv2d || (contractions == 1 && library_epilogue(g, group.nodes, n).library == "cuDNN");
    return (cudnn ? "cudnn_" : "cublaslt_") + kernel_stem(plan, group_index);
  }
  return generated_kernel_name(plan, group_index);
}

}  // namespace fx
