// The child-process runner: a child that crashes is reported with its stderr and never takes the test (the
// GUI) down; progress lines are parsed; a run report opens in the panel and feeds the timings exports.
#include <QCoreApplication>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTest>
#include <QTableWidget>
#include <QTemporaryDir>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "app/gui/child_runner.h"
#include "app/gui/run_panel.h"
#include "app/gui/run_report.h"
#include "core/export/timings_export.h"
#include "core/graph/graph_io.h"

namespace fx::app {
namespace {

ChildResult run_child(const QString& program, const QStringList& args) {
  ChildRunner runner;
  QSignalSpy done(&runner, &ChildRunner::finished);
  runner.start(program, args);
  EXPECT_TRUE(done.wait(10000));
  return done.isEmpty() ? ChildResult{} : done.takeFirst().at(0).value<ChildResult>();
}

TEST(ChildRunner, CrashingChildIsReportedWithItsStderr) {
  // A tiny script that writes to stderr then kills itself with SIGSEGV, as a CUDA fault would.
  const ChildResult r = run_child(QStringLiteral("/bin/sh"),
                                  {QStringLiteral("-c"), QStringLiteral("echo 'illegal memory access' >&2; kill -SEGV $$")});
  EXPECT_EQ(r.status, ChildResult::Status::crashed);
  EXPECT_TRUE(r.std_err.contains(QStringLiteral("illegal memory access")));
  EXPECT_EQ(r.describe(), QStringLiteral("crashed"));
}

TEST(ChildRunner, ExitCodeLinesAndMissingProgram) {
  ChildRunner runner;
  QSignalSpy lines(&runner, &ChildRunner::line);
  QSignalSpy done(&runner, &ChildRunner::finished);
  runner.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), QStringLiteral("echo one; printf two; exit 3")});
  ASSERT_TRUE(done.wait(10000));
  const ChildResult r = done.takeFirst().at(0).value<ChildResult>();
  EXPECT_EQ(r.status, ChildResult::Status::finished);
  EXPECT_EQ(r.exit_code, 3);
  ASSERT_EQ(lines.count(), 2);
  EXPECT_EQ(lines.at(1).at(0).toString(), QStringLiteral("two"));
  EXPECT_EQ(run_child(QStringLiteral("/nonexistent/fusion-cli"), {}).status, ChildResult::Status::failed_to_start);
}

TEST(ChildRunner, CancelStopsALongChild) {
  ChildRunner runner;
  QSignalSpy done(&runner, &ChildRunner::finished);
  runner.start(QStringLiteral("/bin/sleep"), {QStringLiteral("30")});
  ASSERT_TRUE(QTest::qWaitFor([&] { return runner.running(); }, 5000));
  runner.cancel();
  ASSERT_TRUE(done.wait(10000));
  EXPECT_EQ(done.takeFirst().at(0).value<ChildResult>().status, ChildResult::Status::cancelled);
}

// Run by the test below as its own process: holds a child that writes its pid, as the GUI holds `fusion-cli run`.
TEST(ChildRunner, DISABLED_HelperHoldsAChildUntilKilled) {
  const QString pid_file = qEnvironmentVariable("FX_TEST_CHILD_PID_FILE");
  if (pid_file.isEmpty()) GTEST_SKIP() << "only run by GuiKilledWithSigtermTakesItsChildAlong";
  ChildRunner runner;
  runner.start(QStringLiteral("/bin/sh"),
               {QStringLiteral("-c"), QStringLiteral("echo $$ > '%1'; exec sleep 60").arg(pid_file)});
  QTest::qWait(60000);
}

// The state letter of /proc/PID/stat ('Z' for a zombie), or 0 when the process is gone.
char process_state(const QString& pid) {
  QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
  if (!stat.open(QIODevice::ReadOnly)) return 0;
  const QByteArray text = stat.readAll();
  const int close = text.lastIndexOf(')');
  return close >= 0 && close + 2 < text.size() ? text.at(close + 2) : 0;
}

// SIGTERM to the GUI left its `fusion-cli run` child running: the child now dies with its parent.
TEST(ChildRunner, GuiKilledWithSigtermTakesItsChildAlong) {
  QTemporaryDir dir;
  const QString pid_file = dir.filePath(QStringLiteral("child.pid"));
  QProcess gui;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("FX_TEST_CHILD_PID_FILE"), pid_file);
  gui.setProcessEnvironment(env);
  gui.start(QCoreApplication::applicationFilePath(),
            {QStringLiteral("--gtest_filter=ChildRunner.DISABLED_HelperHoldsAChildUntilKilled"),
             QStringLiteral("--gtest_also_run_disabled_tests")});
  ASSERT_TRUE(QTest::qWaitFor([&] { return QFile(pid_file).size() > 0; }, 20000)) << "the helper never started its child";
  QFile f(pid_file);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  const QString child = QString::fromLatin1(f.readAll()).trimmed();
  ASSERT_NE(process_state(child), 0);
  gui.terminate();  // SIGTERM: no destructor of the helper runs
  ASSERT_TRUE(gui.waitForFinished(10000));
  EXPECT_TRUE(QTest::qWaitFor([&] { const char s = process_state(child); return s == 0 || s == 'Z'; }, 5000))
      << "the child " << child.toStdString() << " outlived the process that started it";
}

constexpr const char* kReport = R"json({
  "graph": "relu_mul_add", "device": {"name": "NVIDIA H200", "hbm_bandwidth": 4.8e12, "peak_flops": 6.7e13},
  "plans": [
    {"name": "unfused", "kernels": [
      {"name": "k_mul", "group": "g:mul", "nodes": ["mul"], "measured_us": 180.0, "predicted_us": 170.0,
       "bytes_read": 536870912, "bytes_written": 268435456, "predicted_bytes": 805306368, "flops": 67108864},
      {"name": "k_add", "group": "g:add", "nodes": ["add"], "measured_us": 181.0, "bytes_read": 536870912,
       "bytes_written": 268435456, "flops": 67108864},
      {"name": "k_y", "group": "g:y", "nodes": ["y"], "measured_us": 120.0, "flops": 67108864}]},
    {"name": "fused", "kernels": [
      {"name": "k_fused", "group": "g:mul", "nodes": ["mul", "add", "y"], "measured_us": 240.0,
       "library": "generated (NVRTC)", "path": "2 elements per thread (8-byte accesses): the fastest of 2 layouts",
       "bytes_read": 805306368, "bytes_written": 268435456, "flops": 201326592}]}]})json";

TEST(RunReport, ParsesPlansTotalsAndSpeedup) {
  QString error;
  const auto report = parse_run_report(kReport, &error);
  ASSERT_TRUE(report) << error.toStdString();
  ASSERT_EQ(report->plans.size(), 2u);
  EXPECT_DOUBLE_EQ(report->plans[0].total_us(), 481.0);  // no "total_ms": the steps' sum
  EXPECT_FALSE(report->plans[0].measured_us);
  EXPECT_FALSE(report->plans[0].total_bytes());  // one kernel unmeasured: no made-up total
  ASSERT_TRUE(report->speedup);
  EXPECT_NEAR(*report->speedup, 481.0 / 240.0, 1e-9);
  EXPECT_TRUE(report->clocks.isEmpty());  // a report without "timing": no clocks, and no made-up words
  EXPECT_FALSE(parse_run_report("[1,2]", &error));
  EXPECT_FALSE(error.isEmpty());
  const auto p = parse_progress_line(QStringLiteral(R"({"step": 2, "total": 5, "message": "fused plan"})"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->total, 5);
  EXPECT_FALSE(parse_progress_line(QStringLiteral("compiling...")));
}

// A report of another version or format is refused with a message saying so, not read by guesswork.
TEST(RunReport, RefusesAnotherVersionOrFormat) {
  QString error;
  EXPECT_FALSE(parse_run_report(R"json({"format": "fusion-explorer/run", "version": 2, "plans": [{"name": "fused",
    "total_ms": 0.28, "kernels": [{"name": "g", "measured_ms": 0.28}]}]})json", &error));
  EXPECT_EQ(error.toStdString(), "run report version 2: this program reads version 1 "
                                 "(schemas/run-report.schema.json); run the graph again with this fusion-cli");
  EXPECT_FALSE(parse_run_report(R"json({"format": "fusion-explorer/graph", "version": 1, "plans": []})json", &error));
  EXPECT_EQ(error.toStdString(), "not a run report: its format is \"fusion-explorer/graph\", not \"fusion-explorer/run\"");
  EXPECT_TRUE(parse_run_report(R"json({"format": "fusion-explorer/run", "version": 1, "plans": [{"name": "fused",
    "total_ms": 0.28, "kernels": [{"name": "g", "measured_ms": 0.28}]}]})json", &error)) << error.toStdString();
}

// fusion-cli run's "timing" says what the GPU's clocks were while the plans were timed (NVML).
TEST(RunReport, CarriesTheClocksOfTheTiming) {
  QString error;
  const auto report = parse_run_report(R"json({"plans": [{"name": "fused", "total_ms": 0.28, "kernels": [
    {"name": "g", "measured_ms": 0.28}]}], "timing": {"repeat": 50, "gpu_clocks": {"samples": 12, "summary":
    "SM clock 1755 MHz (median; 1740-1980, highest 1980), up to 691 W of 700 W; held back by the power cap (12 samples)"}}})json",
                                       &error);
  ASSERT_TRUE(report) << error.toStdString();
  EXPECT_EQ(report->clocks.toStdString(),
            "SM clock 1755 MHz (median; 1740-1980, highest 1980), up to 691 W of 700 W; held back by the power cap (12 samples)");
  const auto unread = parse_run_report(R"json({"plans": [{"name": "fused", "total_ms": 0.28, "kernels": [
    {"name": "g", "measured_ms": 0.28}]}], "timing": {"gpu_clocks": {"samples": 0, "summary": "",
    "note": "GPU clocks not read: --no-clocks"}}})json", &error);
  ASSERT_TRUE(unread) << error.toStdString();
  EXPECT_TRUE(unread->clocks.isEmpty());
  EXPECT_EQ(unread->clocks_note.toStdString(), "GPU clocks not read: --no-clocks");
}

// fusion-cli run's "timing" says how the plans were timed: runs, warm-up, flush, and a timing asked for in ms.
TEST(RunReport, SaysHowThePlansWereTimed) {
  QString error;
  const auto counted = parse_run_report(R"json({"plans": [{"name": "fused", "total_ms": 0.28, "kernels": [
    {"name": "g", "measured_ms": 0.28}]}], "timing": {"repeat": 20, "warmup": 3, "warmup_ms": null,
    "repeat_ms": null, "round_ms": null, "rest_ms": null, "cold_l2": false}})json", &error);
  ASSERT_TRUE(counted) << error.toStdString();
  EXPECT_EQ(counted->timing.toStdString(), "median of 20 runs of each plan after 3 warm-up runs");
  const auto like_pytorch = parse_run_report(R"json({"plans": [{"name": "fused", "total_ms": 0.28, "kernels": [
    {"name": "g", "measured_ms": 0.28}]}], "timing": {"repeat": 153, "warmup": 38, "warmup_ms": 25,
    "repeat_ms": 100, "round_ms": 0.652, "rest_ms": 1000, "cold_l2": true}})json", &error);
  ASSERT_TRUE(like_pytorch) << error.toStdString();
  EXPECT_EQ(like_pytorch->timing.toStdString(),
            "median of 153 runs of each plan after 38 warm-up runs, a 256 MB flush before each (about 100 ms of runs, "
            "as do_bench); the GPU idle 1000 ms before");
  const auto unsaid = parse_run_report(R"json({"plans": [{"name": "fused", "total_ms": 0.28, "kernels": [
    {"name": "g", "measured_ms": 0.28}]}]})json", &error);
  ASSERT_TRUE(unsaid) << error.toStdString();
  EXPECT_TRUE(unsaid->timing.isEmpty());  // an older report: nothing made up
}

// fusion-cli's plan time ("total_ms", the plan run whole) is the plan's time; its steps, each timed with an
// event after it, add up to a little more.
TEST(RunReport, ThePlanTimedWholeIsItsTime) {
  QString error;
  const auto report = parse_run_report(R"json({"plans": [
    {"name": "unfused", "total_ms": 2.0028, "stepped_ms": 2.0504, "kernels": [
      {"name": "a", "measured_ms": 1.2}, {"name": "b", "measured_ms": 0.8504}]},
    {"name": "fused", "total_ms": 1.2403, "kernels": [{"name": "f", "measured_ms": 1.2683}]}]})json", &error);
  ASSERT_TRUE(report) << error.toStdString();
  ASSERT_EQ(report->plans.size(), 2u);
  EXPECT_NEAR(report->plans[0].total_us(), 2002.8, 1e-6);
  EXPECT_NEAR(report->plans[0].steps_us(), 2050.4, 1e-6);
  ASSERT_TRUE(report->speedup);  // none in the report: from the plans' own times
  EXPECT_NEAR(*report->speedup, 2.0028 / 1.2403, 1e-9);
}

// Opens `json` as a report file in `panel`; the measured text per group it then paints on the graph.
std::map<QString, QString> open_and_paint(RunPanel& panel, const QTemporaryDir& dir, const char* json) {
  const QString path = dir.filePath(QStringLiteral("report.json"));
  EXPECT_TRUE(write_text_file_atomic(path.toStdString(), json));
  QSignalSpy measured(&panel, &RunPanel::measured_groups);
  EXPECT_TRUE(panel.open_report(path));
  EXPECT_GE(measured.count(), 1);
  return measured.isEmpty() ? std::map<QString, QString>{} : measured.last().at(0).value<std::map<QString, QString>>();
}

TEST(RunPanel, OpensAReportAndPaintsMeasuredNumbersOnGroups) {
  QTemporaryDir dir;
  RunPanel panel;
  const auto text = open_and_paint(panel, dir, kReport);
  ASSERT_EQ(text.count(QStringLiteral("g:mul")), 1u);
  EXPECT_TRUE(text.at(QStringLiteral("g:mul")).startsWith(QStringLiteral("240.0 µs")));
  const std::string csv = timings_to_csv(panel.timing_rows());
  EXPECT_NE(csv.find("k_fused"), std::string::npos);
  // The kernels table says how each kernel ran: the library, and the layout the run chose by timing.
  auto* table = panel.findChild<QTableWidget*>();
  ASSERT_TRUE(table);
  const int how = table->columnCount() - 1;
  EXPECT_EQ(table->horizontalHeaderItem(how)->text(), QStringLiteral("How it ran"));
  ASSERT_EQ(table->rowCount(), 4);
  EXPECT_EQ(table->item(3, 1)->text(), QStringLiteral("k_fused"));
  EXPECT_EQ(table->item(3, how)->text(),
            QStringLiteral("generated (NVRTC) · 2 elements per thread (8-byte accesses): the fastest of 2 layouts"));
  EXPECT_EQ(table->item(3, 1)->toolTip(), table->item(3, how)->text());
  EXPECT_TRUE(table->item(0, how)->text().isEmpty());  // a report that does not say: nothing made up
  EXPECT_FALSE(panel.open_report(dir.filePath(QStringLiteral("missing.json"))));
}

// The trace the GUI exports from an opened report has the report's NVML samples as counter tracks, as the
// CLI's --trace does; a report without samples gives the kernels alone.
TEST(RunPanel, TraceExportCarriesTheReportsClockSamples) {
  QTemporaryDir dir;
  RunPanel panel;
  std::string with_clocks = kReport;
  with_clocks.insert(with_clocks.rfind('}'),
                     R"(, "timing": {"gpu_clocks": {"timeline": [[0, 1980, 512.5, 40], [10, 1755, 690, 41]]}})");
  open_and_paint(panel, dir, with_clocks.c_str());
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
  open_and_paint(panel, dir, kReport);
  EXPECT_EQ(counter_events(panel.timings_trace()), 0);
}

// A group run as several kernels (here a convolution between its layout conversions) is labelled with their
// sum and count, not with its last kernel.
TEST(RunPanel, AGroupOfSeveralKernelsShowsTheirSum) {
  constexpr const char* kSplit = R"json({"graph": "conv_bn_relu", "plans": [
    {"name": "unfused", "kernels": [{"name": "cudnn_g0_conv", "group": "g:conv", "measured_us": 93.0}]},
    {"name": "fused", "kernels": [
      {"name": "fx_g0_conv_x_to_nhwc", "group": "g:conv", "measured_us": 25.0, "bytes_read": 26214400, "bytes_written": 26214400},
      {"name": "cudnn_g0_y", "group": "g:conv", "measured_us": 48.0, "bytes_read": 26214400, "bytes_written": 26214400},
      {"name": "fx_g0_conv_y_to_nchw", "group": "g:conv", "measured_us": 21.0, "bytes_read": 26214400, "bytes_written": 26214400}]}]})json";
  QTemporaryDir dir;
  RunPanel panel;
  const auto text = open_and_paint(panel, dir, kSplit);
  ASSERT_EQ(text.count(QStringLiteral("g:conv")), 1u);
  EXPECT_EQ(text.at(QStringLiteral("g:conv")), QStringLiteral("3 kernels: 94.0 µs · 150 MiB"));
}

}  // namespace
}  // namespace fx::app

namespace fx::app {
namespace {

// A report written by `fusion-cli run --json` on an H100 (relu_mul_add): the panel must read what the executor
// really writes, not only the hand-made report above.
TEST(RunReport, ReadsARealExecutorReport) {
  QFile f(QStringLiteral(FX_SOURCE_DIR "/tests/data/run-reports/relu_mul_add.h100.json"));
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  QString error;
  const auto report = parse_run_report(f.readAll(), &error);
  ASSERT_TRUE(report) << error.toStdString();
  ASSERT_EQ(report->plans.size(), 2u);
  const PlanRun* unfused = report->plan(QStringLiteral("unfused"));
  const PlanRun* fused = report->plan(QStringLiteral("fused"));
  ASSERT_TRUE(unfused && fused);
  EXPECT_EQ(unfused->kernels.size(), 3u);
  EXPECT_EQ(fused->kernels.size(), 1u);
  EXPECT_GT(unfused->total_us(), 1.5 * fused->total_us());  // 0.715 ms vs 0.347 ms measured
  ASSERT_TRUE(fused->total_bytes());                        // CUPTI bytes were measured in that run
  EXPECT_NEAR(*fused->total_bytes() / (1 << 20), 1035.0, 60.0);  // 3 reads + 1 write of 256 MiB
  ASSERT_TRUE(unfused->total_bytes());
  EXPECT_NEAR(*unfused->total_bytes() / *fused->total_bytes(), 2.0, 0.2);
  EXPECT_TRUE(report->speedup);
  EXPECT_FALSE(report->device.isEmpty());
  EXPECT_EQ(fused->kernels[0].library, QStringLiteral("generated (NVRTC)"));
}

}  // namespace
}  // namespace fx::app
