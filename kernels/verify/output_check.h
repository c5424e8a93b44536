// Internal to the executor's run: both plans' outputs checked against each other (the verification), and the
// .npy dump of inputs and outputs.
#pragma once

#include <string>
#include <vector>

#include "kernels/executor/executor_internal.h"

namespace fx::gpu {

// Host copies of one value, converted to double (f16/bf16 decoded, bool as 0/1).
std::vector<double> to_doubles(DType t, const std::vector<char>& raw);
// Writes a .npy file (bf16 as its 16-bit patterns, '<u2'); returns the numpy descr written.
std::string write_npy(const std::string& path, DType t, const Shape& shape, const std::vector<char>& raw);
// A device buffer copied to the host (synchronous).
std::vector<char> download(const void* ptr, std::int64_t bytes);
// After both plans ran once: every graph output of the fused plan against the unfused plan's, at its dtype's
// tolerance or looser where TF32 contractions feed it (CompiledProgram::tolerances).
std::vector<OutputCheck> verify_outputs(CompiledProgram& im);
// DIR/inputs/*.npy, DIR/unfused/*.npy, DIR/fused/*.npy and DIR/manifest.json (RunOptions::dump_dir).
void dump_values(CompiledProgram& im, const std::string& dir);

}  // namespace fx::gpu
