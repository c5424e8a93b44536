// Runs Graphviz layouts on a worker thread and hands back the newest result. Graphviz cannot be interrupted,
// so "cancel" means a newer request makes the older result stale: it is dropped when it arrives.
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <QThreadPool>
#include <atomic>
#include <memory>

#include "app/gui/graph_drawing.h"
#include "app/gui/graph_layout.h"
#include "app/gui/scoped_layout.h"

namespace fx::app {

class LayoutRunner : public QObject {
  Q_OBJECT
 public:
  explicit LayoutRunner(QObject* parent = nullptr);
  ~LayoutRunner() override;
  // Starts laying out the drawing; any result still pending for an older request will be ignored.
  void start(std::shared_ptr<const DrawnGraph> drawing);
  bool busy() const { return pending_ > 0; }
  // Per-scope layouts kept across relayouts (an accept relays out only the scopes it changed).
  LayoutCache& cache() { return *cache_; }

  // The layout thread's stack: dot recurses along long chains; the hierarchy bounds what it is given, and this
  // leaves room for whatever a flat layout of a small graph needs.
  static constexpr std::size_t kLayoutStackBytes = std::size_t{512} << 20;

 signals:
  void finished(std::shared_ptr<const DrawnGraph> drawing, const fx::app::LayoutResult& result);
  void failed(const QString& message);

 private:
  std::atomic<int> generation_ = 0;
  int pending_ = 0;
  std::shared_ptr<LayoutCache> cache_;
  QThreadPool pool_;  // last: destroyed first, it waits for a running layout before the cache goes
};

}  // namespace fx::app
