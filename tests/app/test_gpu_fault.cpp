// A GPU run that ends in a GPU fault: fusion-cli exits with code 4 and writes a "gpu_fault" report; the run panel
// says what faulted (error, plan step, kernel, group), keeps no earlier run's measurements on screen, and goes on
// working. The report is tests/data/run-reports/gpu_fault.h100.json, which tests/kernels/test_fault_switch.cpp
// checks against the writer fusion-cli uses (core's to_json of kernels' fault_report), so this reads what fusion-cli
// writes.
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <gtest/gtest.h>

#include "app/gui/run_panel.h"
#include "app/gui/run_report.h"
#include "core/graph/graph_io.h"

namespace fx::app {
namespace {

const QString kFaultReport = QStringLiteral(FX_SOURCE_DIR "/tests/data/run-reports/gpu_fault.h100.json");
const QString kRealReport = QStringLiteral(FX_SOURCE_DIR "/tests/data/run-reports/relu_mul_add.h100.json");

QByteArray read(const QString& path) {
  QFile f(path);
  EXPECT_TRUE(f.open(QIODevice::ReadOnly)) << path.toStdString();
  return f.readAll();
}

TEST(RunFault, ReadsTheFaultReport) {
  QString error;
  const auto report = read_report(read(kFaultReport), &error);
  ASSERT_TRUE(report) << error.toStdString();
  ASSERT_TRUE(report->fault);
  const RunFault& fault = *report->fault;
  EXPECT_EQ(fault.error, "cudaErrorIllegalAddress");
  EXPECT_EQ(fault.code, 700);
  EXPECT_EQ(fault.plan, "fused");
  EXPECT_EQ(fault.step, 0);
  EXPECT_EQ(fault.kernel, "fx_g_mul");
  EXPECT_EQ(fault.group, "g:mul");
  EXPECT_EQ(fault.attribution, "exact");
  EXPECT_TRUE(describe_fault(fault).contains(QStringLiteral("this is the kernel that faulted")));
  EXPECT_TRUE(report->unfused.kernels.empty() && report->fused.kernels.empty());  // nothing measured
  const auto real = read_report(read(kRealReport), &error);
  ASSERT_TRUE(real) << error.toStdString();
  EXPECT_FALSE(real->fault);  // a completed run is no fault
}

TEST(RunFault, OpeningAFaultReportShowsNoMeasurements) {
  RunPanel panel;
  ASSERT_TRUE(panel.open_report(kRealReport));
  EXPECT_FALSE(panel.open_report(kFaultReport));
  EXPECT_FALSE(panel.report());
}

// Stands in for fusion-cli, which cannot fault without a GPU: answers the device probe, then behaves as
// fusion-cli run does on a fault (stderr line, the report at --json, exit code 4).
QString write_faulting_cli(const QTemporaryDir& dir) {
  const QString path = dir.filePath(QStringLiteral("fusion-cli"));
  const QString script = QStringLiteral(
      "#!/bin/sh\n"
      "graph=\"$2\"; json=\"\"\n"
      "while [ $# -gt 0 ]; do [ \"$1\" = --json ] && json=\"$2\"; shift; done\n"
      "case \"$graph\" in *probe.json) exit 0 ;; esac\n"
      "cp '%1' \"$json\"\n"
      "echo 'fusion-cli run: GPU fault: cudaErrorIllegalAddress (700, an illegal memory access was encountered)' >&2\n"
      "exit 4\n").arg(kFaultReport);
  EXPECT_TRUE(write_text_file_atomic(path.toStdString(), script.toStdString()));
  QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  return path;
}

TEST(RunFault, ThePanelSaysWhatFaultedAndKeepsWorking) {
  QTemporaryDir dir;
  const QByteArray old_cli = qgetenv("FX_CLI");
  qputenv("FX_CLI", write_faulting_cli(dir).toUtf8());
  {
    RunPanel panel;
    ASSERT_TRUE(QTest::qWaitFor([&] { return panel.device_available(); }, 10000));
    ASSERT_TRUE(panel.open_report(kRealReport));  // an earlier run's numbers, which must not survive the fault
    panel.set_document(dir.filePath(QStringLiteral("graph.json")), nullptr);
    QSignalSpy finished(&panel, &RunPanel::run_finished);
    panel.run();
    ASSERT_TRUE(finished.wait(10000));
    EXPECT_FALSE(finished.at(0).at(0).toBool());
    const QString message = finished.at(0).at(1).toString();
    EXPECT_TRUE(message.contains(QStringLiteral("cudaErrorIllegalAddress"))) << message.toStdString();
    EXPECT_TRUE(message.contains(QStringLiteral("fused plan, step 0: kernel fx_g_mul of group g:mul"))) << message.toStdString();
    EXPECT_TRUE(message.contains(QStringLiteral("nothing was measured"))) << message.toStdString();
    EXPECT_FALSE(panel.report());
    EXPECT_TRUE(panel.device_available());
    EXPECT_TRUE(panel.open_report(kRealReport));  // the panel still works
  }
  if (old_cli.isEmpty()) {
    qunsetenv("FX_CLI");
  } else {
    qputenv("FX_CLI", old_cli);
  }
}

}  // namespace
}  // namespace fx::app
