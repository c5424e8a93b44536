// Internal to kernels/codegen: the pieces every kernel template shares: C types per dtype, conversions,
// literals, the expression of each elementwise op, identifiers, and the device helper preamble.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"
#include "kernels/codegen/identifiers.h"

namespace fx::gpu::codegen {

// Registers hold f16/bf16 values as float (rounded to the dtype after every op, exactly as the unfused
// plan's stores round them), integers as int/long long, bool as bool.
std::string compute_type(DType t);
// Memory holds f16/bf16 as their 16-bit patterns and bool as one byte.
std::string storage_type(DType t);
std::string from_storage(DType t, const std::string& raw);
std::string to_storage(DType t, const std::string& value);
std::string round_to(DType t, const std::string& expr);
std::string literal(double value, DType t);
// A scalar operand of `node` as a literal of the type it combines with: a comparison's scalar takes its tensor
// operand's dtype (gt(x, 0.5) compares with 0.5f, not with the result type bool).
std::string scalar_operand(const Graph& g, const Node& node, double value);
std::string number(std::int64_t v);

// The expression computing an elementwise node from its operands' expressions (already in compute types).
// `flat_index` is the node's own element index (dropout keys its random stream by it).
std::string elementwise_expr(const Graph& g, const Node& node, const std::vector<std::string>& args,
                             const std::string& flat_index);

// How a statistic reduction (sum, mean, max, min) accumulates in a generated kernel, for the row and chained
// reduction templates: sum and mean add (mean divides afterwards), max and min combine with fx_max / fx_min.
struct StatisticAccumulator {
  std::string type;       // "float" or "long long": the accumulator's C type for the node's dtype
  std::string identity;   // its start value
  std::string combiner;   // "sum", "max" or "min": fx_<combiner> and fx_<combiner>_op in the device preamble
  bool additive = false;  // accumulated with +=, else with acc = fx_<combiner>(acc, value)
};
// Throws std::logic_error for a node that is not a statistic reduction.
StatisticAccumulator statistic_accumulator(const Node& node);

// One line per node for comments: "y = relu(add)   f32[8192, 8192]".
std::string describe_node(const Graph& g, NodeId n);

// Device helpers every generated kernel includes: conversions, math, Philox, block reductions.
const std::string& device_preamble();

// Broadcast offset of a tensor of shape `s` read at the element with coordinates `coords` of shape `d`
// (numpy alignment: trailing dims). Coordinates are C expressions; broadcast dims contribute nothing.
std::string broadcast_offset(const Shape& s, const Shape& d, const std::vector<std::string>& coords);
// C expressions for the coordinates of flat element `flat` of shape `d`.
std::vector<std::string> coords_of(const Shape& d, const std::string& flat);
// The flat index of coordinates in shape d.
std::string flat_of(const Shape& d, const std::vector<std::string>& coords);

// A text buffer with indentation. Lines are written straight into one string: a kernel of 200,000 operands
// (37 MB of source) is built without a temporary per line or a copy per stage.
class Code {
 public:
  explicit Code(int depth = 0) : depth_(depth) {}
  // One line made of `parts` (strings, string views, literals) at the current indentation; an empty line has none.
  template <class... Parts>
  Code& line(const Parts&... parts) {
    if ((std::string_view(parts).empty() && ...)) {
      out_ += '\n';
      return *this;
    }
    out_.append(static_cast<std::size_t>(depth_) * 2, ' ');
    (out_.append(std::string_view(parts)), ...);
    out_ += '\n';
    return *this;
  }
  int depth() const { return depth_; }
  void indent() { depth_ += 1; }
  void dedent() { depth_ -= 1; }
  const std::string& str() const { return out_; }
  void append(const Code& other) { out_ += other.out_; }
  void append_text(std::string_view text) { out_ += text; }
  void reserve(std::size_t more) { out_.reserve(out_.size() + more); }
  std::string take() && { return std::move(out_); }

 private:
  std::string out_;
  int depth_ = 0;
};

// A kernel's translation unit, to be continued with the kernel: the device preamble and an empty line, with
// room for `kernel_bytes` more (a kernel's text then lands in its source without a copy).
Code translation_unit(std::size_t kernel_bytes = 0);

}  // namespace fx::gpu::codegen
