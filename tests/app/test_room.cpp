// Room on screen: the Explanation panel is readable in the default layout at 1600x900 and 1280x800, and
// instructor mode with a lesson open fits a 1600-pixel screen with the graph getting most of it; the panels it
// closed come back after it. Offscreen, with no saved window state.
#include <QApplication>
#include <QDockWidget>
#include <QSettings>
#include <QSignalSpy>
#include <gtest/gtest.h>

#include "app/gui/graph_view.h"
#include "app/gui/main_window.h"

namespace fx::app {
namespace {

// Lets the window lay out, and the docks take the sizes given after the first show.
void settle() {
  for (int i = 0; i < 5; ++i) QApplication::processEvents();
}

QDockWidget* dock(MainWindow& w, const char* name) { return w.findChild<QDockWidget*>(QLatin1String(name)); }

std::unique_ptr<MainWindow> shown_window(const QSize& size) {
  QSettings().remove(QStringLiteral("window"));  // the first start: no layout saved by an earlier test
  auto w = std::make_unique<MainWindow>();
  w->set_confirm_close(false);
  w->resize(size);
  w->show();
  settle();
  return w;
}

class DefaultDocks : public ::testing::TestWithParam<QSize> {};

// The Explanation gets about 30% of the width and most of the right column's height; the graph keeps the most.
TEST_P(DefaultDocks, GiveTheExplanationRoom) {
  const QSize size = GetParam();
  auto w = shown_window(size);
  ASSERT_EQ(w->size(), size);
  QDockWidget* explain = w->explain_dock();
  ASSERT_TRUE(explain->isVisible());
  EXPECT_GE(explain->width(), 380);
  EXPECT_GE(explain->width(), size.width() * 27 / 100) << explain->width();
  EXPECT_GE(explain->height(), size.height() * 55 / 100) << explain->height();
  QDockWidget* candidates = dock(*w, "dock.candidates");
  EXPECT_GE(candidates->height(), 150);
  EXPECT_LE(candidates->height(), size.height() * 30 / 100) << candidates->height();
  EXPECT_GT(w->view()->width(), explain->width());
  EXPECT_GE(w->view()->height(), size.height() * 45 / 100) << w->view()->height();
}

INSTANTIATE_TEST_SUITE_P(Screens, DefaultDocks, ::testing::Values(QSize(1600, 900), QSize(1280, 800)));

// F11 with a lesson open: the right-hand panels give way, so the window's minimum width fits a 1600-pixel screen
// and the graph is wider than the lesson; leaving instructor mode brings back exactly the panels that were open.
TEST(InstructorMode, FitsA1600PixelScreenAndRestoresThePanels) {
  auto w = shown_window(QSize(1600, 900));
  QDockWidget* history = dock(*w, "dock.history");
  history->close();  // closed by the user: stays closed after instructor mode
  settle();
  QSignalSpy ready(w.get(), &MainWindow::picture_ready);
  ASSERT_TRUE(w->open_lesson(QStringLiteral(FX_SOURCE_DIR "/lessons/02-vertical-fusion.json")));
  ASSERT_TRUE(ready.wait(60000));
  w->set_instructor_mode(true);
  settle();
  EXPECT_LE(w->minimumSizeHint().width(), 1600);
  EXPECT_LE(w->minimumSizeHint().height(), 900);
  EXPECT_FALSE(w->explain_dock()->isVisible());
  EXPECT_FALSE(dock(*w, "dock.whatif")->isVisible());
  QDockWidget* lesson = dock(*w, "dock.lesson");
  ASSERT_TRUE(lesson->isVisible());
  EXPECT_GE(lesson->width(), 560);
  EXPECT_GT(w->view()->width(), lesson->width()) << w->view()->width() << " vs " << lesson->width();
  EXPECT_GE(w->view()->width(), 1600 / 2);
  w->set_instructor_mode(false);
  settle();
  EXPECT_TRUE(w->explain_dock()->isVisible());
  EXPECT_FALSE(history->isVisible());
  EXPECT_FALSE(dock(*w, "dock.whatif")->isHidden());
  EXPECT_FALSE(dock(*w, "dock.compare")->isHidden());
}

}  // namespace
}  // namespace fx::app
