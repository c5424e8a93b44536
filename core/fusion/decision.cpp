#include "core/fusion/decision.h"

#include <array>

namespace fx {
namespace {

constexpr std::array<std::pair<Reason, std::string_view>, 20> kCodes{{
    {Reason::fusible, "FUSIBLE"},
    {Reason::cycle, "CYCLE"},
    {Reason::opaque_op, "OPAQUE_OP"},
    {Reason::random_op, "RANDOM_OP"},
    {Reason::two_contractions, "TWO_CONTRACTIONS"},
    {Reason::contraction_prologue, "CONTRACTION_PROLOGUE"},
    {Reason::layout_epilogue, "LAYOUT_EPILOGUE"},
    {Reason::epilogue_not_expressible, "EPILOGUE_NOT_EXPRESSIBLE"},
    {Reason::reduction_axis, "REDUCTION_AXIS"},
    {Reason::reduction_followed_by_reduction, "REDUCTION_FOLLOWED_BY_REDUCTION"},
    {Reason::shape_mismatch, "SHAPE_MISMATCH"},
    {Reason::output_needed_elsewhere, "OUTPUT_NEEDED_ELSEWHERE"},
    {Reason::register_pressure, "REGISTER_PRESSURE"},
    {Reason::max_fusion_size, "MAX_FUSION_SIZE"},
    {Reason::not_profitable, "NOT_PROFITABLE"},
    {Reason::user_rejected, "USER_REJECTED"},
    {Reason::kind_disabled, "KIND_DISABLED"},
    {Reason::already_fused, "ALREADY_FUSED"},
    {Reason::not_related, "NOT_RELATED"},
    {Reason::attention_unsupported, "ATTENTION_UNSUPPORTED"},
}};

}  // namespace

std::string_view to_string(Reason r) {
  for (const auto& [code, name] : kCodes) {
    if (code == r) return name;
  }
  return "?";
}

std::optional<Reason> parse_reason(std::string_view code) {
  for (const auto& [r, name] : kCodes) {
    if (name == code) return r;
  }
  return std::nullopt;
}

}  // namespace fx
