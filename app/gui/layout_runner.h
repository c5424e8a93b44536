// Runs Graphviz layouts on a worker thread and hands back the newest result. Graphviz cannot be interrupted,
// so "cancel" means a newer request makes the older result stale: it is dropped when it arrives.
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <memory>

#include "app/gui/graph_drawing.h"
#include "app/gui/graph_layout.h"

namespace fx::app {

class LayoutRunner : public QObject {
  Q_OBJECT
 public:
  explicit LayoutRunner(QObject* parent = nullptr);
  ~LayoutRunner() override;
  // Starts laying out the drawing; any result still pending for an older request will be ignored.
  void start(std::shared_ptr<const DrawnGraph> drawing);
  bool busy() const { return pending_ > 0; }

  // Drawn nodes above which the full view is not laid out by default: dot's time grows faster than the
  // graph, and beyond this it takes seconds on a small machine.
  static constexpr int kLargeGraphNodes = 2500;

 signals:
  void finished(std::shared_ptr<const DrawnGraph> drawing, const fx::app::LayoutResult& result);
  void failed(const QString& message);

 private:
  int generation_ = 0;
  int pending_ = 0;
};

}  // namespace fx::app
