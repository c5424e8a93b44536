// MainWindow's workshop side: the Lessons menu, the lesson pane beside the graph, instructor mode.
#include <QDockWidget>
#include <algorithm>
#include <QMenuBar>
#include <QMessageBox>
#include <QStatusBar>
#include <QTimer>
#include <QUndoStack>

#include "app/gui/lesson_pane.h"
#include "app/gui/lessons.h"
#include "app/gui/main_window.h"
#include "app/gui/whatif_panel.h"

namespace fx::app {

void MainWindow::build_lessons_menu() {
  lesson_ = new LessonPane(this);
  lesson_dock_ = new QDockWidget(tr("Lesson"), this);
  lesson_dock_->setObjectName(QStringLiteral("dock.lesson"));
  lesson_dock_->setWidget(lesson_);
  // The lesson runs the full height on the left, beside the graph.
  setCorner(Qt::TopLeftCorner, Qt::LeftDockWidgetArea);
  setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
  addDockWidget(Qt::LeftDockWidgetArea, lesson_dock_);
  docks_.push_back(lesson_dock_);
  lesson_dock_->hide();  // until a lesson is opened
  connect(lesson_, &LessonPane::action_requested, this, [this](Action a) { on_lesson_action(static_cast<int>(a)); });

  QMenu* m = menuBar()->addMenu(tr("&Lessons"));
  const std::vector<LessonFile> lessons = find_lessons();
  if (lessons.empty()) m->addAction(tr("(no lessons folder found)"))->setEnabled(false);
  int n = 1;
  for (const LessonFile& l : lessons) {
    QAction* a = m->addAction(tr("&%1. %2").arg(n++).arg(QString::fromStdString(l.lesson.title)), this,
                              [this, path = l.path] { open_lesson(path); });
    a->setStatusTip(QString::fromStdString(l.lesson.summary));
  }
  m->addSeparator();
  // PageDown/PageUp: what a presentation clicker sends; arrow keys stay with the graph and the scope tree.
  QAction* next = m->addAction(tr("&Next step"), lesson_, &LessonPane::next);
  next->setShortcut(QKeySequence(Qt::Key_PageDown));
  QAction* back = m->addAction(tr("&Previous step"), lesson_, &LessonPane::back);
  back->setShortcut(QKeySequence(Qt::Key_PageUp));
  m->addAction(tr("&Reveal the answer"), lesson_, &LessonPane::reveal_answer)
      ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
  m->addSeparator();
  QAction* instructor = m->addAction(tr("&Instructor mode (large text, high contrast)"), this,
                                     [this](bool on) { set_instructor_mode(on); });
  instructor->setCheckable(true);
  instructor->setShortcut(QKeySequence(Qt::Key_F11));
  m->addAction(lesson_dock_->toggleViewAction());
}

bool MainWindow::open_lesson(const QString& path) {
  QString error;
  std::optional<OpenedLesson> lesson = open_lesson_file(path, &error);
  if (!lesson || !open_file(lesson->graph_path, true)) {
    if (error.isEmpty()) error = tr("The lesson's graph %1 does not open: %2").arg(lesson->graph_path, last_error());
    last_error_ = error;
    QMessageBox::warning(this, tr("Lesson"), error);
    return false;
  }
  // The answers are computed for the lesson's device: plan the graph on screen for the same one.
  const DeviceDescription device = lesson->lesson.device.empty()
                                       ? DeviceDescription::default_device()
                                       : *DeviceDescription::preset(lesson->lesson.device);
  session_->set_what_if(session_->engine().options(), device);
  whatif_->set_from(session_->engine().options(), device);
  if (!lesson->run_note.isEmpty()) statusBar()->showMessage(lesson->run_note, 10000);
  lesson_->start(std::move(*lesson), session_->graph_ptr(), device);
  lesson_dock_->show();
  lesson_dock_->raise();
  fit_lesson_dock();
  return true;
}

void MainWindow::on_lesson_action(int action) {
  if (!session_->has_document()) return;
  if (static_cast<Action>(action) == Action::auto_fuse) accept_all_profitable();
  else session_->undo_stack()->setIndex(0);  // back to the unfused graph, undoably
}

void MainWindow::set_instructor_mode(bool on) {
  if (on != instructor_mode_) make_room_for_lesson(on);
  instructor_mode_ = on;
  set_ui_scale(on ? 1.5 : 1.0);
  lesson_->set_high_contrast(on);
  if (on) lesson_dock_->show();
  fit_lesson_dock();
}

// At projector size the right-hand panels' minimum widths beside the lesson pass a 1600-pixel screen and leave
// the graph a strip: they close while instructor mode is on, and the ones that were open come back after it.
void MainWindow::make_room_for_lesson(bool on) {
  if (on) {
    given_way_.clear();
    for (QDockWidget* d : docks_) {
      if (dockWidgetArea(d) != Qt::RightDockWidgetArea || d->isHidden()) continue;
      given_way_.push_back(d);
      d->hide();
    }
    return;
  }
  for (QDockWidget* d : given_way_) d->show();
  if (std::find(given_way_.begin(), given_way_.end(), explain_dock()) != given_way_.end()) explain_dock()->raise();
  given_way_.clear();
}

// After the pending layout pass: a dock resized before the window has laid out keeps its old width.
void MainWindow::fit_lesson_dock() {
  lesson_->setMinimumWidth(instructor_mode_ ? 560 : 360);  // projector text needs the room; the dock can grow
  QTimer::singleShot(0, this, [this] { resizeDocks({lesson_dock_}, {instructor_mode_ ? 620 : 440}, Qt::Horizontal); });
}

}  // namespace fx::app
