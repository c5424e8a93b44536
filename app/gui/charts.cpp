#include "app/gui/charts.h"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

namespace fx::app {
namespace {

const QColor kSegmentColors[] = {QColor("#4e79a7"), QColor("#f28e2b"), QColor("#59a14f"), QColor("#e15759"),
                                 QColor("#76b7b2"), QColor("#edc948"), QColor("#b07aa1"), QColor("#9c755f")};

QString format_value(double v, bool bytes) {
  if (bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v >= 1024 && u < 4) {
      v /= 1024;
      ++u;
    }
    return QStringLiteral("%1 %2").arg(v, 0, 'f', 1).arg(units[u]);
  }
  return v >= 1000 ? QStringLiteral("%1 ms").arg(v / 1000, 0, 'f', 3) : QStringLiteral("%1 µs").arg(v, 0, 'f', 1);
}

void draw_message(QPainter& p, const QRect& r, const QString& text) {
  p.setPen(QColor("#888888"));
  p.drawText(r, Qt::AlignCenter | Qt::TextWordWrap, text);
}

}  // namespace

KernelBarChart::KernelBarChart(Metric metric, QWidget* parent) : QWidget(parent), metric_(metric) {
  setMinimumHeight(160);
}

void KernelBarChart::set_report(const std::optional<RunReport>& report) {
  report_ = report;
  update();
}

double KernelBarChart::value(const KernelReport& k) const {
  return metric_ == Metric::time ? k.measured_ms * 1e3 : k.measured_bytes().value_or(static_cast<double>(k.group_predicted_bytes));
}

void KernelBarChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const QRect area = rect().adjusted(90, 30, -20, -20);
  const QString title = metric_ == Metric::time ? tr("Latency per kernel") : tr("HBM bytes per kernel (measured, else predicted)");
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(rect().adjusted(8, 6, -8, 0), Qt::AlignLeft | Qt::AlignTop, title);
  if (!report_) return draw_message(p, area, tr("No measurements yet: Run on GPU, or open a run report."));
  double max_total = 0;
  for (const PlanReport* plan : report_->plans()) {
    double total = 0;
    for (const KernelReport& k : plan->kernels) total += value(k);
    max_total = std::max(max_total, total);
  }
  if (max_total <= 0) return draw_message(p, area, tr("The report has no values for this chart."));
  const int n = static_cast<int>(report_->plans().size());
  const double bar_h = std::min(44.0, area.height() / (n * 1.5));
  for (int i = 0; i < n; ++i) {
    const PlanReport& plan = *report_->plans()[static_cast<std::size_t>(i)];
    const double y = area.top() + i * bar_h * 1.5;
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(QRectF(4, y, 82, bar_h), Qt::AlignRight | Qt::AlignVCenter, QString::fromStdString(plan.name));
    double x = area.left();
    double total = 0;
    for (std::size_t k = 0; k < plan.kernels.size(); ++k) {
      const double w = value(plan.kernels[k]) / max_total * (area.width() - 90);
      const QRectF seg(x, y, w, bar_h);
      p.setPen(QPen(palette().color(QPalette::Base), 1));
      p.setBrush(kSegmentColors[k % std::size(kSegmentColors)]);
      p.drawRect(seg);
      if (w > 50) {
        p.setPen(Qt::white);
        const KernelReport& kernel = plan.kernels[k];
        p.drawText(seg.adjusted(3, 0, -3, 0), Qt::AlignCenter | Qt::TextSingleLine,
                   QString::fromStdString(kernel.group.empty() ? kernel.name : kernel.group));
      }
      x += w;
      total += value(plan.kernels[k]);
    }
    p.setPen(palette().color(QPalette::WindowText));
    const QRectF label(x + 6, y, 120, bar_h);
    const double plan_us = plan.total_ms * 1e3;
    if (metric_ == Metric::time && plan_us > 0 && std::abs(plan_us - total) > 5e-4 * total) {
      // The plan timed whole is what it costs; its steps were timed with an event after each, which adds a
      // little (run_report.h): their sum goes under it, in grey.
      const QRectF top = label.adjusted(0, -4, 0, -label.height() / 2), bottom = label.adjusted(0, label.height() / 2, 0, 4);
      p.drawText(top, Qt::AlignLeft | Qt::AlignBottom, format_value(plan_us, false));
      p.setPen(palette().color(QPalette::PlaceholderText));
      p.drawText(bottom, Qt::AlignLeft | Qt::AlignTop, tr("steps %1").arg(format_value(total, false)));
    } else {
      p.drawText(label, Qt::AlignLeft | Qt::AlignVCenter, format_value(total, metric_ == Metric::bytes));
    }
  }
  p.setPen(palette().color(QPalette::WindowText));
  if (report_->speedup > 0 && metric_ == Metric::time)
    p.drawText(rect().adjusted(8, 6, -8, 0), Qt::AlignRight | Qt::AlignTop,
               tr("speedup %1×").arg(report_->speedup, 0, 'f', 2));
}

std::vector<RooflinePoint> roofline_points(const RunReport& report) {
  std::vector<RooflinePoint> out;
  for (const PlanReport* plan : report.plans()) {
    for (const KernelReport& k : plan->kernels) {
      const double bytes = k.measured_bytes().value_or(static_cast<double>(k.group_predicted_bytes));
      const auto flops = kernel_flops(k);
      if (!flops || bytes <= 0 || k.measured_ms <= 0 || *flops <= 0) continue;
      out.push_back({QString::fromStdString(plan->name), QString::fromStdString(k.name), *flops / bytes,
                     *flops / (k.measured_ms * 1e-3)});
    }
  }
  return out;
}

RooflineChart::RooflineChart(QWidget* parent) : QWidget(parent) { setMinimumHeight(200); }

void RooflineChart::set_report(const std::optional<RunReport>& report) {
  report_ = report;
  roofs_ = report ? roofs_of(*report) : Roofs{};
  update();
}

namespace {

// Log-log axes: intensity 1/64 .. 4096 FLOP/B, performance peak/1e5 .. 2x peak.
struct RooflineAxes {
  QRect area;
  double pf_hi, pf_lo;
  double ai_lo = std::log10(1.0 / 64), ai_hi = std::log10(4096.0);
  RooflineAxes(const QRect& a, double peak) : area(a), pf_hi(std::log10(peak * 2)), pf_lo(pf_hi - 5.5) {}
  QPointF to_px(double ai, double flops) const {
    const double x = (std::log10(ai) - ai_lo) / (ai_hi - ai_lo);
    const double y = (std::log10(std::max(flops, 1.0)) - pf_lo) / (pf_hi - pf_lo);
    return QPointF(area.left() + x * area.width(), area.bottom() - std::clamp(y, 0.0, 1.0) * area.height());
  }
  QPainterPath roof(double bandwidth, double peak) const {
    QPainterPath path;
    for (double e = ai_lo; e <= ai_hi + 1e-9; e += 0.05) {
      const double ai = std::pow(10.0, e);
      const QPointF pt = to_px(ai, std::min(peak, bandwidth * ai));
      path.isEmpty() ? path.moveTo(pt) : path.lineTo(pt);
    }
    return path;
  }
};

}  // namespace

// One roof per compute peak of the device (FP32 cores, tensor cores) under the datasheet bandwidth; the copy
// bandwidth the run measured is the dashed slope a memory-bound kernel can really reach.
void RooflineChart::draw_roofs(QPainter& p, const QRect& area) const {
  const RooflineAxes axes(area, roofs_.peak_flops);
  for (const ComputeRoof& r : roofs_.compute_roofs) {
    p.setPen(QPen(QColor("#c62828"), r.flops == roofs_.peak_flops ? 2 : 1.2));
    p.drawPath(axes.roof(roofs_.hbm_bandwidth, r.flops));
    const QPointF at = axes.to_px(std::pow(10.0, axes.ai_hi), r.flops);
    p.drawText(QRectF(at.x() - 220, at.y() - 15, 216, 14), Qt::AlignRight,
               tr("%1 %2 TFLOP/s").arg(r.label).arg(r.flops / 1e12, 0, 'f', 0));
  }
  if (roofs_.copy_bandwidth > 0) {
    QPen dashed(QColor("#6a1b9a"), 1.4);
    dashed.setStyle(Qt::DashLine);
    p.setPen(dashed);
    p.drawPath(axes.roof(roofs_.copy_bandwidth, roofs_.peak_flops));
  }
  p.setPen(palette().color(QPalette::WindowText));
  QString roofs = tr("%1: %2 TB/s datasheet").arg(roofs_.peak_device).arg(roofs_.hbm_bandwidth / 1e12, 0, 'f', 2);
  if (roofs_.copy_bandwidth > 0) roofs += tr(", %1 TB/s copy measured (dashed)").arg(roofs_.copy_bandwidth / 1e12, 0, 'f', 2);
  p.drawText(QRectF(area.left() + 4, area.top() + 2, area.width() - 8, 16), Qt::AlignLeft, roofs);
}

void RooflineChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const QRect area = rect().adjusted(70, 30, -20, -40);
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(rect().adjusted(8, 6, -8, 0), Qt::AlignLeft | Qt::AlignTop, tr("Roofline: achieved FLOP/s vs FLOP per byte"));
  if (!report_ || roofs_.hbm_bandwidth <= 0 || roofs_.peak_flops <= 0)
    return draw_message(p, area, tr("Needs a run report that names its device (a preset with its bandwidth and "
                                    "peak FLOP/s)."));
  p.setPen(QPen(palette().color(QPalette::Mid), 1));
  p.drawRect(area);
  draw_roofs(p, area);
  p.drawText(QRectF(area.left(), area.bottom() + 4, area.width(), 16), Qt::AlignCenter, tr("FLOP / byte (log)"));
  const RooflineAxes axes(area, roofs_.peak_flops);
  int plan_index = 0;
  const std::vector<RooflinePoint> points = roofline_points(*report_);
  for (const PlanReport* plan : report_->plans()) {
    const QColor c = kSegmentColors[plan_index++ % std::size(kSegmentColors)];
    const QString name = QString::fromStdString(plan->name);
    for (const RooflinePoint& k : points) {
      if (k.plan != name) continue;
      p.setPen(QPen(c.darker(130), 1));
      p.setBrush(c);
      p.drawEllipse(axes.to_px(k.intensity, k.flops_per_s), 4.5, 4.5);
    }
    p.setPen(c);
    p.drawText(QRectF(area.right() - 160, area.bottom() - 18 * plan_index, 150, 16), Qt::AlignRight, QStringLiteral("● ") + name);
  }
}

}  // namespace fx::app
