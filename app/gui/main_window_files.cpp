// MainWindow's file side: open (with the error dialog), save, exports, palette.
#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QPainter>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QStyleFactory>
#include <QSvgGenerator>

#include "app/gui/candidates_panel.h"
#include "app/gui/exports.h"
#include "app/gui/graph_scene.h"
#include "app/graphviz/plan_pictures.h"
#include "app/gui/graph_view.h"
#include "app/gui/lesson_pane.h"
#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "app/gui/whatif_panel.h"
#include "core/export/dot.h"
#include "core/export/timings_export.h"
#include "core/generate/transformer.h"
#include "core/graph/graph_io.h"
#include "core/report/session_report.h"

namespace fx::app {

QString MainWindow::open_filter() {
  return tr("Graphs and ONNX models (*.json *.onnx);;Graphs (*.json);;ONNX models (*.onnx);;All files (*)");
}

bool MainWindow::open_file(const QString& path, bool quiet) {
  picture_timer_.start();
  DeviceDescription device = session_->has_document() ? session_->device() : whatif_->device();
  auto loaded = load_document(path, device);
  if (auto* failure = std::get_if<LoadFailure>(&loaded)) {
    last_error_ = failure->text();
    if (!quiet) {
      QMessageBox box(QMessageBox::Critical, tr("Cannot open graph"),
                      tr("<b>%1</b> is not a valid graph; the current document stays open.")
                          .arg(QFileInfo(path).fileName().toHtmlEscaped()),
                      QMessageBox::Ok, this);
      QStringList lines;
      for (const Diagnostic& d : failure->errors) lines << QString::fromStdString(d.to_string()).toHtmlEscaped();
      const int shown = std::min<int>(12, static_cast<int>(lines.size()));
      box.setInformativeText(QStringLiteral("<pre>%1%2</pre>")
                                 .arg(lines.mid(0, shown).join('\n'),
                                      lines.size() > shown ? tr("\n… %1 more").arg(lines.size() - shown) : QString()));
      box.setDetailedText(last_error_);
      box.exec();
    }
    return false;
  }
  if (!maybe_save()) return false;
  add_recent(path);
  LoadedDocument& doc = std::get<LoadedDocument>(loaded);
  const QStringList warnings = doc.warnings;
  adopt(std::move(doc));
  if (!warnings.isEmpty()) show_import_warnings(path, warnings, quiet);
  return true;
}

// The importer's warnings, as `fusion-cli import` prints them: in the status bar, and (unless quiet) in a
// window-modal box that does not block the program.
void MainWindow::show_import_warnings(const QString& path, const QStringList& warnings, bool quiet) {
  const QString name = QFileInfo(path).fileName();
  statusBar()->showMessage(tr("Imported %1 with %n warning(s): %2", nullptr, static_cast<int>(warnings.size()))
                               .arg(name, warnings.front()),
                           30000);
  if (quiet) return;
  auto* box = new QMessageBox(QMessageBox::Warning, tr("Imported with warnings"),
                              tr("<b>%1</b> was imported; check these before trusting the plan:").arg(name.toHtmlEscaped()),
                              QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->setInformativeText(warnings.join('\n'));
  box->open();
}

void MainWindow::open_generated_transformer(int layers) {
  if (!maybe_save()) return;
  picture_timer_.start();
  TransformerShape shape;
  shape.layers = layers;
  auto graph = build_graph(transformer_spec(shape));
  if (!graph) return;
  auto loaded = document_from_graph(tr("transformer_%1_layers.json").arg(layers), std::move(*graph), whatif_->device());
  adopt(std::get<LoadedDocument>(std::move(loaded)));
}

bool MainWindow::maybe_save() {
  if (!confirm_close_ || !session_->has_document() || !session_->modified()) return true;
  const auto answer = QMessageBox::warning(this, tr("Unsaved decisions"),
                                           tr("The fusion decisions on %1 are not saved. Save them?")
                                               .arg(QFileInfo(session_->path()).fileName()),
                                           QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
  if (answer == QMessageBox::Cancel) return false;
  if (answer == QMessageBox::Save) {
    save();
    return !session_->modified();
  }
  return true;
}

void MainWindow::save() {
  if (!session_->has_document()) return;
  const QFileInfo info(session_->path());
  // Never overwrite a plain graph (a sample) with a session silently: sessions get their own name.
  if (!info.exists() || !info.fileName().endsWith(QLatin1String(".fused.json"))) {
    save_as();
    return;
  }
  const QString error = session_->save(session_->path());
  if (!error.isEmpty()) QMessageBox::critical(this, tr("Save failed"), error);
  update_title();
}

void MainWindow::save_as() {
  if (!session_->has_document()) return;
  const QFileInfo info(session_->path());
  const QString suggested = info.absolutePath() + '/' + info.completeBaseName().section('.', 0, 0) + ".fused.json";
  const QString path = QFileDialog::getSaveFileName(this, tr("Save session (fused graph)"), suggested,
                                                    tr("Fused graphs (*.fused.json *.json)"));
  if (path.isEmpty()) return;
  const QString error = session_->save(path);
  if (!error.isEmpty()) {
    QMessageBox::critical(this, tr("Save failed"), error);
    return;
  }
  add_recent(path);
  update_title();
  statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
}

void MainWindow::export_view(const QString& format) {
  if (scene_->drawing() == nullptr) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Export view"), {}, format.toUpper() + " (*." + format + ")");
  if (path.isEmpty()) return;
  const QString error = format == QLatin1String("svg") ? export_scene_svg(*scene_, path) : export_scene_png(*scene_, path);
  if (!error.isEmpty()) QMessageBox::critical(this, tr("Export failed"), error);
}

void MainWindow::export_dot() {
  if (!session_->has_document()) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Export DOT"), {}, tr("DOT (*.dot *.gv)"));
  if (path.isEmpty()) return;
  const QString error = write_file_atomic(path, QByteArray::fromStdString(plan_to_dot(session_->engine())));
  if (!error.isEmpty()) QMessageBox::critical(this, tr("Export failed"), error);
}

QString MainWindow::export_report(const QString& path) {
  if (!session_->has_document()) return tr("Open a graph first.");
  const FusionEngine& engine = session_->engine();
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  // The measurements: the report the Measurements panel shows, else the run bundled with the open lesson; either
  // only where it measured this graph.
  std::optional<RunReport> run;
  if (run_->report() && run_mismatch(*run_->report(), engine.graph()).empty()) run = run_->report();
  if (!run && lesson_ && lesson_->lesson() && lesson_->lesson()->run &&
      lesson_->lesson()->lesson.graph == engine.graph().name())
    run = lesson_->lesson()->run->report;
  SessionReportInput input{&engine, &unfused, tr("this session (%n decision(s) in its log)", nullptr,
                                                  static_cast<int>(engine.log().size())).toStdString(),
                           {}, {}, {}, run ? &*run : nullptr};
  render_plan_pictures(input);
  return write_file_atomic(path, QByteArray::fromStdString(session_report_html(input)));
}

void MainWindow::export_timings(const QString& format) {
  const std::vector<KernelTimingRow> rows = run_->timing_rows();
  if (rows.empty()) {
    QMessageBox::information(this, tr("No timings"), tr("Run on a GPU or open a run report first."));
    return;
  }
  const bool csv = format == QLatin1String("csv");
  const QString path = QFileDialog::getSaveFileName(this, tr("Export timings"), {},
                                                    csv ? tr("CSV (*.csv)") : tr("Chrome trace (*.json)"));
  if (path.isEmpty()) return;
  const std::string text = csv ? timings_to_csv(rows) : run_->timings_trace();
  const QString error = write_file_atomic(path, QByteArray::fromStdString(text));
  if (!error.isEmpty()) QMessageBox::critical(this, tr("Export failed"), error);
}

void MainWindow::apply_palette(bool dark) {
  QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  QPalette p = QApplication::style()->standardPalette();
  if (dark) {
    p.setColor(QPalette::Window, QColor("#2b2d30"));
    p.setColor(QPalette::WindowText, QColor("#e8e8e8"));
    p.setColor(QPalette::Base, QColor("#1e1f22"));
    p.setColor(QPalette::AlternateBase, QColor("#2b2d30"));
    p.setColor(QPalette::Text, QColor("#e8e8e8"));
    p.setColor(QPalette::Button, QColor("#3c3f41"));
    p.setColor(QPalette::ButtonText, QColor("#e8e8e8"));
    p.setColor(QPalette::ToolTipBase, QColor("#3c3f41"));
    p.setColor(QPalette::ToolTipText, QColor("#e8e8e8"));
    p.setColor(QPalette::Highlight, QColor("#2f65ca"));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Link, QColor("#8ab4f8"));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor("#808080"));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor("#808080"));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor("#808080"));
  }
  QApplication::setPalette(p);
  set_scene_colors(dark ? SceneColors::dark() : SceneColors::light());
  scene_->setBackgroundBrush(scene_colors().background);
  scene_->update();
}

}  // namespace fx::app
