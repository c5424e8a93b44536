#include "app/gui/main_window.h"

#include <QCloseEvent>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QStatusBar>
#include <QUndoView>

#include "app/gui/candidates_panel.h"
#include "app/gui/compare_panel.h"
#include "app/gui/explain_panel.h"
#include "app/gui/graph_scene.h"
#include "app/gui/graph_view.h"
#include "app/gui/layout_runner.h"
#include "app/gui/navigation.h"
#include "app/gui/run_panel.h"
#include "app/gui/scope_view.h"
#include "app/gui/whatif_panel.h"

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
  setCentralWidget(view_);
  layout_ = new LayoutRunner(this);
  setAcceptDrops(true);

  build_docks();
  build_menus();
  build_status_bar();
  build_navigation();

  connect(layout_, &LayoutRunner::finished, this, &MainWindow::on_layout_finished);
  connect(layout_, &LayoutRunner::failed, this, [this](const QString& m) { statusBar()->showMessage(m, 8000); });
  connect(session_, &Session::plan_changed, this, &MainWindow::on_plan_changed);
  connect(session_->undo_stack(), &QUndoStack::cleanChanged, this, &MainWindow::update_title);
  connect(scene_, &QGraphicsScene::selectionChanged, this, &MainWindow::on_selection_changed);
  connect(view_, &GraphView::files_dropped, this, [this](const QStringList& paths) { open_file(paths.front()); });
  connect(view_, &GraphView::zoom_changed, this,
          [this](double z) {
            // A 100,000-node picture fitted whole is under 1%: say how far under, not "0%".
            status_zoom_->setText(z < 0.01 ? tr("%1%").arg(z * 100, 0, 'f', 2) : tr("%1%").arg(qRound(z * 100)));
          });

  QSettings settings;
  restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  apply_palette(settings.value(QStringLiteral("view/dark"), false).toBool());
  update_title();
  update_status();
}

MainWindow::~MainWindow() = default;

void MainWindow::build_docks() {
  auto dock = [this](const QString& title, const QString& name, QWidget* w, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  candidates_ = new CandidatesPanel(this);
  explain_ = new ExplainPanel(this);
  whatif_ = new WhatIfPanel(this);
  run_ = new RunPanel(this);
  run_->set_plan_provider([this] { return session_->has_document() ? session_->engine().save_fused_graph() : std::string(); });
  history_ = new QUndoView(session_->undo_stack(), this);
  history_->setEmptyLabel(tr("<unfused graph>"));
  QDockWidget* cand = dock(tr("Candidates"), QStringLiteral("dock.candidates"), candidates_, Qt::BottomDockWidgetArea);
  QDockWidget* runs = dock(tr("Measurements"), QStringLiteral("dock.run"), run_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(cand, runs);
  cand->raise();
  connect(run_, &RunPanel::report_shown, runs, &QDockWidget::raise);  // an opened or finished run is shown
  QDockWidget* expl = dock(tr("Explanation"), QStringLiteral("dock.explain"), explain_, Qt::RightDockWidgetArea);
  QDockWidget* what = dock(tr("What if"), QStringLiteral("dock.whatif"), whatif_, Qt::RightDockWidgetArea);
  QDockWidget* hist = dock(tr("History"), QStringLiteral("dock.history"), history_, Qt::RightDockWidgetArea);
  tabifyDockWidget(what, hist);
  compare_ = new ComparePanel(session_, scene_, this);
  QDockWidget* comp = dock(tr("Compare"), QStringLiteral("dock.compare"), compare_, Qt::RightDockWidgetArea);
  tabifyDockWidget(hist, comp);
  connect(this, &MainWindow::picture_ready, compare_, &ComparePanel::apply_overlay);  // a relayout makes new items
  expl->raise();
  resizeDocks({expl}, {440}, Qt::Horizontal);
  resizeDocks({cand}, {230}, Qt::Vertical);

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
  connect(run_, &RunPanel::measured_groups, this, [this](const std::map<QString, QString>& by_group) {
    const DrawnGraph* d = scene_->drawing();
    if (d == nullptr) return;
    std::vector<QString> per_group(d->groups.size());
    for (std::size_t i = 0; i < d->groups.size(); ++i) {
      auto it = by_group.find(d->groups[i].id);
      if (it != by_group.end()) per_group[i] = it->second;
    }
    scene_->set_measured(per_group);
  });
  // A failed run (a GPU fault included) is named in the status bar too; the run panel holds the details.
  connect(run_, &RunPanel::run_finished, this, [this](bool ok, const QString& message) {
    if (!ok) statusBar()->showMessage(message.section(QLatin1Char('\n'), 0, 0), 15000);
  });
}

void MainWindow::build_status_bar() {
  status_nodes_ = new QLabel(this);
  status_kernels_ = new QLabel(this);
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
  relayout();
}

void MainWindow::relayout() {
  if (!session_->has_document()) {
    scene_->clear_drawing();
    return;
  }
  const Graph& g = session_->graph();
  // A large graph is drawn by scope (collapsed as far as it must be): no question to answer, and dot only ever
  // sees a few hundred boxes at a time.
  std::shared_ptr<const DrawnGraph> drawing =
      ScopeView::applies(g) ? scopes_->drawing(g, session_->group_infos(), mode_)
                            : std::make_shared<const DrawnGraph>(build_drawing(g, session_->group_infos(), mode_));
  // After an open the clock runs from the open (load + analysis + layout); otherwise from here.
  if (!fit_pending_) picture_timer_.start();
  statusBar()->showMessage(tr("Laying out %1 boxes…").arg(drawing->nodes.size()));
  layout_->start(std::move(drawing));
}

void MainWindow::on_layout_finished(std::shared_ptr<const DrawnGraph> drawing, const LayoutResult& result) {
  const QPointF centre = view_->mapToScene(view_->viewport()->rect().center());
  scene_->show_drawing(std::move(drawing), result);
  refresh_rejected_marks();
  // What the last accept or reject changed stays marked until the next change.
  if (!changed_nodes_.empty()) scene_->highlight(changed_nodes_);
  minimap_->refresh();
  if (fit_pending_) {
    QPointF top = scene_->sceneRect().center();
    double best = std::numeric_limits<double>::max();
    for (const NodeItem* item : scene_->node_items())
      if (item->sceneBoundingRect().top() < best) {
        best = item->sceneBoundingRect().top();
        top = QPointF(item->pos().x(), best);
      }
    view_->initial_view(top);
    fit_pending_ = false;
  } else {
    view_->centerOn(centre);
  }
  show_focus();
  update_breadcrumbs();
  run_->repaint_measured();
  first_picture_s_ = static_cast<double>(picture_timer_.nsecsElapsed()) * 1e-9;
  statusBar()->showMessage(tr("Layout %1 s (dot), picture after %2 s")
                               .arg(result.seconds, 0, 'f', 2).arg(first_picture_s_, 0, 'f', 2), 8000);
  emit picture_ready(first_picture_s_);
}

void MainWindow::on_plan_changed() {
  if (!session_->has_document()) return;
  candidates_->refresh(&session_->engine());
  update_status();
  update_title();
  note_changed_nodes();
  relayout();
}

void MainWindow::refresh_rejected_marks() {
  std::vector<RejectedEdge> marks;
  if (session_->has_document() && mark_rejected_ != nullptr && mark_rejected_->isChecked()) {
    const FusionEngine& e = session_->engine();
    const Graph& g = e.graph();
    // The candidates panel holds the current plan's candidates (refreshed before every relayout); groups are
    // looked up by id through one index, not a search per candidate (100,000-node graphs).
    std::unordered_map<std::string_view, const Group*> group_by_id;
    for (const Group& group : e.plan().groups()) group_by_id.emplace(group.id, &group);
    const CandidatesModel& candidates = *candidates_->model();
    for (int row = 0; row < candidates.rowCount(); ++row) {
      const Candidate& c = candidates.candidate(row);
      if (c.decision.fuse || (c.kind != FusionKind::vertical && c.kind != FusionKind::epilogue)) continue;
      // Mark the edges from the producer group into the consumer group.
      const auto a_at = group_by_id.find(c.group_a), b_at = group_by_id.find(c.group_b);
      if (a_at == group_by_id.end() || b_at == group_by_id.end()) continue;
      const Group* a = a_at->second;
      const Group* b = b_at->second;
      for (NodeId consumer : b->nodes)
        for (NodeId producer : g.producers(consumer))
          if (e.plan().group_of_node(producer).id == a->id)
            marks.push_back({producer, consumer, qs(std::string(to_string(c.decision.reason)))});
    }
  }
  scene_->mark_rejected(marks);
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

void MainWindow::on_selection_changed() {
  const std::vector<NodeId> nodes = scene_->selected_graph_nodes();
  if (nodes.empty() || !session_->has_document()) return;
  const Plan& plan = session_->engine().plan();
  explain_->show_group(*session_, plan.group_of(nodes.front()));
  if (nodes.size() == 2) why_not_fused();
}

void MainWindow::why_not_fused() {
  std::vector<NodeId> nodes = scene_->selected_graph_nodes();
  if (nodes.size() != 2 || !session_->has_document()) {
    // An edge selected alone stands for its producer and consumer.
    for (QGraphicsItem* item : scene_->selectedItems()) {
      if (item->type() != EdgeItem::Type) continue;
      const DrawnEdge& e = static_cast<EdgeItem*>(item)->edge();
      const auto producer = session_->graph().producer(e.value);
      if (producer) nodes = {*producer, e.consumer};
    }
  }
  if (nodes.size() != 2) {
    statusBar()->showMessage(tr("Select two nodes (Ctrl+click) or one edge to ask why they are not fused"), 6000);
    return;
  }
  const FusionDecision d = session_->engine().explain(nodes[0], nodes[1]);
  explain_->show_decision(*session_, nodes[0], nodes[1], d);
}

void MainWindow::search_next() { find_next(search_->text()); }

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!maybe_save()) {
    event->ignore();
    return;
  }
  run_->cancel();
  session_->discard_autosave();
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  event->accept();
}

}  // namespace fx::app
