#include "kernels/verify/output_check.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "kernels/common/cuda_call.h"

namespace fx::gpu {

namespace {

double bf16_to_double(std::uint16_t h) {
  std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double f16_to_double(std::uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(mant, -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(mant + 1024, exp - 25);
  }
  return sign ? -v : v;
}

OutputCheck compare(const std::string& name, DType t, const std::vector<double>& fused, const std::vector<double>& unfused) {
  OutputCheck c;
  c.name = name;
  c.dtype = std::string(dtype_name(t));
  c.threshold = tolerance_for(t);
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < fused.size(); ++i) {
    if (std::isnan(fused[i]) || std::isnan(unfused[i])) {
      ++c.nan_count;
      continue;
    }
    const double d = fused[i] - unfused[i];
    diff += d * d;
    norm += unfused[i] * unfused[i];
  }
  c.rel_error = norm > 0 ? std::sqrt(diff / norm) : (diff > 0 ? INFINITY : 0.0);
  c.passed = c.nan_count == 0 && c.rel_error <= c.threshold;
  return c;
}

}  // namespace

std::vector<char> download(const void* ptr, std::int64_t bytes) {
  std::vector<char> host(static_cast<std::size_t>(bytes));
  FX_CUDA_CALL(cudaMemcpy(host.data(), ptr, host.size(), cudaMemcpyDeviceToHost));
  return host;
}

std::vector<double> to_doubles(DType t, const std::vector<char>& raw) {
  const std::size_t n = raw.size() / static_cast<std::size_t>(dtype_size(t));
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const char* p = raw.data() + i * static_cast<std::size_t>(dtype_size(t));
    switch (t) {
      case DType::f32: { float f; std::memcpy(&f, p, 4); out[i] = f; break; }
      case DType::f16: { std::uint16_t h; std::memcpy(&h, p, 2); out[i] = f16_to_double(h); break; }
      case DType::bf16: { std::uint16_t h; std::memcpy(&h, p, 2); out[i] = bf16_to_double(h); break; }
      case DType::i32: { std::int32_t v; std::memcpy(&v, p, 4); out[i] = v; break; }
      case DType::i64: { std::int64_t v; std::memcpy(&v, p, 8); out[i] = static_cast<double>(v); break; }
      case DType::boolean: out[i] = *p ? 1.0 : 0.0; break;
    }
  }
  return out;
}

std::string write_npy(const std::string& path, DType t, const Shape& shape, const std::vector<char>& raw) {
  std::string descr;
  switch (t) {
    case DType::f32: descr = "<f4"; break;
    case DType::f16: descr = "<f2"; break;
    case DType::bf16: descr = "<u2"; break;  // numpy has no bfloat16: the bit patterns
    case DType::i32: descr = "<i4"; break;
    case DType::i64: descr = "<i8"; break;
    case DType::boolean: descr = "|b1"; break;
  }
  std::string dims;
  for (auto d : shape) dims += std::to_string(d) + ",";
  if (shape.size() > 1) dims.pop_back();
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  const std::size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  const unsigned char magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(reinterpret_cast<const char*>(magic), 8);
  const auto len = static_cast<std::uint16_t>(header.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(raw.data(), static_cast<std::streamsize>(raw.size()));
  return descr;
}

void dump_values(CompiledProgram& im, const std::string& dir) {
  namespace fs = std::filesystem;
  const Graph& g = im.graph;
  nlohmann::ordered_json manifest = {{"graph", g.name()}, {"seed", im.options.seed}};
  auto entry = [&](const std::string& sub, ValueId v, PlanId plan) {
    fs::create_directories(fs::path(dir) / sub);
    const std::string file = sub + "/" + g.value_name(v) + ".npy";
    const auto& t = g.value_type(v);
    const std::string descr = write_npy((fs::path(dir) / file).string(), t.dtype, t.shape, download(im.pointer(plan, v), t.bytes()));
    return nlohmann::ordered_json{{"name", g.value_name(v)}, {"file", file}, {"dtype", dtype_name(t.dtype)},
                                  {"npy_descr", descr}, {"shape", t.shape}};
  };
  for (ValueId v = 0; v < static_cast<ValueId>(g.inputs().size()); ++v) manifest["inputs"].push_back(entry("inputs", v, PlanId::unfused));
  for (ValueId v : g.outputs()) {
    manifest["unfused"].push_back(entry("unfused", v, PlanId::unfused));
    manifest["fused"].push_back(entry("fused", v, PlanId::fused));
  }
  std::ofstream(fs::path(dir) / "manifest.json") << manifest.dump(2) << "\n";
}

std::vector<OutputCheck> verify_outputs(CompiledProgram& im) {
  std::vector<OutputCheck> checks;
  for (ValueId v : im.graph.outputs()) {
    const auto& t = im.graph.value_type(v);
    auto unfused = to_doubles(t.dtype, download(im.pointer(PlanId::unfused, v), t.bytes()));
    auto fused = to_doubles(t.dtype, download(im.pointer(PlanId::fused, v), t.bytes()));
    checks.push_back(compare(im.graph.value_name(v), t.dtype, fused, unfused));
    if (auto it = im.tolerances.find(v); it != im.tolerances.end()) {  // TF32 contractions upstream
      OutputCheck& c = checks.back();
      c.threshold = it->second;
      c.passed = c.nan_count == 0 && c.rel_error <= c.threshold;
    }
  }
  return checks;
}
}  // namespace fx::gpu
