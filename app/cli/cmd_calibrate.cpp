// fusion-cli calibrate: measures the GPU (copy bandwidth, launch overhead) and writes a DeviceDescription the
// cost model loads (`--device FILE`).
#include <ctime>
#include <iomanip>

#include "app/cli/cli_io.h"
#include "app/cli/command.h"
#include "core/cost/device_description.h"

#ifdef FX_HAVE_CUDA
#include "kernels/common/gpu_error.h"
#include "kernels/executor/calibrate.h"
#endif

namespace fx::cli {
namespace {

const char* kHelp =
    "usage: fusion-cli calibrate [--json OUT] [--size-mib N] [--gemm-size N]\n\n"
    "Measures device-to-device copy bandwidth (cudaMemcpy and a 16-byte-vector copy kernel, counting bytes read\n"
    "plus written, median of 20), the per-launch overhead of back-to-back empty kernels, and the dense\n"
    "tensor-core rates (bf16 and f32-on-TF32 square cuBLASLt GEMMs of --gemm-size, default 8192, on random\n"
    "data; 0 skips them). Writes a device description (the preset for this GPU with the measured values) to\n"
    "OUT (- for stdout), which `--device OUT` then loads. Exit code 3 without a CUDA device.\n";

#ifdef FX_HAVE_CUDA
int calibrate(const std::vector<std::string>& argv, std::ostream& stdout_stream, std::ostream& err) {
  Args args(argv, {}, {"--json", "--size-mib", "--gemm-size"});
  if (!args.ok() || !args.positionals().empty()) {
    err << "fusion-cli calibrate: " << (args.ok() ? "takes no file" : args.error()) << "\n";
    return kBadInput;
  }
  std::int64_t mib = 1024;
  std::int64_t gemm = 8192;
  try {
    if (auto s = args.value("--size-mib")) mib = std::stoll(*s);
    if (auto s = args.value("--gemm-size")) gemm = std::stoll(*s);
  } catch (const std::exception&) {
    err << "fusion-cli calibrate: --size-mib and --gemm-size take whole numbers\n";
    return kBadInput;
  }
  if (mib < 1 || mib > (1 << 16) || gemm < 0 || gemm > (1 << 15)) {
    err << "fusion-cli calibrate: --size-mib is 1 to 65536, --gemm-size 0 (skip) to 32768\n";
    return kBadInput;
  }
  // With --json -, stdout carries the device description alone; the measurements go to stderr.
  std::ostream& out = args.value("--json") == "-" ? err : stdout_stream;
  gpu::Calibration c;
  try {
    c = gpu::calibrate_device(mib << 20, 20, gemm);
  } catch (const gpu::NoDeviceError& e) {
    err << "fusion-cli calibrate: " << e.what() << "\n";
    return kNoDevice;
  }
  const std::string& name = c.device.name;
  DeviceDescription d = DeviceDescription::preset(name.find("H200") != std::string::npos ? "h200" : "h100").value();
  d.name = name;
  d.hbm_bandwidth = c.copy_bandwidth();
  d.launch_overhead_s = c.launch_overhead_s;
  d.sm_count = c.device.sm_count;
  d.l2_bytes = c.device.l2_bytes;
  if (c.bf16_tensor_flops > 0) d.fp16_tensor_flops = c.bf16_tensor_flops;
  if (c.tf32_tensor_flops > 0) d.tf32_tensor_flops = c.tf32_tensor_flops;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  d.source = "measured by fusion-cli calibrate on " + name + " on " + date + " (copy " +
             std::to_string(c.copy_bytes >> 20) + " MiB)" +
             (c.gemm_size > 0 ? "; tensor-core FLOP/s from " + std::to_string(c.gemm_size) + "^3 cuBLASLt GEMMs on random data"
                                  ", CUDA-core FLOP/s from the preset"
                              : "; peak FLOP/s from the preset");
  out << std::fixed << std::setprecision(3) << name << " (" << c.device.arch() << ", " << c.device.sm_count << " SMs)\n"
      << "  device-to-device copy, cudaMemcpy:   " << c.memcpy_bandwidth / 1e12 << " TB/s (read + write)\n"
      << "  device-to-device copy, vector kernel: " << c.copy_kernel_bandwidth / 1e12 << " TB/s (read + write)\n"
      << "  launch overhead: " << std::setprecision(2) << c.launch_overhead_s * 1e6 << " us per kernel\n";
  if (c.gemm_size > 0) {
    out << std::setprecision(1) << "  dense GEMM " << c.gemm_size << "^3, cuBLASLt: bf16 " << c.bf16_tensor_flops / 1e12
        << " TFLOP/s, f32 on TF32 tensor cores " << c.tf32_tensor_flops / 1e12 << " TFLOP/s\n";
  }
  if (auto file = args.value("--json")) {
    if (auto w = write_output(*file, device_to_json(d), stdout_stream); !w) {
      err << "fusion-cli calibrate: " << format_diagnostics(w.errors(), *file);
      return kFailed;
    }
    if (!is_std_stream(*file)) out << "wrote " << *file << "\n";
  }
  return kOk;
}
#else
int calibrate(const std::vector<std::string>&, std::ostream&, std::ostream& err) {
  err << "fusion-cli calibrate: no CUDA device (built without CUDA support)\n";
  return kNoDevice;
}
#endif

const Register reg({"calibrate", "measure copy bandwidth, launch overhead and GEMM rates; write a device description", kHelp, calibrate});

}  // namespace
}  // namespace fx::cli
