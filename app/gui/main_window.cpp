#include "app/gui/main_window.h"

#include <QCloseEvent>
#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QSettings>
#include <QTimer>
#include <QApplication>
#include <QJsonDocument>
#include <QJsonObject>
#include <QStackedWidget>
#include <QStatusBar>
#include <QUndoView>

#include <nlohmann/json.hpp>

#include "app/gui/candidates_panel.h"
#include "app/gui/compare_panel.h"
#include "app/gui/explain_panel.h"
#include "app/gui/graph_scene.h"
#include "app/gui/graph_view.h"
#include "app/gui/layout_runner.h"
#include "app/gui/navigation.h"
#include "app/gui/run_panel.h"
#include "app/gui/side_by_side_view.h"
#include "app/gui/scope_view.h"
#include "app/gui/whatif_panel.h"
#include "core/graph/content_hash.h"
#include "core/graph/graph_json.h"

namespace fx::app {
namespace {
QString qs(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setObjectName(QStringLiteral("MainWindow"));
  session_ = new Session(this);
  scene_ = new GraphScene(this);
  view_ = new GraphView(this);
  view_->setScene(scene_);
  side_ = new SideBySideView(this);
  central_ = new QStackedWidget(this);
  central_->addWidget(view_);
  central_->addWidget(side_);
  setCentralWidget(central_);
  base_font_ = QApplication::font();
  left_to_right_ = QSettings().value(QStringLiteral("view/left_to_right"), false).toBool();
  layout_ = new LayoutRunner(this);
  setAcceptDrops(true);

  build_docks();
  build_menus();
  build_status_bar();
  build_navigation();
  build_panels_menu(view_menu_);  // after every dock and tool bar exists

  connect(layout_, &LayoutRunner::finished, this, &MainWindow::on_layout_finished);
  connect(layout_, &LayoutRunner::failed, this, [this](const QString& m) { statusBar()->showMessage(m, 8000); });
  connect(session_, &Session::plan_changed, this, &MainWindow::on_plan_changed);
  connect(session_->undo_stack(), &QUndoStack::cleanChanged, this, &MainWindow::update_title);
  connect(scene_, &QGraphicsScene::selectionChanged, this, &MainWindow::on_selection_changed);
  connect(side_->scene(SideBySideView::after), &QGraphicsScene::selectionChanged, this, &MainWindow::on_selection_changed);
  connect(side_, &SideBySideView::ready, this, &MainWindow::on_side_by_side_ready);
  connect(side_, &SideBySideView::failed, this, [this](const QString& m) { statusBar()->showMessage(m, 8000); });
  connect(view_, &GraphView::files_dropped, this, [this](const QStringList& paths) { open_file(paths.front()); });
  connect(view_, &GraphView::zoom_changed, this,
          [this](double z) {
            // A 100,000-node picture fitted whole is under 1%: say how far under, not "0%".
            status_zoom_->setText(z < 0.01 ? tr("%1%").arg(z * 100, 0, 'f', 2) : tr("%1%").arg(qRound(z * 100)));
          });

  QSettings settings;
  restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  docks_sized_ = restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  apply_palette(settings.value(QStringLiteral("view/dark"), false).toBool());
  set_ui_scale(settings.value(QStringLiteral("view/ui_scale"), 1.0).toDouble());
  update_title();
  update_status();
}

// The scenes and the session are deleted with the window; clearing a scene emits selectionChanged and
// destroying the undo stack emits cleanChanged, neither of which may reach the half-destroyed window.
MainWindow::~MainWindow() {
  scene_->disconnect(this);
  session_->disconnect(this);
  session_->undo_stack()->disconnect(this);
  side_->scene(SideBySideView::after)->disconnect(this);
}

void MainWindow::build_docks() {
  // Panels of fixed parts (charts, forms) scroll inside their dock rather than hold it at their full height:
  // tabbed with a table or under the Explanation, they would otherwise take the room the docks are given.
  auto dock = [this](const QString& title, const QString& name, QWidget* w, Qt::DockWidgetArea area, bool scroll = false) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    if (scroll) {
      auto* area_widget = new QScrollArea(d);
      area_widget->setWidgetResizable(true);
      area_widget->setFrameShape(QFrame::NoFrame);
      area_widget->setWidget(w);
      d->setWidget(area_widget);
    } else {
      d->setWidget(w);
    }
    addDockWidget(area, d);
    docks_.push_back(d);
    return d;
  };
  // The right-hand panels run the full height: the Explanation keeps its room when the bottom dock is open.
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
  setCorner(Qt::TopRightCorner, Qt::RightDockWidgetArea);
  candidates_ = new CandidatesPanel(this);
  explain_ = new ExplainPanel(this);
  whatif_ = new WhatIfPanel(this);
  run_ = new RunPanel(this);
  run_->set_plan_provider([this] { return session_->has_document() ? session_->engine().save_fused_graph() : std::string(); });
  history_ = new QUndoView(session_->undo_stack(), this);
  history_->setEmptyLabel(tr("<unfused graph>"));
  QDockWidget* cand = dock(tr("Candidates"), QStringLiteral("dock.candidates"), candidates_, Qt::BottomDockWidgetArea);
  QDockWidget* runs = dock(tr("Measurements"), QStringLiteral("dock.run"), run_, Qt::BottomDockWidgetArea, true);
  tabifyDockWidget(cand, runs);
  cand->raise();
  connect(run_, &RunPanel::report_shown, runs, &QDockWidget::raise);  // an opened or finished run is shown
  QDockWidget* expl = dock(tr("Explanation"), QStringLiteral("dock.explain"), explain_, Qt::RightDockWidgetArea);
  explain_dock_ = expl;
  QDockWidget* what = dock(tr("What if"), QStringLiteral("dock.whatif"), whatif_, Qt::RightDockWidgetArea, true);
  QDockWidget* hist = dock(tr("History"), QStringLiteral("dock.history"), history_, Qt::RightDockWidgetArea);
  tabifyDockWidget(what, hist);
  compare_ = new ComparePanel(session_, scene_, this);
  QDockWidget* comp = dock(tr("Compare"), QStringLiteral("dock.compare"), compare_, Qt::RightDockWidgetArea, true);
  tabifyDockWidget(hist, comp);
  connect(this, &MainWindow::picture_ready, compare_, &ComparePanel::apply_overlay);  // a relayout makes new items
  what->raise();  // the tab under the Explanation: its smallest panel, so the Explanation keeps the height
  expl->raise();

  connect(candidates_, &CandidatesPanel::candidate_selected, this,
          [this](const QString& id, const std::vector<NodeId>& nodes) {
            scene_->highlight(nodes);
            if (auto c = session_->engine().candidate(id.toStdString())) explain_->show_candidate(*session_, *c);
          });
  connect(candidates_, &CandidatesPanel::accept_requested, this, [this](const QString& id) {
    const FusionDecision d = session_->accept(id);
    statusBar()->showMessage(d.fuse ? tr("Accepted %1").arg(id) : tr("Not fused: %1").arg(qs(d.message)), 6000);
  });
  connect(candidates_, &CandidatesPanel::reject_requested, this, [this](const QString& id) {
    session_->reject(id);
    statusBar()->showMessage(tr("Rejected %1").arg(id), 6000);
  });
  connect(candidates_, &CandidatesPanel::auto_fuse_requested, this, [this] {
    const int merges = session_->auto_fuse();
    statusBar()->showMessage(tr("Auto-fuse made %n merge(s)", nullptr, merges), 6000);
  });
  connect(whatif_, &WhatIfPanel::what_if_changed, this,
          [this](const EngineOptions& o, const DeviceDescription& d) {
            if (session_->has_document()) session_->set_what_if(o, d);
          });
  connect(run_, &RunPanel::measured_changed, this, &MainWindow::paint_measured);
  connect(run_, &RunPanel::load_plan_requested, this, &MainWindow::load_measured_plan);
  // A failed run (a GPU fault included) is named in the status bar too; the run panel holds the details.
  connect(run_, &RunPanel::run_finished, this, [this](bool ok, const QString& message) {
    if (!ok) statusBar()->showMessage(message.section(QLatin1Char('\n'), 0, 0), 15000);
  });
}

void MainWindow::build_status_bar() {
  status_nodes_ = new QLabel(this);
  status_kernels_ = new QLabel(this);
  status_kernels_->setObjectName(QStringLiteral("status.kernels"));
  status_traffic_ = new QLabel(this);
  status_zoom_ = new QLabel(tr("100%"), this);
  for (QLabel* l : {status_nodes_, status_kernels_, status_traffic_, status_zoom_}) statusBar()->addPermanentWidget(l);
}

void MainWindow::adopt(LoadedDocument doc) {
  scopes_->reset();
  changed_nodes_.clear();
  session_->set_document(std::move(doc));
  whatif_->set_from(session_->engine().options(), session_->device());
  run_->set_document(session_->path(), session_->graph_ptr());
  graph_hash_ = QString::fromStdString(graph_content_hash(session_->graph()));
  last_answer_.reset();
  explain_->clear();
  update_title();
  fit_pending_ = true;
  on_plan_changed();
}

bool MainWindow::layout_busy() const { return layout_->busy(); }

void MainWindow::accept_all_profitable() {
  if (session_->has_document()) emit candidates_->auto_fuse_requested();
}

void MainWindow::set_view_mode(ViewMode mode) {
  mode_ = mode;
  side_by_side_ = false;
  relayout();
}

void MainWindow::set_side_by_side(bool on) {
  side_by_side_ = on;
  relayout();
}

void MainWindow::set_left_to_right(bool on) {
  left_to_right_ = on;
  QSettings().setValue(QStringLiteral("view/left_to_right"), on);
  relayout();
}

void MainWindow::set_ui_scale(double scale) {
  ui_scale_ = std::clamp(scale, 0.75, 3.0);
  QFont f = base_font_;
  if (f.pointSizeF() > 0) f.setPointSizeF(base_font_.pointSizeF() * ui_scale_);
  QApplication::setFont(f);
  set_text_scale(ui_scale_);
  QSettings().setValue(QStringLiteral("view/ui_scale"), ui_scale_);
  relayout();  // the boxes are measured with the new fonts
}

bool MainWindow::load_measured_plan(const QJsonObject& fusion) {
  if (!session_->has_document()) return false;
  nlohmann::json doc = graph_to_json(session_->graph());
  doc["fusion"] = nlohmann::json::parse(QJsonDocument(fusion).toJson(QJsonDocument::Compact).toStdString(), nullptr, false);
  auto engine = FusionEngine::load_fused_graph(doc.dump(), session_->device(), session_->engine().options());
  if (!engine) {
    statusBar()->showMessage(tr("The report's plan does not fit the open graph: %1")
                                 .arg(QString::fromStdString(format_diagnostics(engine.errors()))), 10000);
    return false;
  }
  const std::optional<RunReport> report = run_->report();
  auto shared = std::make_shared<FusionEngine>(std::move(*engine));
  adopt(LoadedDocument{session_->path(), session_->graph_ptr(), shared, {}});
  run_->set_report(report);  // checked again: now the plan on screen is the one measured
  statusBar()->showMessage(tr("Loaded the plan the report measured"), 6000);
  return true;
}

void MainWindow::on_plan_changed() {
  if (!session_->has_document()) return;
  run_->set_expected(QString::fromStdString(session_->graph().name()), graph_hash_,
                     QString::fromStdString(plan_content_hash(session_->graph(), session_->engine().plan())));
  last_answer_.reset();
  candidates_->refresh(&session_->engine());
  update_status();
  update_title();
  note_changed_nodes();
  relayout();
}

void MainWindow::update_status() {
  if (!session_->has_document()) {
    status_nodes_->setText(tr("No graph"));
    status_kernels_->clear();
    status_traffic_->clear();
    return;
  }
  const FusionEngine& e = session_->engine();
  const Plan unfused = Plan::unfused(e.graph(), e.cost_model());
  status_nodes_->setText(tr("%1 nodes").arg(e.graph().num_nodes()));
  status_kernels_->setText(tr("kernels %1 → %2").arg(unfused.kernel_count()).arg(e.plan().kernel_count()));
  // Views (a reshape alone) are groups of the plan but launch nothing: not counted, and said so.
  status_kernels_->setToolTip(tr("Kernels launched before → after fusion. Views launch none and are not counted: "
                                 "%1 before, %2 after (a reshape alone reads its input's buffer as it is).")
                                  .arg(unfused.view_count())
                                  .arg(e.plan().view_count()));
  status_traffic_->setText(tr("traffic %1 → %2, %3 → %4 µs")
                               .arg(qs(format_bytes(static_cast<double>(unfused.bytes_moved()))),
                                    qs(format_bytes(static_cast<double>(e.plan().bytes_moved()))))
                               .arg(unfused.predicted_time_s() * 1e6, 0, 'f', 1)
                               .arg(e.plan().predicted_time_s() * 1e6, 0, 'f', 1));
}

void MainWindow::update_title() {
  const QString name = session_->has_document() ? QFileInfo(session_->path()).fileName() : tr("no graph");
  setWindowTitle(tr("%1[*] — Fusion Explorer").arg(name));
  setWindowModified(session_->has_document() && session_->modified());
}

void MainWindow::search_next() { find_next(search_->text()); }

void MainWindow::showEvent(QShowEvent* event) {
  QMainWindow::showEvent(event);
  if (docks_sized_) return;
  docks_sized_ = true;
  // After the first layout pass: docks resized before the window has its size keep their size hints.
  QTimer::singleShot(0, this, [this] { apply_default_dock_sizes(); });
}

// The Explanation is what people read: about a third of the width and most of the right column's height; the
// bottom panels a quarter of the height; the graph the rest.
void MainWindow::apply_default_dock_sizes() {
  auto named = [this](const char* name) { return findChild<QDockWidget*>(QLatin1String(name)); };
  resizeDocks({explain_dock_}, {std::clamp(width() * 3 / 10, 380, 640)}, Qt::Horizontal);
  resizeDocks({named("dock.candidates")}, {std::clamp(height() / 4, 150, 260)}, Qt::Vertical);
  resizeDocks({explain_dock_, named("dock.whatif")}, {height() * 7 / 10, height() * 3 / 10}, Qt::Vertical);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!maybe_save()) {
    event->ignore();
    return;
  }
  run_->cancel();
  session_->discard_autosave();
  if (instructor_mode_) make_room_for_lesson(false);  // the saved layout keeps the panels instructor mode closed
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  event->accept();
}

}  // namespace fx::app
