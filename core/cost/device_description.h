// What the cost model knows about a GPU: bandwidth, peak FLOP/s per dtype, launch overhead, caches and
// registers. Presets carry public datasheet figures; a measured description (the executor writes one) can
// be loaded from JSON and replaces them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/diagnostic.h"
#include "core/graph/dtype.h"

namespace fx {

struct DeviceDescription {
  std::string name;
  double hbm_bandwidth = 0;        // bytes per second, read plus write
  // Dense peaks in FLOP/s (a fused multiply-add counts two). CUDA cores, then tensor cores.
  double fp32_flops = 0;
  double fp16_flops = 0;           // CUDA cores, half and bfloat16
  double tf32_tensor_flops = 0;
  double fp16_tensor_flops = 0;    // f16 and bf16 inputs, f32 accumulate
  double launch_overhead_s = 0;    // per kernel: launch plus the gap between dependent kernels
  std::int64_t l2_bytes = 0;
  int sm_count = 0;
  int registers_per_sm = 0;        // 32-bit registers
  std::string source;              // where the numbers come from ("datasheet ...", "measured on ...")

  // Peak for work on dtype; tensor cores for contractions (f32 contractions run as TF32, as cuBLAS does
  // with TF32 enabled).
  double peak_flops(DType dtype, bool tensor_cores) const;

  bool operator==(const DeviceDescription&) const = default;

  static DeviceDescription h100_sxm();
  static DeviceDescription h200();
  static DeviceDescription a100_80gb();
  static DeviceDescription rtx_4090();
  static DeviceDescription l4();
  static std::vector<DeviceDescription> presets();
  // Case-insensitive; accepts the preset's name ("H100 SXM") or a short key ("h100", "h200", "a100",
  // "4090", "l4").
  static std::optional<DeviceDescription> preset(std::string_view name);
};

inline constexpr int kDeviceFormatVersion = 1;

// The one reader and writer of device description files (schemas/device.schema.json):
// {"format": "fusion-explorer/device", "version": 1, "name": ..., "hbm_bandwidth_gbps": ..., ...}
std::string device_to_json(const DeviceDescription& device);
Expected<DeviceDescription> device_from_json(std::string_view text);
Expected<DeviceDescription> load_device_file(const std::filesystem::path& path);
// A preset name or a JSON file path, as `--device` takes it.
Expected<DeviceDescription> resolve_device(const std::string& name_or_file);

}  // namespace fx
