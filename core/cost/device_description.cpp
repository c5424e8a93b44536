#include "core/cost/device_description.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "core/graph/graph_io.h"
#include "core/graph/graph_json.h"

namespace fx {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr std::int64_t kMB = 1000 * 1000;
constexpr std::int64_t kMiB = 1 << 20;

// Kernel launch overhead is on no datasheet: ~3 us is the usual measured cost of a launch plus the gap
// between back-to-back dependent kernels on Hopper and Ampere with CUDA 12/13 (no CUDA graphs). A measured
// description from the executor replaces it.
constexpr double kLaunchOverheadS = 3e-6;
// 65,536 32-bit registers per SM on every NVIDIA architecture from Volta to Hopper and Ada (CUDA C
// Programming Guide, "Compute Capabilities" table).
constexpr int kRegistersPerSm = 65536;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

double DeviceDescription::peak_flops(DType dtype, bool tensor_cores) const {
  const bool half = dtype == DType::f16 || dtype == DType::bf16;
  if (tensor_cores) return half ? fp16_tensor_flops : tf32_tensor_flops;
  return half ? fp16_flops : fp32_flops;
}

DeviceDescription DeviceDescription::h100_sxm() {
  DeviceDescription d;
  d.name = "H100 SXM";
  // NVIDIA H100 Tensor Core GPU datasheet (SXM5 column): 3.35 TB/s HBM3, FP32 67 TFLOPS, TF32 989 TFLOPS
  // and BF16/FP16 1,979 TFLOPS *with sparsity*, so dense is half: 494.7 and 989.4.
  d.hbm_bandwidth = 3.35 * kTera;
  d.fp32_flops = 66.9 * kTera;
  // H100 whitepaper, table "NVIDIA H100 SXM5": peak FP16/BF16 (non-Tensor) 133.8 TFLOPS.
  d.fp16_flops = 133.8 * kTera;
  d.tf32_tensor_flops = 494.7 * kTera;
  d.fp16_tensor_flops = 989.4 * kTera;
  d.launch_overhead_s = kLaunchOverheadS;
  d.l2_bytes = 50 * kMiB;  // H100 whitepaper: 50 MB L2
  d.sm_count = 132;        // H100 SXM5: 132 SMs
  d.registers_per_sm = kRegistersPerSm;
  d.source = "NVIDIA H100 datasheet and H100 whitepaper (SXM5), dense tensor-core peaks";
  return d;
}

DeviceDescription DeviceDescription::h200() {
  // NVIDIA H200 datasheet: 4.8 TB/s HBM3e, 141 GB; compute identical to H100 SXM (same GH100 die, 132 SMs).
  DeviceDescription d = h100_sxm();
  d.name = "H200";
  d.hbm_bandwidth = 4.8 * kTera;
  d.source = "NVIDIA H200 datasheet (SXM), dense tensor-core peaks; compute as H100 SXM";
  return d;
}

DeviceDescription DeviceDescription::a100_80gb() {
  DeviceDescription d;
  d.name = "A100 80GB";
  // NVIDIA A100 datasheet (80GB SXM): 2,039 GB/s HBM2e; FP32 19.5 TFLOPS; TF32 156; BF16/FP16 312 (dense).
  d.hbm_bandwidth = 2039 * kGiga;
  d.fp32_flops = 19.5 * kTera;
  d.fp16_flops = 78 * kTera;  // A100 whitepaper: peak FP16 (non-Tensor) 78 TFLOPS
  d.tf32_tensor_flops = 156 * kTera;
  d.fp16_tensor_flops = 312 * kTera;
  d.launch_overhead_s = kLaunchOverheadS;
  d.l2_bytes = 40 * kMiB;  // A100 whitepaper: 40 MB L2
  d.sm_count = 108;
  d.registers_per_sm = kRegistersPerSm;
  d.source = "NVIDIA A100 datasheet (80GB SXM) and A100 whitepaper";
  return d;
}

DeviceDescription DeviceDescription::rtx_4090() {
  DeviceDescription d;
  d.name = "RTX 4090";
  // NVIDIA Ada Lovelace whitepaper, GeForce RTX 4090: 1,008 GB/s GDDR6X; FP32 82.6 TFLOPS; FP16 non-tensor
  // 82.6; tensor FP16/BF16 with FP32 accumulate 165.2 dense; TF32 82.6 dense; 128 SMs; 72 MB L2.
  d.hbm_bandwidth = 1008 * kGiga;
  d.fp32_flops = 82.6 * kTera;
  d.fp16_flops = 82.6 * kTera;
  d.tf32_tensor_flops = 82.6 * kTera;
  d.fp16_tensor_flops = 165.2 * kTera;
  d.launch_overhead_s = kLaunchOverheadS;
  d.l2_bytes = 72 * kMiB;
  d.sm_count = 128;
  d.registers_per_sm = kRegistersPerSm;
  d.source = "NVIDIA Ada Lovelace architecture whitepaper (GeForce RTX 4090), dense peaks";
  return d;
}

DeviceDescription DeviceDescription::l4() {
  DeviceDescription d;
  d.name = "L4";
  // NVIDIA L4 datasheet: 300 GB/s GDDR6; FP32 30.3 TFLOPS; TF32 120 and BF16/FP16 242 TFLOPS with sparsity,
  // so 60 and 121 dense. 58 SMs (AD104), 48 MB L2 (Ada whitepaper).
  d.hbm_bandwidth = 300 * kGiga;
  d.fp32_flops = 30.3 * kTera;
  d.fp16_flops = 30.3 * kTera;
  d.tf32_tensor_flops = 60 * kTera;
  d.fp16_tensor_flops = 121 * kTera;
  d.launch_overhead_s = kLaunchOverheadS;
  d.l2_bytes = 48 * kMiB;
  d.sm_count = 58;
  d.registers_per_sm = kRegistersPerSm;
  d.source = "NVIDIA L4 datasheet, dense peaks";
  return d;
}

std::vector<DeviceDescription> DeviceDescription::presets() {
  return {h100_sxm(), h200(), a100_80gb(), rtx_4090(), l4()};
}

std::optional<DeviceDescription> DeviceDescription::preset(std::string_view name) {
  const std::string key = lower(name);
  const std::pair<const char*, DeviceDescription (*)()> shorts[] = {
      {"h100", h100_sxm}, {"h200", h200}, {"a100", a100_80gb}, {"4090", rtx_4090}, {"rtx4090", rtx_4090}, {"l4", l4}};
  for (auto [k, make] : shorts) {
    if (key == k) return make();
  }
  for (DeviceDescription& d : presets()) {
    if (lower(d.name) == key) return d;
  }
  return std::nullopt;
}

std::string device_to_json(const DeviceDescription& d) {
  nlohmann::ordered_json j;
  j["format"] = "fusion-explorer/device";
  j["version"] = kDeviceFormatVersion;
  j["name"] = d.name;
  j["hbm_bandwidth_gbps"] = d.hbm_bandwidth / kGiga;
  j["fp32_tflops"] = d.fp32_flops / kTera;
  j["fp16_tflops"] = d.fp16_flops / kTera;
  j["tf32_tensor_tflops"] = d.tf32_tensor_flops / kTera;
  j["fp16_tensor_tflops"] = d.fp16_tensor_flops / kTera;
  j["launch_overhead_us"] = d.launch_overhead_s * 1e6;
  j["l2_mb"] = static_cast<double>(d.l2_bytes) / kMB;
  j["sm_count"] = d.sm_count;
  j["registers_per_sm"] = d.registers_per_sm;
  j["source"] = d.source;
  return dump_pretty(j);
}

Expected<DeviceDescription> device_from_json(std::string_view text) {
  auto parsed = parse_json_text(text);
  if (!parsed) return parsed.errors();
  const nlohmann::json& j = *parsed;
  if (!j.is_object()) return Diagnostic{"", "a device description must be a JSON object"};
  if (j.value("format", "") != "fusion-explorer/device") {
    return Diagnostic{"/format", "expected \"format\": \"fusion-explorer/device\""};
  }
  const auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() || version->get<std::int64_t>() != kDeviceFormatVersion) {
    return Diagnostic{"/version", (version == j.end() ? std::string("missing field \"version\"")
                                                      : "unsupported version " + version->dump()) +
                                      "; this program reads device descriptions of version " +
                                      std::to_string(kDeviceFormatVersion)};
  }
  DeviceDescription d;
  Diagnostics errors;
  auto number = [&](const char* key, double scale, double& out) {
    if (!j.contains(key) || !j[key].is_number() || j[key].get<double>() <= 0) {
      errors.push_back({std::string("/") + key, std::string(key) + " must be a positive number"});
      return;
    }
    out = j[key].get<double>() * scale;
  };
  if (!j.contains("name") || !j["name"].is_string()) errors.push_back({"/name", "name must be a string"});
  else d.name = j["name"].get<std::string>();
  number("hbm_bandwidth_gbps", kGiga, d.hbm_bandwidth);
  number("fp32_tflops", kTera, d.fp32_flops);
  number("fp16_tflops", kTera, d.fp16_flops);
  number("tf32_tensor_tflops", kTera, d.tf32_tensor_flops);
  number("fp16_tensor_tflops", kTera, d.fp16_tensor_flops);
  number("launch_overhead_us", 1e-6, d.launch_overhead_s);
  double l2 = 0, sms = 0, regs = 0;
  number("l2_mb", static_cast<double>(kMB), l2);
  number("sm_count", 1, sms);
  number("registers_per_sm", 1, regs);
  d.l2_bytes = static_cast<std::int64_t>(l2);
  d.sm_count = static_cast<int>(sms);
  d.registers_per_sm = static_cast<int>(regs);
  if (j.contains("source") && j["source"].is_string()) d.source = j["source"].get<std::string>();
  if (!errors.empty()) return errors;
  return d;
}

Expected<DeviceDescription> load_device_file(const std::filesystem::path& path) {
  auto text = read_text_file(path, 1 << 20);
  if (!text) return text.errors();
  return device_from_json(*text);
}

Expected<DeviceDescription> resolve_device(const std::string& name_or_file) {
  if (auto d = DeviceDescription::preset(name_or_file)) return *d;
  std::error_code ec;
  if (std::filesystem::exists(name_or_file, ec)) return load_device_file(name_or_file);
  std::string names;
  for (const DeviceDescription& d : DeviceDescription::presets()) names += (names.empty() ? "" : ", ") + d.name;
  return Diagnostic{"", "unknown device '" + name_or_file + "': name a preset (" + names +
                            ") or a device JSON file"};
}

}  // namespace fx
