// A run report in the run panel: read through core's one reader (a report of another format or version is refused
// with a message naming both), its numbers painted on the groups, the kernels table, the timing and clocks in
// words, and the timings exports.
#include <QFile>
#include <QLabel>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/gui/run_panel.h"
#include "app/gui/run_report.h"
#include "core/export/timings_export.h"
#include "tests/app/report_fixture.h"

namespace fx::app {
namespace {

using test::KernelSpec;

constexpr double kMiB = 1048576;

// relu_mul_add: three kernels unfused, one fused that ran as the library said.
RunReport relu_mul_add() {
  const double q = 256 * kMiB;
  return test::two_plans(
      "relu_mul_add",
      {{"k_mul", "g:mul", {"mul"}, 180.0, 170.0, 2 * q, q, static_cast<std::int64_t>(3 * q)},
       {"k_add", "g:add", {"add"}, 181.0, std::nullopt, 2 * q, q},
       {"k_y", "g:y", {"y"}, 120.0}},
      {{"k_fused", "g:mul", {"mul", "add", "y"}, 240.0, std::nullopt, 3 * q, q, 0, false, std::nullopt,
        "generated (NVRTC)", "2 elements per thread (8-byte accesses): the fastest of 2 layouts"}});
}

// Every label's text: what the panel tells people.
QString panel_text(const RunPanel& panel) {
  QStringList out;
  for (const QLabel* l : panel.findChildren<QLabel*>()) out << l->text();
  return out.join(QLatin1Char('\n'));
}

// Opens `report` as a file in `panel`; the measured text per group it then paints on the graph.
std::map<QString, QString> open_and_paint(RunPanel& panel, const QTemporaryDir& dir, const RunReport& report) {
  QSignalSpy measured(&panel, &RunPanel::measured_groups);
  EXPECT_TRUE(panel.open_report(test::write_report(dir, report)));
  EXPECT_GE(measured.count(), 1);
  return measured.isEmpty() ? std::map<QString, QString>{} : measured.last().at(0).value<std::map<QString, QString>>();
}

TEST(RunReportView, GroupsKernelsAndSaysHowTheyRan) {
  const RunReport r = relu_mul_add();
  const std::vector<GroupCheck> unfused = group_checks(r.unfused);
  ASSERT_EQ(unfused.size(), 3u);
  EXPECT_EQ(unfused[0].group, QStringLiteral("g:mul"));
  EXPECT_DOUBLE_EQ(*unfused[0].predicted_us, 170.0);
  EXPECT_FALSE(unfused[2].measured_bytes);  // k_y was not measured: no made-up bytes
  EXPECT_EQ(how(r.fused.kernels[0]),
            QStringLiteral("generated (NVRTC) · 2 elements per thread (8-byte accesses): the fastest of 2 layouts"));
  EXPECT_TRUE(how(r.unfused.kernels[0]).isEmpty());
  const std::vector<KernelTimingRow> rows = timing_rows(r);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_DOUBLE_EQ(rows[1].start_us, 180.0);  // laid end to end in their plan
  EXPECT_FALSE(rows[2].bytes_read);
}

TEST(RunReportView, DescribesTheTimingAndTheFault) {
  RunTiming t;
  t.repeat = 20;
  t.warmup = 3;
  EXPECT_EQ(describe_timing(t).toStdString(), "median of 20 runs of each plan after 3 warm-up runs");
  t.repeat = 153;
  t.warmup = 38;
  t.warmup_ms = 25.0;
  t.repeat_ms = 100.0;
  t.round_ms = 0.652;
  t.rest_ms = 1000.0;
  t.cold_l2 = true;
  EXPECT_EQ(describe_timing(t).toStdString(),
            "median of 153 runs of each plan after 38 warm-up runs, a 256 MB flush before each (about 100 ms of runs, "
            "as do_bench); the GPU idle 1000 ms before");
  EXPECT_TRUE(describe_timing(RunTiming{}).isEmpty());  // no rounds said: nothing made up
  RunFault f{"cudaErrorIllegalAddress", 700, "an illegal memory access was encountered", "cudaStreamSynchronize",
             "verification", "fused", 0, "fx_g_mul", "g:mul", "exact", ""};
  EXPECT_TRUE(describe_fault(f).contains(QStringLiteral("this is the kernel that faulted")));
  f.step.reset();
  EXPECT_TRUE(describe_fault(f).contains(QStringLiteral("No plan step had been launched")));
}

// A report of another version or format is refused with a message naming what it is and what is read, never
// read by guessing at its fields; a report of this version with a field of the wrong type is refused where it is.
TEST(RunPanel, RefusesAReportOfAnotherVersionOrFormat) {
  QTemporaryDir dir;
  RunPanel panel;
  nlohmann::ordered_json j = to_json(relu_mul_add());
  j["version"] = 2;
  const QString path = dir.filePath(QStringLiteral("v2.json"));
  ASSERT_TRUE(write_text_file_atomic(path.toStdString(), j.dump()));
  EXPECT_FALSE(panel.open_report(path));
  EXPECT_FALSE(panel.report());
  QString text = panel_text(panel);
  EXPECT_TRUE(text.contains(QStringLiteral("version 2"))) << text.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral("reads version 1"))) << text.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral("/version"))) << text.toStdString();

  j["version"] = 1;
  j["format"] = "fusion-explorer/graph";
  ASSERT_TRUE(write_text_file_atomic(path.toStdString(), j.dump()));
  EXPECT_FALSE(panel.open_report(path));
  text = panel_text(panel);
  EXPECT_TRUE(text.contains(QStringLiteral("\"fusion-explorer/graph\", not \"fusion-explorer/run\""))) << text.toStdString();

  j["format"] = "fusion-explorer/run";
  j["plans"][1]["kernels"][0]["measured_ms"] = "fast";
  ASSERT_TRUE(write_text_file_atomic(path.toStdString(), j.dump()));
  EXPECT_FALSE(panel.open_report(path));
  EXPECT_TRUE(panel_text(panel).contains(QStringLiteral("/plans/1/kernels/0/measured_ms"))) << panel_text(panel).toStdString();
  EXPECT_FALSE(panel.open_report(dir.filePath(QStringLiteral("missing.json"))));
}

TEST(RunPanel, OpensAReportAndPaintsMeasuredNumbersOnGroups) {
  QTemporaryDir dir;
  RunPanel panel;
  const auto text = open_and_paint(panel, dir, relu_mul_add());
  ASSERT_EQ(text.count(QStringLiteral("g:mul")), 1u);
  EXPECT_TRUE(text.at(QStringLiteral("g:mul")).startsWith(QStringLiteral("240.0 µs")));
  EXPECT_NE(timings_to_csv(panel.timing_rows()).find("k_fused"), std::string::npos);
  // The kernels table says how each kernel ran: the library, and the layout the run chose by timing.
  auto* table = panel.findChild<QTableWidget*>();
  ASSERT_TRUE(table);
  const int how_column = table->columnCount() - 1;
  EXPECT_EQ(table->horizontalHeaderItem(how_column)->text(), QStringLiteral("How it ran"));
  ASSERT_EQ(table->rowCount(), 4);
  EXPECT_EQ(table->item(3, 1)->text(), QStringLiteral("k_fused"));
  EXPECT_EQ(table->item(3, how_column)->text(), how(relu_mul_add().fused.kernels[0]));
  EXPECT_EQ(table->item(3, 1)->toolTip(), table->item(3, how_column)->text());
  EXPECT_TRUE(table->item(0, how_column)->text().isEmpty());  // a report that does not say: nothing made up
  EXPECT_TRUE(panel_text(panel).contains(QStringLiteral("Timing: median of 20 runs of each plan after 3 warm-up runs")));
}

// The clocks the timing ran at, or why they were not read, are in the panel's status.
TEST(RunPanel, SaysWhatTheClocksWere) {
  QTemporaryDir dir;
  RunPanel panel;
  RunReport r = relu_mul_add();
  r.timing.gpu_clocks = ClockReading{};
  r.timing.gpu_clocks->samples = 12;
  r.timing.gpu_clocks->summary = "SM clock 1755 MHz (median; 1740-1980, highest 1980), up to 691 W of 700 W";
  open_and_paint(panel, dir, r);
  EXPECT_TRUE(panel_text(panel).contains(QStringLiteral("GPU while timing: SM clock 1755 MHz")));
  r.timing.gpu_clocks = ClockReading{};
  r.timing.gpu_clocks->note = "GPU clocks not read: --no-clocks";
  open_and_paint(panel, dir, r);
  EXPECT_TRUE(panel_text(panel).contains(QStringLiteral("GPU clocks not read: --no-clocks")));
}

// The trace the GUI exports from an opened report has the report's NVML samples as counter tracks, as the
// CLI's --trace does; a report without samples gives the kernels alone.
TEST(RunPanel, TraceExportCarriesTheReportsClockSamples) {
  QTemporaryDir dir;
  RunPanel panel;
  RunReport r = relu_mul_add();
  r.timing.gpu_clocks = ClockReading{};
  r.timing.gpu_clocks->timeline = {{0, 1980, 512.5, 40}, {10, 1755, 690, 41}};
  open_and_paint(panel, dir, r);
  auto counter_events = [](const std::string& text) {
    const nlohmann::json trace = nlohmann::json::parse(text);
    int n = 0;
    for (const auto& e : trace["traceEvents"]) n += e["ph"] == "C";
    return n;
  };
  const std::string trace = panel.timings_trace();
  EXPECT_EQ(counter_events(trace), 6);  // SM clock, power and temperature at two samples
  EXPECT_NE(trace.find("GPU clocks and power over the timing rounds (NVML)"), std::string::npos);
  EXPECT_NE(trace.find("k_fused"), std::string::npos);
  open_and_paint(panel, dir, relu_mul_add());
  EXPECT_EQ(counter_events(panel.timings_trace()), 0);
}

// A group run as several kernels (here a convolution between its layout conversions) is labelled with their
// sum and count, not with its last kernel.
TEST(RunPanel, AGroupOfSeveralKernelsShowsTheirSum) {
  const double b = 25 * kMiB;
  const RunReport split = test::two_plans("conv_bn_relu", {{"cudnn_g0_conv", "g:conv", {"conv"}, 93.0}},
                                          {{"fx_g0_conv_x_to_nhwc", "g:conv", {"conv"}, 25.0, std::nullopt, b, b},
                                           {"cudnn_g0_y", "g:conv", {"conv"}, 48.0, std::nullopt, b, b},
                                           {"fx_g0_conv_y_to_nchw", "g:conv", {"conv"}, 21.0, std::nullopt, b, b}});
  QTemporaryDir dir;
  RunPanel panel;
  const auto text = open_and_paint(panel, dir, split);
  ASSERT_EQ(text.count(QStringLiteral("g:conv")), 1u);
  EXPECT_EQ(text.at(QStringLiteral("g:conv")), QStringLiteral("3 kernels: 94.0 µs · 150 MiB"));
}

// Steps whose bytes the counter pass measured once for several identical steps: the one measured shows its
// bytes, the others name the step they come from, and each tooltip says so; a step measured alone claims nothing.
TEST(RunPanel, BytesMeasuredOnceForIdenticalStepsNameTheStepMeasured) {
  const double b = 25 * kMiB;
  RunReport r = test::two_plans("two_relus", {{"fx_g_a", "g:a", {"a"}, 10.0, std::nullopt, b, b},
                                              {"fx_g_b", "g:b", {"b"}, 10.0, std::nullopt, b, b},
                                              {"fx_g_c", "g:c", {"c"}, 12.0, std::nullopt, 2 * b, b}},
                                {{"fx_g_abc", "g:abc", {"a", "b", "c"}, 20.0, std::nullopt, 2 * b, b}});
  const SharedCounterWindow w{"unfused", 0, "fx_g_a", 2};
  r.unfused.kernels[0].measured->shared_window = w;
  r.unfused.kernels[1].measured->shared_window = w;
  QTemporaryDir dir;
  RunPanel panel;
  open_and_paint(panel, dir, r);
  auto* table = panel.findChild<QTableWidget*>();
  ASSERT_TRUE(table);
  ASSERT_EQ(table->rowCount(), 4);
  constexpr int bytes_column = 4;
  EXPECT_EQ(table->horizontalHeaderItem(bytes_column)->text(), QStringLiteral("Measured MiB"));
  EXPECT_EQ(table->item(0, bytes_column)->text(), QStringLiteral("50.0"));
  EXPECT_EQ(table->item(1, bytes_column)->text(), QStringLiteral("50.0 (as unfused #0)"));
  EXPECT_EQ(table->item(2, bytes_column)->text(), QStringLiteral("75.0"));
  EXPECT_TRUE(table->item(0, bytes_column)->toolTip().contains(QStringLiteral("this step's window, shared")));
  EXPECT_EQ(table->item(1, bytes_column)->toolTip(),
            QStringLiteral("bytes measured once for 2 identical steps: same as step 0 of the unfused plan (fx_g_a)"));
  EXPECT_FALSE(table->item(2, bytes_column)->toolTip().contains(QStringLiteral("measured once")));
}

// A report as `fusion-cli run --json` writes it (relu_mul_add): the panel reads what the executor
// really writes, not only the reports made here.
TEST(RunPanel, ReadsARealExecutorReport) {
  QFile f(QStringLiteral(FX_SOURCE_DIR "/tests/data/run-reports/relu_mul_add.h100.json"));
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  QString error;
  const auto report = read_report(f.readAll(), &error);
  ASSERT_TRUE(report) << error.toStdString();
  EXPECT_EQ(report->unfused.kernels.size(), 3u);
  EXPECT_EQ(report->fused.kernels.size(), 1u);
  EXPECT_GT(report->unfused.total_ms, 1.5 * report->fused.total_ms);  // 0.715 ms vs 0.347 ms measured
  ASSERT_TRUE(report->fused.measured_bytes());                       // CUPTI bytes were measured in that run
  EXPECT_NEAR(*report->fused.measured_bytes() / kMiB, 1035.0, 60.0);  // 3 reads + 1 write of 256 MiB
  ASSERT_TRUE(report->unfused.measured_bytes());
  EXPECT_NEAR(*report->unfused.measured_bytes() / *report->fused.measured_bytes(), 2.0, 0.2);
  EXPECT_GT(report->speedup, 1.5);
  EXPECT_EQ(device_name(*report), QStringLiteral("NVIDIA H100 80GB HBM3"));
  EXPECT_EQ(report->fused.kernels[0].library, "generated (NVRTC)");
  EXPECT_FALSE(read_report("[1,2]", &error));
  EXPECT_FALSE(error.isEmpty());
}

}  // namespace
}  // namespace fx::app
