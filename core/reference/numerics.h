// Bit-exact CPU versions of what the generated kernels do to numbers: Philox draws for dropout (the same
// variant and keying as kernels/codegen/preamble.cpp), the dropout keep threshold, and rounding to f16/bf16.
// Both the code generator and the float64 reference use these, so both plans and the reference draw the
// same dropout mask.
#pragma once

#include <cstdint>

#include "core/graph/dtype.h"

namespace fx {

// Philox4x32-10 keyed by (seed low, seed high) with counter (index low, index high, 0, 0); the top 24 bits
// of the first output word.
std::uint32_t philox_bits24(std::uint64_t seed, std::uint64_t index);

// dropout keeps an element when its 24-bit draw is >= this threshold, ceil(p * 2^24): an integer, so
// every implementation agrees on the mask exactly.
std::uint32_t dropout_threshold(double p);

// v rounded to the dtype as a store would: f16/bf16 to nearest even (overflow to infinity, subnormals kept),
// f32 to nearest float, integers truncated toward zero, bool to 0/1.
double round_to_dtype(double v, DType t);

}  // namespace fx
