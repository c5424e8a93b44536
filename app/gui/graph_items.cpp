#include "app/gui/graph_items.h"

#include <QFontMetricsF>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <QtMath>

#include <algorithm>

namespace fx::app {
namespace {

SceneColors g_colors;

// Below this zoom, text is unreadable anyway: boxes only, which keeps 1,000+ node graphs smooth.
constexpr double kTextDetail = 0.35;
constexpr double kArrowSize = 7.0;
// Measured time and bytes on a box or a group's title (dark green on the light fills, in both palettes).
const QColor kMeasuredText("#1b5e20");

double detail(const QStyleOptionGraphicsItem* option, const QPainter* painter) {
  return option->levelOfDetailFromTransform(painter->worldTransform());
}

// Text with a one-unit halo of `halo` around its glyphs (drawn eight times offset, then once in `color`), as
// map labels are drawn over roads: a line under it stops at the letters.
void draw_haloed_text(QPainter* painter, const QRectF& rect, int flags, const QString& text, const QColor& color,
                      const QColor& halo) {
  painter->setPen(halo);
  for (const QPointF d : {QPointF(-1, 0), QPointF(1, 0), QPointF(0, -1), QPointF(0, 1), QPointF(-1, -1), QPointF(1, 1),
                          QPointF(-1, 1), QPointF(1, -1)}) {
    painter->drawText(rect.translated(d), flags, text);
  }
  painter->setPen(color);
  painter->drawText(rect, flags, text);
}

}  // namespace

SceneColors SceneColors::light() { return {}; }
SceneColors SceneColors::dark() {
  SceneColors c;
  c.background = QColor("#1e1f22");
  c.edge = QColor("#b0b0b0");
  c.edge_label = QColor("#d8d8d8");
  c.cluster_text = QColor("#111111");
  c.selection = QColor("#64b5f6");
  c.highlight = QColor("#ffb74d");
  c.rejected = QColor("#ff6e6e");
  return c;
}
const SceneColors& scene_colors() { return g_colors; }
void set_scene_colors(const SceneColors& colors) { g_colors = colors; }

NodeItem::NodeItem(const DrawnNode& node, int index) : node_(node), index_(index) {
  setFlag(ItemIsSelectable);
  setToolTip(node_.tooltip);
  setZValue(2);
}

QRectF NodeItem::boundingRect() const {
  const QSizeF s = node_.size;
  return QRectF(-s.width() / 2 - 3, -s.height() / 2 - 3, s.width() + 9, s.height() + 9);  // + a scope's stack
}

void NodeItem::set_highlighted(bool on) {
  if (on == highlighted_) return;
  highlighted_ = on;
  update();
}

void NodeItem::set_measured(const QString& text) {
  measured_ = text;
  setToolTip(measured_.isEmpty() ? node_.tooltip : node_.tooltip + QStringLiteral("<br>measured: ") + measured_.toHtmlEscaped());
  update();
}

void NodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const QRectF box(-node_.size.width() / 2, -node_.size.height() / 2, node_.size.width(), node_.size.height());
  QPen pen(QColor("#444444"), node_.is_output ? 2.2 : 1.0);
  if (highlighted_) pen = QPen(scene_colors().highlight, 3.0);
  if (isSelected()) pen = QPen(scene_colors().selection, 3.0);
  const bool far = detail(option, painter) < kTextDetail;
  // Zoomed far out a scaled pen vanishes: outlines stay one pixel wide, so Fit always shows the boxes.
  if (far) {
    pen.setCosmetic(true);
    pen.setWidthF(pen.widthF() > 1.5 ? 2.0 : 1.0);
  }
  painter->setPen(pen);
  painter->setBrush(node_.fill);
  const double radius = node_.kind == DrawnNode::Kind::input ? box.height() / 2 : 5.0;
  // A collapsed scope is a stack of boxes: it holds more than it shows.
  if (node_.kind == DrawnNode::Kind::scope) painter->drawRoundedRect(box.translated(3, 3), radius, radius);
  painter->drawRoundedRect(box, radius, radius);
  if (far) return;

  painter->setPen(QColor("#111111"));
  const QFontMetricsF title(title_font());
  const QFontMetricsF body(body_font());
  double y = box.top() + 5;
  painter->setFont(title_font());
  painter->drawText(QRectF(box.left(), y, box.width(), title.height()), Qt::AlignCenter, node_.title);
  y += title.height();
  painter->setFont(body_font());
  for (const QString& line : QStringList{node_.name, node_.type} + node_.extra) {
    if (line.isEmpty()) continue;
    painter->setPen(line == node_.name ? QColor("#111111") : QColor("#444444"));
    painter->drawText(QRectF(box.left(), y, box.width(), body.height()), Qt::AlignCenter, line);
    y += body.height();
  }
  // The kernel's line, inside the box: predicted until a run is shown, then what was measured.
  if (!node_.kernel_line.isEmpty()) {
    const QRectF line(box.left() + 2, y, box.width() - 4, body.height());
    painter->setPen(measured_.isEmpty() ? QColor("#666666") : kMeasuredText);
    painter->drawText(line, Qt::AlignCenter,
                      measured_.isEmpty() ? node_.kernel_line : body.elidedText(measured_, Qt::ElideRight, line.width()));
  }
}

EdgeItem::EdgeItem(const DrawnEdge& edge, int index, const std::vector<QPointF>& points, QPointF arrow_tip)
    : edge_(edge), index_(index) {
  setZValue(1);
  if (!points.empty()) {
    path_.moveTo(points[0]);
    for (std::size_t i = 1; i + 2 < points.size(); i += 3) path_.cubicTo(points[i], points[i + 1], points[i + 2]);
    const QPointF end = points.back();
    QLineF dir(end, arrow_tip);
    if (dir.length() < 0.1) dir = QLineF(path_.pointAtPercent(0.95), end);
    dir.setLength(kArrowSize);
    const QPointF tip = arrow_tip == QPointF() ? end : arrow_tip;
    const QPointF base = tip - (dir.p2() - dir.p1());
    QLineF normal = dir.normalVector();
    normal.setLength(kArrowSize * 0.45);
    const QPointF side = normal.p2() - normal.p1();
    arrow_ << tip << base + side << base - side;
    path_.lineTo(base);
    label_pos_ = path_.pointAtPercent(0.5);
  }
  update_bounds();
  setToolTip(edge_.label);
  setFlag(ItemIsSelectable);  // a selected edge answers "why not fused?" for its two ends
}

QRectF EdgeItem::label_rect_at(QPointF pos) const {
  const QFontMetricsF fm(edge_font());
  return QRectF(pos + QPointF(4, -fm.height() / 2), QSizeF(fm.horizontalAdvance(edge_.label), fm.height()));
}

QRectF EdgeItem::label_rect() const { return label_rect_at(label_pos_); }

void EdgeItem::update_bounds() {
  prepareGeometryChange();
  const QRectF label = label_rect().adjusted(0, 0, 120, 0);  // room for a wider font than measured
  bounds_ = path_.boundingRect().united(arrow_.boundingRect()).united(label).adjusted(-4, -4, 4, 4);
}

void EdgeItem::place_label_outside(const std::vector<QRectF>& keep_out) {
  if (path_.isEmpty() || edge_.label.isEmpty()) return;
  auto free_at = [&](QPointF pos) {
    const QRectF r = label_rect_at(pos);
    return std::none_of(keep_out.begin(), keep_out.end(), [&](const QRectF& k) { return k.intersects(r); });
  };
  // From the middle outwards, alternating sides: the label stays as central as the picture allows.
  for (double offset = 0.0; offset <= 0.48; offset += 0.02) {
    for (double t : {0.5 - offset, 0.5 + offset}) {
      const QPointF pos = path_.pointAtPercent(t);
      if (free_at(pos)) {
        if (pos != label_pos_) {
          label_pos_ = pos;
          update_bounds();
        }
        return;
      }
    }
  }
}

QRectF EdgeItem::boundingRect() const { return bounds_; }

QPainterPath EdgeItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(8);
  return stroker.createStroke(path_);
}

void EdgeItem::set_rejected(const QString& reason) {
  rejected_ = reason;
  // The reason goes in the tool tip, not on the canvas: several rejected edges out of one node would
  // print their codes on top of each other.
  setToolTip(reason.isEmpty() ? edge_.label : QStringLiteral("%1 — not fused: %2").arg(edge_.label, reason));
  update();
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  const bool red = rejected();
  QPen pen(red ? scene_colors().rejected : scene_colors().edge, red ? 1.6 : 1.1);
  if (isSelected()) pen = QPen(scene_colors().selection, 2.5);
  if (red) pen.setStyle(Qt::DashLine);
  if (detail(option, painter) < kTextDetail) pen.setCosmetic(true), pen.setWidthF(1.0);
  painter->setPen(pen);
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(path_);
  painter->setBrush(pen.color());
  painter->setPen(Qt::NoPen);
  painter->drawPolygon(arrow_);
  if (detail(option, painter) < kTextDetail) return;
  painter->setFont(edge_font());
  painter->setPen(scene_colors().edge_label);
  const QPointF text_pos = label_pos_ + QPointF(4, QFontMetricsF(edge_font()).ascent() / 2 - 1);
  painter->drawText(text_pos, edge_.label);
  if (red) {
    // A small cross on the edge marks "the engine said no here"; hover for the reason.
    painter->setPen(QPen(scene_colors().rejected, 1.8));
    const QPointF c = label_pos_;
    painter->drawLine(c + QPointF(-3.5, -3.5), c + QPointF(3.5, 3.5));
    painter->drawLine(c + QPointF(-3.5, 3.5), c + QPointF(3.5, -3.5));
  }
}

ClusterItem::ClusterItem(const DrawnCluster& cluster, const QRectF& rect)
    : cluster_(cluster), base_rect_(rect), rect_(rect) {
  setZValue(0);
  fit_title();
  title_ = new ClusterTitleItem(*this);
}

// dot makes the box at least as wide as the title (layout_input passes its width), so widening here is only a
// safety net. Once a run is shown the measured time and bytes go next to the title where they fit, else on a
// second line under it (the room dot leaves above the first node holds two), shortened to the box's width if
// need be (the tooltip has it whole): widening the box for them would push it over its neighbours in a row of
// groups (gpt2_block's q, k and v projections).
void ClusterItem::fit_title() {
  const QFontMetricsF fm(cluster_font());
  const double title = cluster_line_width(cluster_.label);
  QRectF r = base_rect_;
  if (title > r.width()) {
    const double grow = (title - r.width()) / 2;
    r.adjust(-grow, 0, grow, 0);
  }
  const double measured = measured_.isEmpty() ? 0.0 : cluster_line_width(measured_) - 2;
  two_lines_ = !measured_.isEmpty() && title + measured > r.width();
  shown_measured_ = two_lines_ ? fm.elidedText(measured_, Qt::ElideRight, r.width() - 16) : measured_;
  setToolTip(measured_.isEmpty() ? cluster_.label : cluster_.label + QStringLiteral("\n") + measured_);
  if (r != rect_) {
    prepareGeometryChange();
    rect_ = r;
  }
  if (title_ != nullptr) title_->refresh();
}

QRectF ClusterItem::boundingRect() const { return rect_.adjusted(-2, -2, 2, 2); }

QRectF ClusterItem::title_rect() const {
  // Two lines: the title's line ends 3 higher (paint), the second line kClusterSecondLine under it.
  return QRectF(rect_.left(), rect_.top(), rect_.width(), kClusterLabelHeight + (two_lines_ ? kClusterSecondLine - 3 : 0.0));
}

void ClusterItem::set_measured(const QString& text) {
  measured_ = text;
  fit_title();
  update();
}

void ClusterItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  QColor fill = cluster_.color;
  QPen pen(fill.darker(cluster_.scope >= 0 ? 200 : 160), 1.4);
  if (cluster_.scope >= 0) pen.setStyle(Qt::DashLine);  // an expanded name scope, not a fused kernel
  if (detail(option, painter) < kTextDetail) pen.setCosmetic(true), pen.setWidthF(1.0);
  painter->setPen(pen);
  painter->setBrush(fill);
  painter->drawRoundedRect(rect_, 8, 8);
}

void ClusterItem::paint_title(QPainter* painter) const {
  painter->setFont(cluster_font());
  // Two lines: the title moves up a little to leave the second line clear of the first box.
  const QRectF label = QRectF(rect_.left(), rect_.top(), rect_.width(), kClusterLabelHeight)
                           .adjusted(8, two_lines_ ? 1 : 3, -8, two_lines_ ? -3 : -1);
  draw_haloed_text(painter, label, Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip, cluster_.label,
                   scene_colors().cluster_text, cluster_.color);
  if (!shown_measured_.isEmpty()) {
    if (two_lines_) {
      draw_haloed_text(painter, label.translated(0, kClusterSecondLine), Qt::AlignLeft | Qt::AlignVCenter,
                       shown_measured_, kMeasuredText, cluster_.color);
    } else {
      draw_haloed_text(painter, label, Qt::AlignRight | Qt::AlignVCenter, shown_measured_, kMeasuredText,
                       cluster_.color);
    }
  }
}

ClusterTitleItem::ClusterTitleItem(const ClusterItem& cluster) : cluster_(cluster) {
  setZValue(1.5);  // above the edges (1), under the boxes (2)
  setAcceptedMouseButtons(Qt::NoButton);  // clicks go to what lies under the title
  bounds_ = cluster_.title_rect().adjusted(-2, -2, 2, 2);
  setToolTip(cluster_.toolTip());
}

void ClusterTitleItem::refresh() {
  const QRectF r = cluster_.title_rect().adjusted(-2, -2, 2, 2);
  if (r != bounds_) {
    prepareGeometryChange();
    bounds_ = r;
  }
  setToolTip(cluster_.toolTip());  // the title and the whole measured line, where the band shortens it
  update();
}

void ClusterTitleItem::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget*) {
  if (detail(option, painter) < kTextDetail * 0.6) return;
  cluster_.paint_title(painter);
}

}  // namespace fx::app
