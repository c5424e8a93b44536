// Charts drawn with QPainter (Qt Charts is GPL-3 in Debian): per-kernel bars, unfused vs fused, and a
// roofline (arithmetic intensity vs achieved FLOP/s under the bandwidth and compute roofs).
#pragma once

#include <QWidget>
#include <optional>

#include "app/gui/run_report.h"

namespace fx::app {

// One horizontal stacked bar per plan, one segment per kernel, so totals and each kernel's share read at once.
class KernelBarChart : public QWidget {
  Q_OBJECT
 public:
  enum class Metric { time, bytes };
  KernelBarChart(Metric metric, QWidget* parent = nullptr);
  void set_report(const std::optional<RunReport>& report);
  QSize sizeHint() const override { return {500, 220}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  double value(const KernelReport& k) const;
  Metric metric_;
  std::optional<RunReport> report_;
};

// A kernel on the roofline: arithmetic intensity (FLOP per measured byte, else per predicted byte) and the
// FLOP/s it achieved; kernels whose report gives no FLOPs or no bytes have none.
struct RooflinePoint {
  QString plan, kernel;
  double intensity = 0, flops_per_s = 0;
};
std::vector<RooflinePoint> roofline_points(const RunReport& report);

class RooflineChart : public QWidget {
  Q_OBJECT
 public:
  explicit RooflineChart(QWidget* parent = nullptr);
  void set_report(const std::optional<RunReport>& report);
  QSize sizeHint() const override { return {500, 300}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  void draw_roofs(QPainter& p, const QRect& area) const;
  std::optional<RunReport> report_;
  Roofs roofs_;
};

}  // namespace fx::app
