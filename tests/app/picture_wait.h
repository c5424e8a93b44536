// Shared by the GUI tests: layouts run on a worker thread, so an action that changes the picture is followed by
// a wait for the window's picture_ready (and for every layout still running, the side-by-side panes' too).
#pragma once

#include <QSignalSpy>
#include <gtest/gtest.h>

#include "app/gui/main_window.h"
#include "app/gui/side_by_side_view.h"

namespace fx::app {

// Runs `action` and waits for the picture it causes.
template <class F>
void and_wait(MainWindow& w, F action) {
  QSignalSpy ready(&w, &MainWindow::picture_ready);
  action();
  ASSERT_TRUE(ready.wait(60000));
  while (w.layout_busy() || w.side_by_side_view()->busy()) ASSERT_TRUE(ready.wait(60000));
}

}  // namespace fx::app
