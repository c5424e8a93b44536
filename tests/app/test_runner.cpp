// The child-process runner: a child that crashes is reported with its stderr and never takes the test (the
// GUI) down; progress lines are parsed. (The run report in the panel: test_run_panel.cpp.)
#include <QCoreApplication>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTest>
#include <QTemporaryDir>
#include <gtest/gtest.h>

#include "app/gui/child_runner.h"
#include "app/gui/run_report.h"
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

TEST(ChildRunner, ParsesProgressLines) {
  const auto p = parse_progress_line(QStringLiteral(R"({"step": 2, "total": 5, "message": "fused plan"})"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->total, 5);
  const auto run = parse_progress_line(QStringLiteral(R"({"step": "compile", "progress": 0.4, "message": "fused plan"})"));
  ASSERT_TRUE(run);
  EXPECT_EQ(run->step, 400);
  EXPECT_EQ(run->message, QStringLiteral("compile: fused plan"));
  EXPECT_FALSE(parse_progress_line(QStringLiteral("compiling...")));
}

}  // namespace
}  // namespace fx::app
