// Device descriptions (presets, JSON round trip, errors) and the roofline arithmetic.
#include "tests/core/fusion_test_util.h"

namespace fx {
namespace {

TEST(CostDevice, PresetsCarryDatasheetFigures) {
  const auto h200 = DeviceDescription::preset("h200");
  ASSERT_TRUE(h200.has_value());
  EXPECT_DOUBLE_EQ(h200->hbm_bandwidth, 4.8e12);
  EXPECT_DOUBLE_EQ(h200->peak_flops(DType::bf16, true), 989.4e12);
  EXPECT_DOUBLE_EQ(h200->peak_flops(DType::f32, true), 494.7e12);
  EXPECT_DOUBLE_EQ(h200->peak_flops(DType::f32, false), 66.9e12);
  EXPECT_EQ(DeviceDescription::presets().size(), 5u);
  EXPECT_EQ(DeviceDescription::preset("A100 80GB")->sm_count, 108);
  EXPECT_FALSE(DeviceDescription::preset("v100").has_value());
}

TEST(CostDevice, JsonRoundTripAndErrors) {
  const DeviceDescription l4 = DeviceDescription::l4();
  auto back = device_from_json(device_to_json(l4));
  ASSERT_TRUE(back.ok()) << format_diagnostics(back.errors());
  EXPECT_EQ(back->name, "L4");
  EXPECT_NEAR(back->hbm_bandwidth, l4.hbm_bandwidth, 1);
  EXPECT_NEAR(back->launch_overhead_s, l4.launch_overhead_s, 1e-12);
  auto bad = device_from_json(R"({"format": "fusion-explorer/device", "version": 1, "name": "x", "hbm_bandwidth_gbps": -1})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors()[0].pointer, "/hbm_bandwidth_gbps");
  for (const char* version : {"", R"("version": 2,)", R"("version": "1",)"}) {
    auto other = device_from_json(std::string(R"({"format": "fusion-explorer/device", )") + version + R"( "name": "x"})");
    ASSERT_FALSE(other.ok()) << version;
    EXPECT_EQ(other.errors()[0].pointer, "/version");
    EXPECT_NE(other.errors()[0].message.find("reads device descriptions of version 1"), std::string::npos);
  }
  EXPECT_FALSE(resolve_device("no-such-device").ok());
}

TEST(CostModelRoofline, MemoryBoundElementwiseAndComputeBoundGemm) {
  const CostModel model(DeviceDescription::h200());
  const Graph relu = testing::sample("relu_mul_add.json");
  const GroupCost mul = model.single(relu, 0);
  EXPECT_EQ(mul.bytes_read, 2 * (256LL << 20));
  EXPECT_EQ(mul.bytes_written, 256LL << 20);
  EXPECT_FALSE(mul.compute_bound());
  EXPECT_NEAR(mul.time_s, 3.0 * (256 << 20) / 4.8e12 + 3e-6, 1e-9);

  const Graph qkv = testing::sample("qkv_bf16.json");
  const GroupCost q = model.single(qkv, 0);
  EXPECT_TRUE(q.compute_bound());
  EXPECT_NEAR(q.compute_time_s, 2.0 * 8192 * 4096 * 1024 / 989.4e12, 1e-9);
  EXPECT_EQ(describe_traffic(mul), "2 reads + 1 write = 768 MiB");
}

}  // namespace
}  // namespace fx
