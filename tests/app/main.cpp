// GoogleTest main for the GUI tests: a QApplication must exist before any widget or scene.
#include <QApplication>
#include <QTemporaryDir>
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // CTest sets offscreen for runs, but test discovery (--gtest_list_tests at build time) runs without it.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  // Settings and caches the tests write (window state, recent files) go to a directory of their own.
  QTemporaryDir home;
  qputenv("XDG_CONFIG_HOME", home.filePath(QStringLiteral("config")).toUtf8());
  qputenv("XDG_CACHE_HOME", home.filePath(QStringLiteral("cache")).toUtf8());
  QApplication app(argc, argv);
  Q_INIT_RESOURCE(fusion_explorer);
  QApplication::setOrganizationName(QStringLiteral("fusion-explorer-tests"));
  return RUN_ALL_TESTS();
}
