#include "app/gui/navigation.h"

#include <QEvent>
#include <QGraphicsScene>
#include <QGraphicsView>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <algorithm>

namespace fx::app {
namespace {
constexpr int kBorder = 4;
constexpr int kMargin = 10;
constexpr int kMinSide = 48;
}  // namespace

Minimap::Minimap(QGraphicsView* view) : QWidget(view), view_(view) {
  setObjectName(QStringLiteral("minimap"));
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("Overview: click or drag to move the view"));
  view->installEventFilter(this);
  for (QScrollBar* bar : {view->horizontalScrollBar(), view->verticalScrollBar()}) {
    connect(bar, &QScrollBar::valueChanged, this, qOverload<>(&QWidget::update));
    connect(bar, &QScrollBar::rangeChanged, this, qOverload<>(&QWidget::update));
  }
  hide();
}

void Minimap::refresh() {
  QGraphicsScene* scene = view_ ? view_->scene() : nullptr;
  if (scene == nullptr || scene->items().isEmpty()) {
    picture_ = QImage();
    hide();
    return;
  }
  pictured_scene_ = scene->itemsBoundingRect();
  const double side = std::max(pictured_scene_.width(), pictured_scene_.height());
  const double scale = side > 0 ? (kMaxSide - 2 * kBorder) / side : 1.0;
  const QSize inner(std::max(1, qRound(pictured_scene_.width() * scale)), std::max(1, qRound(pictured_scene_.height() * scale)));
  setFixedSize(std::max(kMinSide, inner.width() + 2 * kBorder), std::max(kMinSide, inner.height() + 2 * kBorder));
  picture_ = QImage(inner, QImage::Format_ARGB32_Premultiplied);
  picture_.fill(scene->backgroundBrush().color().isValid() ? scene->backgroundBrush().color() : QColor(Qt::white));
  QPainter painter(&picture_);
  painter.setRenderHint(QPainter::Antialiasing);
  scene->render(&painter, QRectF(QPointF(0, 0), QSizeF(inner)), pictured_scene_, Qt::KeepAspectRatio);
  painter.end();
  place();
  show();
  raise();
  update();
}

QRectF Minimap::picture_rect() const {
  const QSizeF size = picture_.size();
  return QRectF(QPointF((width() - size.width()) / 2, (height() - size.height()) / 2), size);
}

QPointF Minimap::to_minimap(QPointF p) const {
  const QRectF r = picture_rect();
  if (pictured_scene_.isEmpty()) return r.topLeft();
  return {r.left() + (p.x() - pictured_scene_.left()) * r.width() / pictured_scene_.width(),
          r.top() + (p.y() - pictured_scene_.top()) * r.height() / pictured_scene_.height()};
}

QPointF Minimap::to_scene(QPointF p) const {
  const QRectF r = picture_rect();
  if (r.isEmpty()) return pictured_scene_.center();
  return {pictured_scene_.left() + (p.x() - r.left()) * pictured_scene_.width() / r.width(),
          pictured_scene_.top() + (p.y() - r.top()) * pictured_scene_.height() / r.height()};
}

QRectF Minimap::visible_scene_rect() const {
  if (!view_) return {};
  return view_->mapToScene(view_->viewport()->rect()).boundingRect();
}

QRectF Minimap::viewport_marker() const {
  const QRectF visible = visible_scene_rect();
  return QRectF(to_minimap(visible.topLeft()), to_minimap(visible.bottomRight()));
}

void Minimap::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().color(QPalette::Window));
  painter.setPen(QPen(palette().color(QPalette::Mid), 1));
  painter.drawRect(rect().adjusted(0, 0, -1, -1));
  painter.drawImage(picture_rect().topLeft(), picture_);
  // The part of the graph the view shows; clipped to the overview when the view shows more than the graph.
  const QRectF marker = viewport_marker().intersected(QRectF(rect()).adjusted(1, 1, -1, -1));
  painter.setPen(QPen(QColor("#1565c0"), 1.5));
  painter.setBrush(QColor(21, 101, 192, 40));
  painter.drawRect(marker.isEmpty() ? QRectF(marker.topLeft(), QSizeF(2, 2)) : marker);
}

void Minimap::centre_view_at(QPointF p) {
  if (view_) view_->centerOn(to_scene(p));
}

void Minimap::mousePressEvent(QMouseEvent* event) { centre_view_at(event->position()); }

void Minimap::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) centre_view_at(event->position());
}

void Minimap::place() {
  if (!view_) return;
  const QRect area = view_->viewport()->geometry();
  move(area.right() - width() - kMargin, area.bottom() - height() - kMargin);
}

bool Minimap::eventFilter(QObject* watched, QEvent* event) {
  if (watched == view_ && event->type() == QEvent::Resize) place();
  return false;
}

Breadcrumbs::Breadcrumbs(QWidget* parent) : QLabel(parent) {
  setObjectName(QStringLiteral("breadcrumbs"));
  setTextFormat(Qt::RichText);
  setToolTip(tr("The scope of the selection: click a scope to show it"));
  connect(this, &QLabel::linkActivated, this, [this](const QString& link) { emit scope_clicked(link.toInt()); });
}

void Breadcrumbs::show_chain(const std::vector<int>& scopes, const QStringList& names) {
  chain_ = scopes;
  QStringList pieces;
  for (std::size_t i = 0; i < scopes.size() && i < static_cast<std::size_t>(names.size()); ++i)
    pieces << QStringLiteral("<a href=\"%1\">%2</a>").arg(scopes[i]).arg(names[static_cast<int>(i)].toHtmlEscaped());
  setText(pieces.join(QStringLiteral(" › ")));
}

}  // namespace fx::app
