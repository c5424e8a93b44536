// MainWindow's picture: building and laying out the drawings (one view, or Before | After side by side),
// and what is painted on them: refused edges with their sentences, a run's numbers (the unfused plan's on the
// Before view, the fused plan's on the others), and the answer to "why not fused?".
#include <QActionGroup>
#include <QMessageBox>
#include <algorithm>
#include <QStackedWidget>
#include <QStatusBar>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "app/gui/explain_panel.h"
#include "app/gui/graph_scene.h"
#include "app/gui/graph_view.h"
#include "app/gui/layout_runner.h"
#include "app/gui/main_window.h"
#include "app/gui/candidates_model.h"
#include "app/gui/candidates_panel.h"
#include "app/gui/navigation.h"
#include "app/gui/run_panel.h"
#include "app/gui/scope_view.h"
#include "app/gui/side_by_side_view.h"

namespace fx::app {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// Refusals the graph marks red: the engine's "no" on legality. A merge that is legal but predicted to save
// nothing, or a kind switched off, is an ordinary kernel boundary and keeps the plain HBM edge.
bool marked_as_refusal(Reason r) {
  return r != Reason::not_profitable && r != Reason::kind_disabled && r != Reason::fusible &&
         r != Reason::output_needed_elsewhere;
}

// The edges of the plan's refused candidates. Groups are looked up by id through one index, not a search per
// candidate (100,000-node graphs).
// `candidate(i)` for i < count: the candidates model's rows or a vector, without copying either.
template <class At>
std::vector<RejectedEdge> refusals(const FusionEngine& e, int count, At candidate) {
  std::vector<RejectedEdge> marks;
  const Graph& g = e.graph();
  std::unordered_map<std::string_view, const Group*> group_by_id;
  for (const Group& group : e.plan().groups()) group_by_id.emplace(group.id, &group);
  for (int i = 0; i < count; ++i) {
    const Candidate& c = candidate(i);
    if (c.decision.fuse || !marked_as_refusal(c.decision.reason)) continue;
    if (c.kind != FusionKind::vertical && c.kind != FusionKind::epilogue) continue;
    const auto a = group_by_id.find(c.group_a), b = group_by_id.find(c.group_b);
    if (a == group_by_id.end() || b == group_by_id.end()) continue;
    for (NodeId consumer : b->second->nodes)
      for (NodeId producer : g.producers(consumer))
        if (e.plan().group_of_node(producer).id == a->second->id)
          marks.push_back({producer, consumer, qs(std::string(to_string(c.decision.reason))), qs(c.decision.message)});
  }
  return marks;
}

}  // namespace

std::shared_ptr<const DrawnGraph> MainWindow::drawing_for(ViewMode mode) const {
  const Graph& g = session_->graph();
  const std::vector<GroupInfo> infos = session_->group_infos(mode == ViewMode::unfused);
  // A large graph is drawn by scope (collapsed as far as it must be): dot only ever sees a few hundred boxes.
  DrawnGraph d = ScopeView::applies(g) ? *scopes_->drawing(g, infos, mode) : build_drawing(g, infos, mode);
  d.left_to_right = left_to_right_;
  return std::make_shared<const DrawnGraph>(std::move(d));
}

void MainWindow::relayout() {
  if (!session_->has_document()) {
    scene_->clear_drawing();
    side_->clear();
    return;
  }
  const ViewMode mode = mode_;
  // The tool bar shows the view on screen, however it was chosen (menu, shortcut, command line).
  if (mode_actions_ != nullptr)
    for (QAction* a : mode_actions_->actions()) a->setChecked(a->data().toInt() == (side_by_side_ ? -1 : static_cast<int>(mode)));
  // After an open the clock runs from the open (load + analysis + layout); otherwise from here.
  if (!fit_pending_) picture_timer_.start();
  central_->setCurrentIndex(side_by_side_ ? 1 : 0);
  if (side_by_side_) {
    statusBar()->showMessage(tr("Laying out the unfused and the fused graph…"));
    side_->show_drawings(drawing_for(ViewMode::unfused), drawing_for(ViewMode::fused));
    return;
  }
  auto drawing = drawing_for(mode);
  statusBar()->showMessage(tr("Laying out %1 boxes…").arg(drawing->nodes.size()));
  layout_->start(std::move(drawing));
}

std::vector<GraphScene*> MainWindow::shown_scenes() const {
  if (side_by_side_) return {side_->scene(SideBySideView::before), side_->scene(SideBySideView::after)};
  return {scene_};
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
  paint_measured();
  first_picture_s_ = static_cast<double>(picture_timer_.nsecsElapsed()) * 1e-9;
  statusBar()->showMessage(tr("Layout %1 s (dot), picture after %2 s")
                               .arg(result.seconds, 0, 'f', 2).arg(first_picture_s_, 0, 'f', 2), 8000);
  emit picture_ready(first_picture_s_);
}

void MainWindow::on_side_by_side_ready() {
  fit_pending_ = false;
  refresh_rejected_marks();
  paint_measured();
  first_picture_s_ = static_cast<double>(picture_timer_.nsecsElapsed()) * 1e-9;
  statusBar()->showMessage(tr("Before | After laid out; picture after %1 s").arg(first_picture_s_, 0, 'f', 2), 8000);
  emit picture_ready(first_picture_s_);
}

void MainWindow::refresh_rejected_marks() {
  const bool on = session_->has_document() && mark_rejected_ != nullptr && mark_rejected_->isChecked();
  for (GraphScene* scene : shown_scenes()) {
    const DrawnGraph* d = scene->drawing();
    if (!on || d == nullptr) {
      scene->mark_rejected({});
      continue;
    }
    if (d->mode == ViewMode::unfused) {
      // The unfused graph's own verdicts: what the engine says about each edge before anything is accepted.
      // Not on a graph drawn by scope: evaluating every pair again there costs seconds, and the current plan's
      // verdicts would be untrue on the unfused graph.
      if (ScopeView::applies(session_->graph())) {
        scene->mark_rejected({});
        continue;
      }
      const FusionEngine before(session_->graph_ptr(), session_->device(), session_->engine().options());
      const std::vector<Candidate> rows = before.candidates();
      scene->mark_rejected(refusals(before, static_cast<int>(rows.size()),
                                    [&](int i) -> const Candidate& { return rows[static_cast<std::size_t>(i)]; }));
    } else {
      // The candidates panel holds the current plan's candidates (refreshed before every relayout).
      const CandidatesModel& model = *candidates_->model();
      scene->mark_rejected(refusals(session_->engine(), model.rowCount(),
                                    [&](int i) -> const Candidate& { return model.candidate(i); }));
    }
  }
}

void MainWindow::paint_measured() {
  for (GraphScene* scene : shown_scenes()) {
    const DrawnGraph* d = scene->drawing();
    if (d == nullptr) continue;
    const auto by_group = run_->measured_groups_of(d->mode == ViewMode::unfused ? QStringLiteral("unfused")
                                                                                : QStringLiteral("fused"));
    std::vector<QString> text(d->groups.size()), mismatch(d->groups.size());
    for (std::size_t i = 0; i < d->groups.size(); ++i) {
      auto it = by_group.find(d->groups[i].id);
      if (it == by_group.end()) continue;
      text[i] = it->second.text;
      mismatch[i] = it->second.mismatch;
    }
    scene->set_measured(text, mismatch);
  }
}

GraphScene* MainWindow::selection_scene() const {
  return side_by_side_ ? side_->scene(SideBySideView::after) : scene_;
}

void MainWindow::on_selection_changed() {
  const std::vector<NodeId> nodes = selection_scene()->selected_graph_nodes();
  if (nodes.empty() || !session_->has_document()) return;
  const Plan& plan = session_->engine().plan();
  explain_->show_group(*session_, plan.group_of(nodes.front()));
  if (nodes.size() == 2) why_not_fused();
}

// Brings the answer into view: the whole path where it fits at a readable zoom, else its middle.
void MainWindow::show_answer(const std::vector<NodeId>& nodes) {
  constexpr double kReadable = 0.55;
  GraphView* view = side_by_side_ ? side_->view(SideBySideView::after) : view_;
  GraphScene* scene = selection_scene();
  QRectF area;
  for (NodeId n : nodes)
    if (const NodeItem* item = scene->item_for(n)) area = area.united(item->sceneBoundingRect());
  if (area.isEmpty()) return;
  area.adjust(-30, -30, 30, 30);
  const QRectF visible = view->mapToScene(view->viewport()->rect()).boundingRect();
  if (visible.width() < area.width() || visible.height() < area.height()) {
    const double fit = std::min(view->viewport()->width() / area.width(), view->viewport()->height() / area.height());
    view->zoom_by(std::max(fit, kReadable) / view->zoom());
  }
  view->centerOn(area.center());
}

bool MainWindow::ask_why_not(const QString& a, const QString& b) {
  if (!session_->has_document()) return false;
  GraphScene* scene = selection_scene();
  std::vector<NodeItem*> items;
  for (const QString& name : {a, b}) {
    const auto n = session_->graph().find_node(name.toStdString());
    NodeItem* item = n ? scene->item_for(*n) : nullptr;
    if (item == nullptr) return false;
    items.push_back(item);
  }
  last_answer_.reset();
  scene->clearSelection();
  for (NodeItem* item : items) item->setSelected(true);  // two selected: the selection handler asks
  if (!last_answer_) why_not_fused();
  return true;
}

void MainWindow::why_not_fused() {
  GraphScene* scene = selection_scene();
  std::vector<NodeId> nodes = scene->selected_graph_nodes();
  if (nodes.size() != 2 || !session_->has_document()) {
    // An edge selected alone stands for its producer and consumer.
    for (QGraphicsItem* item : scene->selectedItems()) {
      if (item->type() != EdgeItem::Type) continue;
      const DrawnEdge& e = static_cast<EdgeItem*>(item)->edge();
      const auto producer = session_->graph().producer(e.value);
      if (producer) nodes = {*producer, e.consumer};
    }
  }
  if (nodes.size() != 2 || !session_->has_document()) {
    statusBar()->showMessage(tr("Select two nodes (Ctrl+click) or one edge to ask why they are not fused"), 6000);
    return;
  }
  const PairExplanation why = session_->engine().explain_pair(nodes[0], nodes[1]);
  explain_->show_decision(*session_, nodes[0], nodes[1], why);
  // The answer on the graph: the pair and the path between them, and the edge where the engine says no.
  std::vector<NodeId> lit = why.path.empty() ? nodes : why.path;
  const auto blocking = why.blocking && !why.decision.fuse ? *why.blocking : std::pair<NodeId, NodeId>{-1, -1};
  for (GraphScene* s : shown_scenes()) s->highlight_answer(lit, blocking);
  show_answer(lit);
  last_answer_ = why;
}

}  // namespace fx::app
