#include "app/gui/layout_runner.h"

#include <QtConcurrent/QtConcurrentRun>

namespace fx::app {

LayoutRunner::LayoutRunner(QObject* parent) : QObject(parent), cache_(std::make_shared<LayoutCache>()) {
  pool_.setMaxThreadCount(1);  // Graphviz runs one layout at a time anyway (one mutex around it)
  pool_.setStackSize(static_cast<uint>(kLayoutStackBytes));
}

LayoutRunner::~LayoutRunner() = default;

void LayoutRunner::start(std::shared_ptr<const DrawnGraph> drawing) {
  const int generation = ++generation_;

  auto* watcher = new QFutureWatcher<LayoutResult>(this);
  ++pending_;
  connect(watcher, &QFutureWatcher<LayoutResult>::finished, this, [this, watcher, drawing, generation] {
    --pending_;
    const LayoutResult result = watcher->result();
    watcher->deleteLater();
    if (generation != generation_) return;  // a newer request superseded this one
    if (!result.ok) {
      emit failed(result.error);
      return;
    }
    emit finished(drawing, result);
  });
  watcher->setFuture(QtConcurrent::run(&pool_, [drawing, cache = cache_, generation, this] {
    // A request already superseded when its turn comes is not laid out at all.
    if (generation != generation_.load()) return LayoutResult{};
    return layout_drawing(*drawing, cache.get());
  }));
}

}  // namespace fx::app
