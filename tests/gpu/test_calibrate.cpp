// fusion-cli calibrate's measurements: copy bandwidth, launch overhead and the tensor-core GEMM rates.
#include <gtest/gtest.h>

#include "kernels/executor/calibrate.h"
#include "tests/gpu/executor_test_support.h"

namespace fx::gpu {
namespace {

TEST(Calibrate, MeasuresBandwidthLaunchOverheadAndGemmRates) {
  FX_REQUIRE_DEVICE();
  const Calibration c = calibrate_device(std::int64_t{256} << 20, 5, 4096);
  // Loose sanity bounds that any datacenter GPU of the last generations meets and a broken timer does not.
  EXPECT_GT(c.copy_bandwidth(), 0.5e12);
  EXPECT_LT(c.copy_bandwidth(), 20e12);
  EXPECT_GT(c.launch_overhead_s, 0.2e-6);
  EXPECT_LT(c.launch_overhead_s, 50e-6);
  EXPECT_EQ(c.gemm_size, 4096);
  // bf16 GEMMs run on the tensor cores at several times the TF32 rate of the same size, and both far above
  // the ~67 TFLOP/s of plain f32 on an H100 for bf16.
  EXPECT_GT(c.bf16_tensor_flops, 100e12);
  EXPECT_GT(c.tf32_tensor_flops, 50e12);
  EXPECT_GT(c.bf16_tensor_flops, 1.3 * c.tf32_tensor_flops);
}

}  // namespace
}  // namespace fx::gpu
