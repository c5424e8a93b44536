// Joining the timing pass and the counter pass into export rows: pure logic, runs without a GPU.
#include <gtest/gtest.h>

#include "kernels/profile/timing_rows.h"

namespace fx::gpu {
namespace {

KernelRecord timed(const char* name, std::optional<std::uint64_t> step, std::uint64_t start, std::uint64_t end) {
  KernelRecord r;
  r.name = name;
  r.step_id = step;
  r.start_ns = start;
  r.end_ns = end;
  return r;
}

KernelCounters measured(int launch, std::vector<RangeCounters> kernels) {
  KernelCounters c;
  c.launch_index = launch;
  c.available = true;
  c.kernels = static_cast<int>(kernels.size());
  c.per_kernel = std::move(kernels);
  return c;
}

const std::vector<PlanStepLabel> kSteps = {{1, "g0", {"mul"}, 768.0}, {2, "g1", {"add", "relu"}, 1024.0}};
const std::vector<KernelRecord> kTimed = {timed("fx_mul", 1, 1000, 3000), timed("lt_gemm", 2, 4000, 5000),
                                          timed("lt_splitk_reduce", 2, 5000, 6500),
                                          timed("stray", std::nullopt, 7000, 7500)};

TEST(JoinTimingRows, PairsKernelsWithinAStepByLaunchOrder) {
  const std::vector<KernelCounters> counters = {measured(0, {{512, 256, 1}}), measured(1, {{10, 20, 1}, {30, 40, 1}})};
  const auto rows = join_timing_rows("fused", kSteps, kTimed, counters);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].plan, "fused");
  EXPECT_EQ(rows[0].group, "g0");
  EXPECT_EQ(rows[0].nodes, std::vector<std::string>{"mul"});
  EXPECT_DOUBLE_EQ(rows[0].start_us, 0.0);
  EXPECT_DOUBLE_EQ(rows[0].duration_us, 2.0);
  EXPECT_EQ(rows[0].bytes_read, 512.0);
  EXPECT_EQ(rows[0].bytes_written, 256.0);
  EXPECT_EQ(rows[0].predicted_bytes, 768.0);

  EXPECT_EQ(rows[1].group, "g1");
  EXPECT_DOUBLE_EQ(rows[1].start_us, 3.0);
  EXPECT_EQ(rows[1].bytes_read, 10.0);
  EXPECT_EQ(rows[1].predicted_bytes, 1024.0);
  EXPECT_EQ(rows[2].bytes_read, 30.0);
  EXPECT_EQ(rows[2].bytes_written, 40.0);
  EXPECT_FALSE(rows[2].predicted_bytes) << "predicted bytes belong to the step's first kernel only";

  EXPECT_EQ(rows[3].kernel, "stray");
  EXPECT_TRUE(rows[3].group.empty());
  EXPECT_FALSE(rows[3].bytes_read);
}

TEST(JoinTimingRows, LeavesBytesAbsentWhenThePassesDisagreeOrWereNotMeasured) {
  KernelCounters refused;
  refused.launch_index = 0;
  refused.reason = "not measured: profiling restricted to admin users (RmProfilingAdminOnly=1)";
  const std::vector<KernelCounters> counters = {refused, measured(1, {{10, 20, 1}})};  // step 2 timed 2 kernels
  const auto rows = join_timing_rows("fused", kSteps, kTimed, counters);
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) {
    EXPECT_FALSE(row.bytes_read) << row.kernel;
    EXPECT_FALSE(row.bytes_written) << row.kernel;
  }
  EXPECT_EQ(rows[0].predicted_bytes, 768.0);
}

TEST(JoinTimingRows, WithoutCounterPassGivesTimingsOnly) {
  const auto rows = join_timing_rows("unfused", kSteps, kTimed, {});
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_DOUBLE_EQ(rows[3].start_us, 6.0);
  EXPECT_DOUBLE_EQ(rows[2].duration_us, 1.5);
  EXPECT_FALSE(rows[0].bytes_read);
}

}  // namespace
}  // namespace fx::gpu
