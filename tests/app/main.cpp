// GoogleTest main for the GUI tests: a QApplication must exist before any widget or scene.
#include <QApplication>
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // CTest sets offscreen for runs, but test discovery (--gtest_list_tests at build time) runs without it.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  Q_INIT_RESOURCE(fusion_explorer);
  QApplication::setOrganizationName(QStringLiteral("fusion-explorer-tests"));
  return RUN_ALL_TESTS();
}
