#include "app/gui/layout_runner.h"

#include <QtConcurrent/QtConcurrentRun>

namespace fx::app {

LayoutRunner::LayoutRunner(QObject* parent) : QObject(parent) {}

LayoutRunner::~LayoutRunner() = default;

void LayoutRunner::start(std::shared_ptr<const DrawnGraph> drawing) {
  const int generation = ++generation_;
  LayoutInput input = layout_input(*drawing);

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
  watcher->setFuture(QtConcurrent::run([input = std::move(input)] { return layout_with_dot(input); }));
}

}  // namespace fx::app
