// MainWindow's navigation of large graphs: the scope hierarchy, Find across nodes, groups and scopes, the
// minimap, breadcrumbs, and the mark on what an accept or reject changed.
#include <QStatusBar>
#include <QToolBar>
#include <map>

#include "app/gui/graph_scene.h"
#include "app/gui/graph_view.h"
#include "app/gui/main_window.h"
#include "app/gui/navigation.h"
#include "app/gui/scope_view.h"

namespace fx::app {

void MainWindow::build_navigation() {
  scopes_ = new ScopeView(scene_, this);
  connect(scopes_, &ScopeView::expansion_changed, this, &MainWindow::relayout);
  minimap_ = new Minimap(view_);
  breadcrumbs_ = new Breadcrumbs(this);
  QToolBar* bar = new QToolBar(tr("Scope"), this);
  bar->setObjectName(QStringLiteral("toolbar.scope"));
  bar->addWidget(breadcrumbs_);
  addToolBarBreak();
  addToolBar(bar);
  connect(breadcrumbs_, &Breadcrumbs::scope_clicked, this, [this](int scope) {
    QGraphicsItem* item = scope > 0 ? scopes_->scope_item(scope) : nullptr;
    if (item == nullptr) {
      view_->fit();
    } else {
      view_->fitInView(item->sceneBoundingRect().adjusted(-20, -20, 20, 20), Qt::KeepAspectRatio);
      if (view_->zoom() > 1.0) view_->actual_size(), view_->centerOn(item);
      emit view_->zoom_changed(view_->zoom());
    }
  });
  connect(scene_, &QGraphicsScene::selectionChanged, this, &MainWindow::update_breadcrumbs);
}

void MainWindow::update_breadcrumbs() {
  const DrawnGraph* d = scene_->drawing();
  if (d == nullptr || !d->scopes || scopes_->tree() == nullptr) {
    breadcrumbs_->show_chain({0}, {tr("graph")});
    return;
  }
  const std::vector<int> chain = scopes_->tree()->ancestors_of(scopes_->selected_scope());
  QStringList names;
  for (int s : chain) names << scopes_->scope_name(s);
  breadcrumbs_->show_chain(chain, names);
}

// After a picture lands: select and centre what the user asked for (a Find hit, a scope just expanded).
void MainWindow::show_focus() {
  const std::optional<FindHit> focus = scopes_->take_focus();
  if (!focus) return;
  QGraphicsItem* item = scopes_->item_for(*focus);
  if (item == nullptr) return;
  if (focus->kind != FindHit::Kind::scope || item->type() == NodeItem::Type) {
    scene_->clearSelection();
    if (item->flags() & QGraphicsItem::ItemIsSelectable) item->setSelected(true);
  }
  view_->centre_on_item(item);
}

void MainWindow::find_next(const QString& text) {
  if (!session_->has_document()) return;
  if (text != search_text_) search_index_ = 0, search_text_ = text;
  const Graph& g = session_->graph();
  // Names are searched in the graph, not the scene: a node inside a kernel's box (kernels view) or a collapsed
  // scope is found too.
  const std::vector<FindHit> hits = scopes_->find(g, session_->group_infos(), text);
  if (hits.empty()) {
    statusBar()->showMessage(tr("Nothing matches \"%1\"").arg(text), 4000);
    return;
  }
  const std::size_t index = static_cast<std::size_t>(search_index_++) % hits.size();
  const FindHit& hit = hits[index];
  const QString what = hit.kind == FindHit::Kind::node ? QString::fromStdString(g.node(hit.node).name) : hit.text;
  statusBar()->showMessage(tr("%1 of %2 matches: %3").arg(index + 1).arg(hits.size()).arg(what), 4000);
  // A hit inside collapsed scopes expands them; the hit is selected when that picture lands.
  if (ScopeView::applies(g) && scopes_->reveal(g, hit)) return;
  if (ScopeView::applies(g)) {
    show_focus();
    return;
  }
  scene_->clearSelection();
  if (NodeItem* item = scene_->item_for(hit.node)) {
    item->setSelected(true);
    view_->centre_on_item(item);
  }
}

void MainWindow::note_changed_nodes() {
  const DrawnGraph* before = scene_->drawing();
  changed_nodes_.clear();
  if (fit_pending_ || before == nullptr || !session_->has_document()) return;
  const Graph& g = session_->graph();
  if (before->node_of_graph_node.size() != static_cast<std::size_t>(g.num_nodes())) return;
  // A node changed when its group did: another id, or the same id with other members.
  std::vector<const GroupInfo*> old_group(static_cast<std::size_t>(g.num_nodes()), nullptr);
  for (const GroupInfo& info : before->groups)
    for (NodeId n : info.nodes)
      if (n >= 0 && n < g.num_nodes()) old_group[static_cast<std::size_t>(n)] = &info;
  for (const GroupInfo& info : session_->group_infos()) {
    if (info.nodes.empty()) continue;
    const GroupInfo* old = old_group[static_cast<std::size_t>(info.nodes.front())];
    if (old == nullptr || old->id != info.id || old->nodes != info.nodes)
      changed_nodes_.insert(changed_nodes_.end(), info.nodes.begin(), info.nodes.end());
  }
}

}  // namespace fx::app
