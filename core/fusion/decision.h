// A verdict on a fusion: fuse or not, with a stable reason code the UI can group and filter by, a message
// for people, and the numbers behind it. No check in the engine returns a bare bool.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace fx {

enum class Reason : std::uint8_t {
  fusible,                          // legal and profitable
  cycle,                            // CYCLE: fusing would create a cycle (the message names the path)
  opaque_op,                        // OPAQUE_OP: sort, topk, max_pool2d, custom never fuse
  random_op,                        // RANDOM_OP: random generation cannot fuse here
  two_contractions,                 // TWO_CONTRACTIONS
  contraction_prologue,             // CONTRACTION_PROLOGUE: work before a matmul's operand
  layout_epilogue,                  // LAYOUT_EPILOGUE: transpose/reshape after a contraction
  epilogue_not_expressible,         // EPILOGUE_NOT_EXPRESSIBLE: no library epilogue applies this op
  reduction_axis,                   // REDUCTION_AXIS: the reduced axis crosses the tile the consumer needs
  reduction_followed_by_reduction,  // REDUCTION_FOLLOWED_BY_REDUCTION
  shape_mismatch,                   // SHAPE_MISMATCH: iteration spaces differ and do not broadcast
  output_needed_elsewhere,          // OUTPUT_NEEDED_ELSEWHERE: fused, but the intermediate is still written
  register_pressure,                // REGISTER_PRESSURE
  max_fusion_size,                  // MAX_FUSION_SIZE
  not_profitable,                   // NOT_PROFITABLE: predicted fused time >= unfused
  user_rejected,                    // USER_REJECTED
  kind_disabled,                    // KIND_DISABLED
  already_fused,                    // ALREADY_FUSED: both nodes are in one group
  not_related,                      // NOT_RELATED: no edge and no shared input between the two groups
  attention_unsupported,            // ATTENTION_UNSUPPORTED: an attention chain no fused attention kernel runs
};

// "CYCLE", "OPAQUE_OP", ... ("FUSIBLE" for Reason::fusible).
std::string_view to_string(Reason r);
std::optional<Reason> parse_reason(std::string_view code);

struct FusionDecision {
  bool fuse = false;
  Reason reason = Reason::fusible;  // with fuse == true: fusible, or output_needed_elsewhere as a caveat
  std::string message;              // one line for people
  std::map<std::string, double> numbers;  // e.g. "unfused_us", "fused_us", "saved_us", "live_values"

  static FusionDecision yes(std::string message) { return {true, Reason::fusible, std::move(message), {}}; }
  static FusionDecision no(Reason r, std::string message) { return {false, r, std::move(message), {}}; }
  FusionDecision& with(const std::string& key, double value) {
    numbers[key] = value;
    return *this;
  }
};

}  // namespace fx
