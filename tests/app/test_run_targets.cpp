// The run panel's "Run on" menu: saved targets listed and remembered, bad URLs refused, and a run on a remote
// target through a real sshd on 127.0.0.1 (tests/remote/sshd_fixture.h) that comes back with the target's name.
#include <QAction>
#include <QMenu>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <gtest/gtest.h>

#include <fstream>

#include "app/gui/run_panel.h"
#include "app/gui/run_report.h"
#include "app/gui/run_targets_menu.h"
#include "app/remote/ssh.h"
#include "tests/remote/sshd_fixture.h"

namespace fx::app {
namespace {

class RunTargets : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(config_.isValid());
    qputenv("XDG_CONFIG_HOME", config_.path().toUtf8());  // targets.json and QSettings stay in the test's folder
    QDir().mkpath(config_.filePath(QStringLiteral("fusion-explorer")));
  }
  void write_targets(const std::string& json) {
    std::ofstream(config_.filePath(QStringLiteral("fusion-explorer/targets.json")).toStdString()) << json;
  }
  static QStringList entries(RunTargetsMenu& m) {
    QStringList out;
    for (QAction* a : m.menu()->actions())
      if (!a->isSeparator()) out << a->text();
    return out;
  }
  QTemporaryDir config_;
};

TEST_F(RunTargets, MenuListsSavedTargetsAndRemembersTheChoice) {
  write_targets(R"({"targets": [{"name": "lab", "url": "ssh://me@lab-gpu:2222"},
                                {"name": "cluster", "url": "slurm://login?partition=gpu&gpus=1"}]})");
  RunTargetsMenu menu;
  EXPECT_EQ(menu.text(), QStringLiteral("Run on: this computer"));
  EXPECT_EQ(entries(menu), (QStringList{QStringLiteral("This computer"), QStringLiteral("lab  —  ssh://me@lab-gpu:2222"),
                                        QStringLiteral("cluster  —  slurm://login?partition=gpu&gpus=1"),
                                        QStringLiteral("Add a target…")}));
  QSignalSpy changed(&menu, &RunTargetsMenu::target_changed);
  menu.menu()->actions().at(2)->trigger();  // "cluster"
  EXPECT_EQ(changed.count(), 1);
  EXPECT_EQ(menu.current().name, "cluster");
  EXPECT_EQ(menu.current().kind, fx::remote::RunTarget::Kind::slurm);
  EXPECT_EQ(menu.text(), QStringLiteral("Run on: cluster"));
  RunTargetsMenu again;  // the choice is kept in the settings
  EXPECT_EQ(again.current().name, "cluster");
  EXPECT_TRUE(entries(again).contains(QStringLiteral("Remove “cluster”")));
}

TEST_F(RunTargets, AddingRefusesBadUrlsAndSavesGoodOnes) {
  RunTargetsMenu menu;
  QString error;
  EXPECT_FALSE(menu.add_target(QStringLiteral("x"), QStringLiteral("ssh://-oProxyCommand=evil"), &error));
  EXPECT_TRUE(error.contains(QStringLiteral("host name"))) << error.toStdString();
  EXPECT_FALSE(menu.add_target(QStringLiteral("x"), QStringLiteral("local"), &error));
  ASSERT_TRUE(menu.add_target(QStringLiteral("box"), QStringLiteral("ssh://box:2200?timeout=4"), &error)) << error.toStdString();
  EXPECT_EQ(menu.current().port, 2200);
  std::string load_error;
  const auto saved = fx::remote::load_targets(fx::remote::targets_file(), &load_error);
  ASSERT_EQ(saved.size(), 1u);
  EXPECT_EQ(saved[0].name, "box");
  EXPECT_EQ(saved[0].connect_timeout_s, 4);
  menu.remove_target(QStringLiteral("box"));
  EXPECT_FALSE(menu.current().remote());
  EXPECT_TRUE(fx::remote::load_targets(fx::remote::targets_file(), &load_error).empty());
}

TEST(RunProgress, FusionCliLinesAndTheQueuesPlaceMoveTheBar) {
  // fusion-cli run --progress (local, or streamed back from a target): a named step and a fraction of the run.
  const auto p = parse_progress_line(QStringLiteral(R"({"step": "compile", "progress": 0.25, "message": "4 kernels"})"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->step, 250);
  EXPECT_EQ(p->total, 1000);
  EXPECT_EQ(p->message, QStringLiteral("compile: 4 kernels"));  // the stage leads, as fusion-cli prints it
  const auto q = parse_progress_line(QStringLiteral(
      R"({"step": "queue", "progress": 0.0, "message": "waiting for a shared GPU: 2 runs ahead of yours in the queue", "queue_position": 3})"));
  ASSERT_TRUE(q);
  EXPECT_EQ(q->step, 0);
  EXPECT_TRUE(q->message.contains(QStringLiteral("2 runs ahead")));
  EXPECT_FALSE(parse_progress_line(QStringLiteral("speedup 2.0x")));
}

TEST_F(RunTargets, PanelRunsOnARemoteTargetAndNamesItWhenThereIsNoGpu) {
  QTemporaryDir server_dir, runtime;
  fx::remote::test::SshServer server(server_dir.path().toStdString());
  if (!server.ok()) GTEST_SKIP() << "no OpenSSH server to test against: " << server.why();
  qputenv("FX_SSH_CONFIG", QByteArray::fromStdString(server.config()));
  qputenv("XDG_RUNTIME_DIR", runtime.path().toUtf8());
  const QString cli = find_fusion_cli();
  ASSERT_FALSE(cli.isEmpty());
  write_targets(R"({"targets": [{"name": "workshop", "url": "ssh://fxtest?cli=)" + cli.toStdString() + R"("}]})");
  RunPanel panel;
  panel.targets()->reload();
  panel.targets()->choose(QStringLiteral("workshop"));
  auto* run = panel.findChild<QPushButton*>();
  ASSERT_TRUE(run);
  EXPECT_TRUE(run->isEnabled());  // a remote target is tried whatever this computer has
  EXPECT_TRUE(run->toolTip().contains(QStringLiteral("on workshop (ssh://fxtest")));
  panel.set_document(QStringLiteral(FX_SOURCE_DIR "/sample_graphs/relu_mul_add.json"), nullptr);
  QSignalSpy finished(&panel, &RunPanel::run_finished);
  panel.run();
  ASSERT_TRUE(finished.wait(120000));
  EXPECT_FALSE(finished.at(0).at(0).toBool());
  const QString message = finished.at(0).at(1).toString();
  EXPECT_TRUE(message.contains(QStringLiteral("exited with code 3"))) << message.toStdString();
  EXPECT_TRUE(message.contains(QStringLiteral("no CUDA device on target workshop"))) << message.toStdString();
  EXPECT_TRUE(panel.findChild<QPlainTextEdit*>()->toPlainText().contains(QStringLiteral("--target workshop")));
  fx::remote::Ssh(*fx::remote::parse_target_url("ssh://fxtest", nullptr)).close_master();
}

}  // namespace
}  // namespace fx::app
