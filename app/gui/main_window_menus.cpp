// MainWindow's menus, tool bar and shortcuts.
#include <QActionGroup>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QInputDialog>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QToolBar>

#include <nlohmann/json.hpp>

#include "app/gui/candidates_panel.h"
#include "app/gui/compare_panel.h"
#include "app/gui/help_dialog.h"
#include "app/gui/graph_view.h"
#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "app/gui/samples.h"
#include "app/gui/side_by_side_view.h"

namespace fx::app {
namespace {
QIcon icon(const char* name) { return QIcon(QStringLiteral(":/icons/%1.svg").arg(QLatin1String(name))); }
}  // namespace

void MainWindow::build_menus() {
  build_file_menu();
  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  QAction* undo = session_->undo_stack()->createUndoAction(this, tr("&Undo"));
  undo->setShortcut(QKeySequence::Undo);
  undo->setIcon(icon("undo"));
  QAction* redo = session_->undo_stack()->createRedoAction(this, tr("&Redo"));
  redo->setShortcut(QKeySequence::Redo);
  redo->setIcon(icon("redo"));
  edit->addAction(undo);
  edit->addAction(redo);
  build_view_menu();
  build_fusion_menu();
  build_lessons_menu();
  build_help_menu();
}

void MainWindow::build_help_menu() {
  QMenu* m = menuBar()->addMenu(tr("&Help"));
  QAction* keys = m->addAction(icon("help"), tr("&Keyboard shortcuts"), this, [this] {
    HelpDialog(tr("Keyboard shortcuts"), shortcuts_html(this), this).exec();
  });
  keys->setShortcut(QKeySequence::HelpContents);
  m->addAction(tr("How to &read this picture"), this, [this] {
    HelpDialog(tr("How to read this picture"), reading_guide_html(), this).exec();
  });
  m->addSeparator();
  m->addAction(tr("&About Fusion Explorer"), this, [this] {
    QMessageBox::about(this, tr("About Fusion Explorer"),
                       tr("<b>Fusion Explorer</b><br>Operator fusion in deep-learning graphs: which ops share a "
                          "kernel, why others do not, and what a GPU measures."));
  });
}

void MainWindow::build_panels_menu(QMenu* view_menu) {
  // A closed panel comes back from here (and so do the tool bars).
  QMenu* panels = view_menu->addMenu(tr("&Panels"));
  for (QDockWidget* d : docks_) panels->addAction(d->toggleViewAction());
  panels->addSeparator();
  for (QToolBar* t : findChildren<QToolBar*>()) panels->addAction(t->toggleViewAction());
}

void MainWindow::build_file_menu() {
  QMenu* m = menuBar()->addMenu(tr("&File"));
  QToolBar* tb = addToolBar(tr("Main"));
  tb->setObjectName(QStringLiteral("toolbar.main"));
  QAction* open = m->addAction(icon("open"), tr("&Open…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open graph"), QSettings().value("files/dir").toString(),
                                                      open_filter());
    if (!path.isEmpty()) open_file(path);
  });
  open->setShortcut(QKeySequence::Open);
  tb->addAction(open);
  recent_menu_ = m->addMenu(tr("Open &recent"));
  update_recent_menu();
  QMenu* samples = m->addMenu(tr("&Samples"));
  fill_samples_menu(samples);
  m->addAction(tr("&Generate transformer…"), this, [this] {
    bool ok = false;
    const int layers = QInputDialog::getInt(this, tr("Generate transformer"), tr("Layers:"), 12, 1, 400, 1, &ok);
    if (ok) open_generated_transformer(layers);
  });
  m->addSeparator();
  QAction* save = m->addAction(icon("save"), tr("&Save session"), this, &MainWindow::save);
  save->setShortcut(QKeySequence::Save);
  m->addAction(tr("Save session &as…"), this, &MainWindow::save_as)->setShortcut(QKeySequence::SaveAs);
  QMenu* ex = m->addMenu(tr("&Export"));
  ex->addAction(tr("Fused graph JSON…"), this, &MainWindow::save_as);
  ex->addAction(tr("DOT…"), this, &MainWindow::export_dot);
  ex->addAction(tr("SVG of the view…"), this, [this] { export_view(QStringLiteral("svg")); });
  ex->addAction(tr("PNG of the view…"), this, [this] { export_view(QStringLiteral("png")); });
  ex->addAction(tr("Kernel timings CSV…"), this, [this] { export_timings(QStringLiteral("csv")); });
  ex->addAction(tr("Chrome trace…"), this, [this] { export_timings(QStringLiteral("trace")); });
  ex->addSeparator();
  ex->addAction(tr("Session &report (HTML)…"), this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export report"), {}, tr("HTML (*.html)"));
    if (path.isEmpty()) return;
    if (const QString error = export_report(path); !error.isEmpty()) QMessageBox::critical(this, tr("Export failed"), error);
  })->setToolTip(tr("One self-contained HTML file: pictures, plan, every decision, measurements, charts"));
  m->addSeparator();
  m->addAction(tr("Open run &report…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open run report"), {}, tr("Run reports (*.json)"));
    if (!path.isEmpty()) run_->open_report(path);
  });
  QAction* run = m->addAction(icon("run"), tr("Run on &GPU"), run_, &RunPanel::run);
  run->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  connect(run_, &RunPanel::availability_changed, run, [run](bool ok, const QString& why) {
    run->setEnabled(ok);
    run->setToolTip(why);
  });
  tb->addAction(run);
  m->addSeparator();
  m->addAction(tr("&Quit"), this, &QWidget::close)->setShortcut(QKeySequence::Quit);
  tb->addSeparator();
  tb->addAction(session_->undo_stack()->createUndoAction(tb));
  tb->actions().back()->setIcon(icon("undo"));
  tb->addAction(session_->undo_stack()->createRedoAction(tb));
  tb->actions().back()->setIcon(icon("redo"));
}

void MainWindow::build_view_menu() {
  QMenu* m = menuBar()->addMenu(tr("&View"));
  QToolBar* tb = addToolBar(tr("View"));
  tb->setObjectName(QStringLiteral("toolbar.view"));
  mode_actions_ = new QActionGroup(this);
  const std::pair<QString, ViewMode> modes[] = {{tr("&Before (unfused)"), ViewMode::unfused},
                                                {tr("&After (fused groups)"), ViewMode::fused},
                                                {tr("&Kernels (collapsed groups)"), ViewMode::collapsed}};
  int key = Qt::Key_1;
  for (const auto& [text, mode] : modes) {
    QAction* a = m->addAction(text, this, [this, mode = mode] { set_view_mode(mode); });
    a->setCheckable(true);
    a->setChecked(mode == mode_);
    a->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(key++)));
    a->setData(static_cast<int>(mode));
    mode_actions_->addAction(a);
    tb->addAction(a);
  }
  QAction* side = m->addAction(tr("Before | After (&side by side)"), this, [this] { set_side_by_side(true); });
  side->setCheckable(true);
  side->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_4));
  side->setToolTip(tr("The unfused and the fused graph in two panes with the same zoom and selection"));
  side->setData(-1);
  mode_actions_->addAction(side);
  tb->addAction(side);
  m->addSeparator();
  tb->addSeparator();
  // The graph's zoom follows the view (wheel, + and - over it, Fit, 1:1); the text size below scales every
  // font of the window for a projector.
  QAction* fit = m->addAction(icon("fit"), tr("&Fit to window"), this, [this] {
    for (GraphView* v : {view_, side_->view(SideBySideView::before)}) v->fit();
  });
  fit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_0));
  QAction* one = m->addAction(icon("one"), tr("Actual size (&1:1)"), view_, &GraphView::actual_size);
  one->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_0));
  m->addAction(icon("zoom_in"), tr("Zoom graph &in (+)"), view_, [this] { view_->zoom_by(1.25); });
  m->addAction(icon("zoom_out"), tr("Zoom graph &out (−)"), view_, [this] { view_->zoom_by(0.8); });
  tb->addAction(fit);
  tb->addAction(one);
  m->addSeparator();
  QAction* larger = m->addAction(tr("&Larger text"), this, [this] { set_ui_scale(ui_scale_ * 1.2); });
  larger->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Equal), QKeySequence(Qt::CTRL | Qt::Key_Plus)});
  QAction* smaller = m->addAction(tr("S&maller text"), this, [this] { set_ui_scale(ui_scale_ / 1.2); });
  smaller->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Minus));
  m->addAction(tr("Normal te&xt size"), this, [this] { set_ui_scale(1.0); });
  QAction* lr = m->addAction(tr("Left-to-right &layout"), this, [this](bool on) { set_left_to_right(on); });
  lr->setCheckable(true);
  lr->setChecked(left_to_right_);
  m->addSeparator();
  mark_rejected_ = m->addAction(tr("Mark &rejected edges"), this, &MainWindow::refresh_rejected_marks);
  mark_rejected_->setCheckable(true);
  mark_rejected_->setChecked(true);
  QAction* dark = m->addAction(tr("&Dark palette"), this, [this](bool on) {
    apply_palette(on);
    QSettings().setValue(QStringLiteral("view/dark"), on);
  });
  dark->setCheckable(true);
  dark->setChecked(QSettings().value(QStringLiteral("view/dark"), false).toBool());

  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Find node (Ctrl+F)"));
  search_->setClearButtonEnabled(true);
  search_->setMaximumWidth(220);
  tb->addSeparator();
  tb->addWidget(search_);
  connect(search_, &QLineEdit::returnPressed, this, &MainWindow::search_next);
  connect(search_, &QLineEdit::textChanged, this, [this] { search_index_ = 0; });
  QAction* find = m->addAction(tr("&Find node…"), this, [this] {
    search_->setFocus();
    search_->selectAll();
  });
  find->setShortcut(QKeySequence::Find);
  m->addSeparator();
  view_menu_ = m;
}

void MainWindow::build_fusion_menu() {
  QMenu* m = menuBar()->addMenu(tr("F&usion"));
  m->addAction(icon("accept"), tr("&Accept candidate"), this,
               [this] { if (!candidates_->current_id().isEmpty()) emit candidates_->accept_requested(candidates_->current_id()); });
  m->addAction(icon("reject"), tr("&Reject candidate"), this,
               [this] { if (!candidates_->current_id().isEmpty()) emit candidates_->reject_requested(candidates_->current_id()); });
  QAction* autofuse = m->addAction(icon("auto_fuse"), tr("Accept all &profitable"), this,
                                   [this] { if (session_->has_document()) emit candidates_->auto_fuse_requested(); });
  autofuse->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_A));
  QAction* why = m->addAction(icon("why_not"), tr("&Why not fused?"), this, &MainWindow::why_not_fused);
  why->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_W));
  why->setToolTip(tr("Select two nodes (Ctrl+click) or an edge, then ask the engine"));
  m->addAction(tr("&Compare with plan…"), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Compare with plan"), QSettings().value("files/dir").toString(),
                                                      tr("Plans (*.json);;All files (*)"));
    if (path.isEmpty()) return;
    if (compare_->load(path)) findChild<QDockWidget*>(QStringLiteral("dock.compare"))->raise();
    else QMessageBox::warning(this, tr("Compare with plan"), compare_->error());
  })->setToolTip(tr("Overlay another plan of this graph (e.g. Inductor's, from python -m fusion_explorer.inductor)"));
  QToolBar* tb = addToolBar(tr("Fusion"));
  tb->setObjectName(QStringLiteral("toolbar.fusion"));
  tb->addAction(autofuse);
  tb->addAction(why);
}

void MainWindow::fill_samples_menu(QMenu* menu) {
  const std::vector<SampleInfo> samples = find_samples();
  if (samples.empty()) menu->addAction(tr("(no sample_graphs folder found)"))->setEnabled(false);
  for (const SampleInfo& s : samples) {
    QAction* a = menu->addAction(s.name, this, [this, path = s.path] { open_file(path); });
    a->setToolTip(s.description);
    a->setStatusTip(s.description);
  }
  menu->setToolTipsVisible(true);
}

void MainWindow::update_recent_menu() {
  recent_menu_->clear();
  const QStringList recent = QSettings().value(QStringLiteral("files/recent")).toStringList();
  for (const QString& path : recent) recent_menu_->addAction(path, this, [this, path] { open_file(path); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::add_recent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value(QStringLiteral("files/recent")).toStringList();
  const QString abs = QFileInfo(path).absoluteFilePath();
  recent.removeAll(abs);
  recent.prepend(abs);
  while (recent.size() > 10) recent.removeLast();
  settings.setValue(QStringLiteral("files/recent"), recent);
  settings.setValue(QStringLiteral("files/dir"), QFileInfo(abs).absolutePath());
  update_recent_menu();
}

}  // namespace fx::app
