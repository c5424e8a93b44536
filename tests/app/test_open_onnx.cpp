// File > Open of an ONNX model goes through the importer (as `fusion-cli import` does), with its warnings
// shown in the status bar and a non-blocking box; the Open dialog offers *.onnx.
#include <QDir>
#include <QFileInfo>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QTemporaryDir>
#include <gtest/gtest.h>

#include "app/gui/main_window.h"
#include "app/gui/session.h"
#include "app/import/onnx_import.h"

namespace fx::app {
namespace {

// Det has no mapping: it imports as an opaque custom node, with a warning saying so.
const QString kDetModel = QStringLiteral("/usr/share/libonnx-testdata/data/node/test_det_2d/model.onnx");

#define REQUIRE_ONNX_MODEL()                                                                       \
  if (!onnx_import_available()) GTEST_SKIP() << "built without ONNX import (protobuf/libonnx)";   \
  if (!QFileInfo::exists(kDetModel)) GTEST_SKIP() << "libonnx-testdata is not installed (" << kDetModel.toStdString() << ")"

TEST(OpenOnnx, LoadDocumentImportsAModelWithItsWarnings) {
  REQUIRE_ONNX_MODEL();
  auto loaded = load_document(kDetModel, DeviceDescription::h200());
  ASSERT_TRUE(std::holds_alternative<LoadedDocument>(loaded)) << std::get<LoadFailure>(loaded).text().toStdString();
  const LoadedDocument& doc = std::get<LoadedDocument>(loaded);
  ASSERT_EQ(doc.graph->num_nodes(), 1u);
  EXPECT_EQ(doc.graph->node(0).op_id(), OpId::custom);
  ASSERT_FALSE(doc.warnings.isEmpty());
  EXPECT_TRUE(doc.warnings.front().contains(QStringLiteral("Det"))) << doc.warnings.front().toStdString();
}

TEST(OpenOnnx, ABrokenModelIsAnErrorNotJsonSyntax) {
  if (!onnx_import_available()) GTEST_SKIP() << "built without ONNX import (protobuf/libonnx)";
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("broken.onnx"));
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write("not protobuf \xff\xff");
  f.close();
  auto loaded = load_document(path, DeviceDescription::h200());
  ASSERT_TRUE(std::holds_alternative<LoadFailure>(loaded));
  const QString text = std::get<LoadFailure>(loaded).text();
  EXPECT_TRUE(text.contains(QStringLiteral("not an ONNX model"))) << text.toStdString();
  EXPECT_FALSE(text.contains(QStringLiteral("JSON"))) << text.toStdString();
}

TEST(OpenOnnx, TheWindowOpensAModelAndShowsTheWarnings) {
  REQUIRE_ONNX_MODEL();
  QTemporaryDir config;  // the window remembers recent files: never in the user's settings
  QSettings::setPath(QSettings::NativeFormat, QSettings::UserScope, config.path());
  MainWindow window;
  window.set_confirm_close(false);
  ASSERT_TRUE(window.open_file(kDetModel));
  EXPECT_EQ(window.session().graph().num_nodes(), 1u);
  const QString status = window.statusBar()->currentMessage();
  EXPECT_TRUE(status.contains(QStringLiteral("1 warning"))) << status.toStdString();
  EXPECT_TRUE(status.contains(QStringLiteral("Det"))) << status.toStdString();
  auto* box = window.findChild<QMessageBox*>();
  ASSERT_NE(box, nullptr);
  EXPECT_TRUE(box->informativeText().contains(QStringLiteral("opaque custom"))) << box->informativeText().toStdString();
}

TEST(OpenOnnx, TheOpenDialogOffersOnnxModels) {
  const QString filter = MainWindow::open_filter();
  const QString first = filter.section(QStringLiteral(";;"), 0, 0);  // the default choice
  EXPECT_TRUE(first.contains(QStringLiteral("*.onnx"))) << first.toStdString();
  EXPECT_TRUE(first.contains(QStringLiteral("*.json"))) << first.toStdString();
}

}  // namespace
}  // namespace fx::app
