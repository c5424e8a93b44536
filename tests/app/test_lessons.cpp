// Workshop mode in the GUI: a lesson walked end to end (its graph opened on its device, a prediction entered, the
// reveal with the engine's and the bundled H100 run's numbers, an act step that fuses, the run step), the
// Lessons menu, instructor mode, and File > Export report. Offscreen, asserting on the pane's text and the session.
#include <QAction>
#include <QDockWidget>
#include <QFile>
#include <QMenu>
#include <QMenuBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <gtest/gtest.h>

#include "app/gui/lesson_pane.h"
#include "app/gui/lessons.h"
#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"
#include "tests/app/picture_wait.h"

namespace fx::app {
namespace {

const QString kLessonsDir = QStringLiteral(FX_SOURCE_DIR "/lessons/");

// Advances to the next step of `kind`, checking every step on the way has a title.
void advance_to(LessonPane& pane, StepKind kind) {
  const auto& steps = pane.lesson()->lesson.steps;
  do {
    ASSERT_LT(pane.step() + 1, static_cast<int>(steps.size()));
    pane.next();
    ASSERT_FALSE(pane.step_title().isEmpty());
  } while (steps[static_cast<std::size_t>(pane.step())].kind != kind);
}

TEST(Lessons, TheVerticalFusionLessonEndToEnd) {
  MainWindow w;
  w.set_confirm_close(false);
  w.resize(1400, 900);
  and_wait(w, [&] { ASSERT_TRUE(w.open_lesson(kLessonsDir + "02-vertical-fusion.json")); });
  LessonPane& pane = *w.lesson_pane();
  EXPECT_EQ(w.session().graph().name(), "relu_mul_add");
  EXPECT_EQ(w.session().device().name, "H100 SXM");  // the lesson's device, the one its answers are for
  ASSERT_TRUE(pane.lesson()->run.has_value()) << pane.lesson()->run_note.toStdString();
  EXPECT_TRUE(pane.step_title().startsWith("Explain"));
  EXPECT_TRUE(w.findChild<QDockWidget*>("dock.lesson")->isVisibleTo(&w));

  // Predict the unfused bytes: a factor of two low, and the pane says so against the model and the H100.
  advance_to(pane, StepKind::predict);
  EXPECT_TRUE(pane.step_title().contains("Bytes moved unfused"));
  pane.reveal_answer();
  EXPECT_FALSE(pane.revealed());  // nothing to grade yet
  EXPECT_TRUE(pane.reveal_text().contains("prediction first"));
  pane.set_answer("1024");
  pane.reveal_answer();
  ASSERT_TRUE(pane.revealed());
  const QString reveal = pane.reveal_text();
  EXPECT_TRUE(reveal.contains("You said 1024 MiB")) << reveal.toStdString();
  EXPECT_TRUE(reveal.contains("The model says 2048 MiB: you were low by a factor of 2")) << reveal.toStdString();
  EXPECT_TRUE(reveal.contains("Measured: 2062 MiB")) << reveal.toStdString();
  EXPECT_TRUE(reveal.contains("Measured: NVIDIA H100 80GB HBM3, measured 2026-11-22.")) << reveal.toStdString();

  // The next step forgets the reveal and asks for a kernel count.
  QSignalSpy changed(&pane, &LessonPane::step_changed);
  pane.next();
  EXPECT_EQ(changed.count(), 1);
  EXPECT_FALSE(pane.revealed());
  EXPECT_TRUE(pane.step_title().contains("Kernels after auto-fuse"));
  pane.set_answer("1");
  pane.reveal_answer();
  EXPECT_TRUE(pane.reveal_text().contains("spot on")) << pane.reveal_text().toStdString();

  // The act step fuses the graph on screen, undoably.
  advance_to(pane, StepKind::act);
  and_wait(w, [&] { emit pane.action_requested(Action::auto_fuse); });
  EXPECT_EQ(w.session().engine().plan().kernel_count(), 1);

  advance_to(pane, StepKind::run);
  EXPECT_TRUE(pane.reveal_text().contains("Speedup of the fused plan: 2.06x")) << pane.reveal_text().toStdString();
  pane.next();
  EXPECT_TRUE(pane.step_title().startsWith("Reflect"));
  pane.next();  // the last step stays
  EXPECT_TRUE(pane.step_title().startsWith("Reflect"));

  // File > Export report on the lesson's graph carries the bundled measurements.
  QTemporaryDir dir;
  const QString out = dir.filePath("report.html");
  EXPECT_EQ(w.export_report(out), "");
  QFile f(out);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  const QByteArray html = f.readAll();
  EXPECT_TRUE(html.contains("Measured on <b>NVIDIA H100 80GB HBM3</b>"));
  EXPECT_TRUE(html.contains("<figure id=\"after\">"));  // Graphviz drew the pictures
  EXPECT_FALSE(html.contains("src="));
}

TEST(Lessons, MenuListsEveryLessonAndInstructorModeEnlarges) {
  MainWindow w;
  QMenu* lessons = nullptr;
  for (QAction* a : w.menuBar()->actions())
    if (a->text() == "&Lessons") lessons = a->menu();
  ASSERT_NE(lessons, nullptr);
  const std::vector<LessonFile> shipped = find_lessons();
  ASSERT_GE(shipped.size(), 8u);
  for (const LessonFile& l : shipped) {
    bool listed = false;
    for (QAction* a : lessons->actions()) listed = listed || a->text().endsWith(QString::fromStdString(l.lesson.title));
    EXPECT_TRUE(listed) << l.lesson.title;
  }
  bool next_on_page_down = false;
  for (QAction* a : lessons->actions()) next_on_page_down = next_on_page_down || a->shortcut() == QKeySequence(Qt::Key_PageDown);
  EXPECT_TRUE(next_on_page_down);
  w.set_instructor_mode(true);
  EXPECT_DOUBLE_EQ(w.ui_scale(), 1.5);
  EXPECT_TRUE(w.lesson_pane()->styleSheet().contains("#000000"));
  w.set_instructor_mode(false);
  EXPECT_DOUBLE_EQ(w.ui_scale(), 1.0);
}

TEST(Lessons, ALessonWithoutABundledRunHasNoneAndAMissingOneIsNamed) {
  QString error;
  auto lesson = open_lesson_file(kLessonsDir + "05-gemm-epilogue.json", &error);
  ASSERT_TRUE(lesson) << error.toStdString();
  EXPECT_FALSE(lesson->run.has_value());
  auto bundled = open_lesson_file(kLessonsDir + "04-horizontal-fusion.json", &error);
  ASSERT_TRUE(bundled) << error.toStdString();
  EXPECT_TRUE(bundled->run.has_value());  // its bundled report matches the graph and auto-fuse's plan
  EXPECT_FALSE(open_lesson_file(kLessonsDir + "no-such-lesson.json", &error));
  EXPECT_TRUE(error.contains("no-such-lesson"));
}

}  // namespace
}  // namespace fx::app
