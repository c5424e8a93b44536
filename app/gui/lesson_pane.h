// The lesson pane: one step of a workshop lesson at a time beside the graph. A predict step takes the learner's
// answer, then reveals the cost model's (and the bundled measurement's) and says how close it was; an act step
// asks the window to change the plan; a run step shows the bundled run report or says how to measure.
#pragma once

#include <QWidget>
#include <optional>

#include "app/gui/lessons.h"

class QLabel;
class QLineEdit;
class QPushButton;
class QComboBox;
class QTextBrowser;

namespace fx::app {

class LessonPane : public QWidget {
  Q_OBJECT
 public:
  explicit LessonPane(QWidget* parent = nullptr);

  // Shows the lesson's first step; `graph` and `device` are what its answers are computed on.
  void start(OpenedLesson lesson, std::shared_ptr<const Graph> graph, DeviceDescription device);
  bool has_lesson() const { return lesson_.has_value(); }
  const OpenedLesson* lesson() const { return lesson_ ? &*lesson_ : nullptr; }
  int step() const { return step_; }
  void next();
  void back();
  // Predict steps: the learner's answer (typed or picked), then the reveal.
  void set_answer(const QString& answer);
  void reveal_answer();
  bool revealed() const { return revealed_; }
  // Larger type and black on white with strong accents, for a projector.
  void set_high_contrast(bool on);

  // What a test or a screenshot reads.
  QString step_title() const;
  QString step_text() const;
  QString reveal_text() const;

 signals:
  void action_requested(Action action);
  void step_changed(int step);

 private:
  void show_step();
  void show_predict(const LessonStep& s);
  void show_run();
  void set_reveal(const QString& text);
  const LessonStep& current() const { return lesson_->lesson.steps[static_cast<std::size_t>(step_)]; }

  std::optional<OpenedLesson> lesson_;
  std::shared_ptr<const Graph> graph_;
  std::optional<DeviceDescription> device_;
  int step_ = 0;
  bool revealed_ = false;
  QLabel* lesson_title_;
  QLabel* progress_;
  QLabel* title_;
  QLabel* text_;
  QLineEdit* number_;
  QLabel* unit_;
  QComboBox* choice_;
  QPushButton* reveal_;
  QPushButton* act_;
  QLabel* answer_;
  QPushButton* back_;
  QPushButton* next_;
};

}  // namespace fx::app
