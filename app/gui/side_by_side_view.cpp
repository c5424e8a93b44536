#include "app/gui/side_by_side_view.h"

#include <QLabel>
#include <QScrollBar>
#include <QSplitter>
#include <QVBoxLayout>

#include "app/gui/graph_scene.h"
#include "app/gui/graph_view.h"
#include "app/gui/layout_runner.h"

namespace fx::app {

SideBySideView::SideBySideView(QWidget* parent) : QWidget(parent) {
  auto* split = new QSplitter(Qt::Horizontal, this);
  for (int p : {before, after}) {
    auto* pane = new QWidget(split);
    auto* layout = new QVBoxLayout(pane);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    titles_[p] = new QLabel(pane);
    QFont f = titles_[p]->font();
    f.setBold(true);
    titles_[p]->setFont(f);
    titles_[p]->setAlignment(Qt::AlignCenter);
    scenes_[p] = new GraphScene(this);
    views_[p] = new GraphView(pane);
    views_[p]->setScene(scenes_[p]);
    runners_[p] = new LayoutRunner(this);
    layout->addWidget(titles_[p]);
    layout->addWidget(views_[p], 1);
    split->addWidget(pane);
    const Pane pane_id = static_cast<Pane>(p);
    connect(runners_[p], &LayoutRunner::finished, this,
            [this, pane_id](std::shared_ptr<const DrawnGraph> d, const LayoutResult& r) { on_finished(pane_id, std::move(d), r); });
    connect(runners_[p], &LayoutRunner::failed, this, &SideBySideView::failed);
    connect(views_[p], &GraphView::zoom_changed, this, [this, pane_id] { follow_zoom(pane_id); });
    for (QScrollBar* bar : {views_[p]->horizontalScrollBar(), views_[p]->verticalScrollBar()})
      connect(bar, &QScrollBar::valueChanged, this, [this, pane_id] { follow_scroll(pane_id); });
    connect(scenes_[p], &QGraphicsScene::selectionChanged, this, [this, pane_id] { follow_selection(pane_id); });
  }
  split->setSizes({1, 1});
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(split);
  set_titles(tr("Before: unfused, one kernel per op"), tr("After: fused plan"));
}

// Deleting a scene clears its selection: that must not be followed into the other, already deleted, pane.
SideBySideView::~SideBySideView() {
  for (GraphScene* s : scenes_) s->disconnect(this);
}

void SideBySideView::set_titles(const QString& before_title, const QString& after_title) {
  titles_[before]->setText(before_title);
  titles_[after]->setText(after_title);
}

void SideBySideView::show_drawings(std::shared_ptr<const DrawnGraph> before_drawing,
                                   std::shared_ptr<const DrawnGraph> after_drawing) {
  shown_[before] = shown_[after] = false;
  runners_[before]->start(std::move(before_drawing));
  runners_[after]->start(std::move(after_drawing));
}

void SideBySideView::clear() {
  for (GraphScene* s : scenes_) s->clear_drawing();
}

bool SideBySideView::busy() const { return runners_[before]->busy() || runners_[after]->busy(); }

void SideBySideView::on_finished(Pane p, std::shared_ptr<const DrawnGraph> drawing, const LayoutResult& result) {
  following_ = true;
  scenes_[p]->show_drawing(std::move(drawing), result);
  following_ = false;
  shown_[p] = true;
  if (!shown_[before] || !shown_[after]) return;
  // Both panes start at the same readable zoom, from the top of each graph.
  views_[before]->initial_view(scenes_[before]->sceneRect().topLeft() + QPointF(scenes_[before]->sceneRect().width() / 2, 0));
  follow_zoom(before);
  follow_scroll(before);
  emit ready();
}

void SideBySideView::follow_zoom(Pane from) {
  if (following_) return;
  following_ = true;
  views_[1 - from]->setTransform(views_[from]->transform());
  following_ = false;
  follow_scroll(from);
}

// The two scenes differ in size (the fused one has group frames), so the panes follow each other by the
// relative position of their centres, which keeps the same part of the graph in view.
void SideBySideView::follow_scroll(Pane from) {
  if (following_) return;
  const QRectF src = scenes_[from]->sceneRect(), dst = scenes_[1 - from]->sceneRect();
  if (src.isEmpty() || dst.isEmpty()) return;
  const QPointF c = views_[from]->mapToScene(views_[from]->viewport()->rect().center());
  const QPointF rel((c.x() - src.left()) / src.width(), (c.y() - src.top()) / src.height());
  following_ = true;
  views_[1 - from]->centerOn(dst.left() + rel.x() * dst.width(), dst.top() + rel.y() * dst.height());
  following_ = false;
}

void SideBySideView::follow_selection(Pane from) {
  if (following_) return;
  following_ = true;
  GraphScene* other = scenes_[1 - from];
  other->clearSelection();
  for (NodeId n : scenes_[from]->selected_graph_nodes())
    if (NodeItem* item = other->item_for(n)) item->setSelected(true);
  following_ = false;
}

}  // namespace fx::app
