// The session report's two pictures, before and after fusion, drawn by Graphviz from core's DOT export.
#pragma once

#include "core/report/session_report.h"

namespace fx {

// Fills before_svg and after_svg, or pictures_note with why they are missing (a graph too large to draw in a
// report, a Graphviz failure).
void render_plan_pictures(SessionReportInput& input);

// Graphs above this many nodes get no pictures: dot takes minutes on them and the SVG would be unreadable.
inline constexpr int kMaxPictureNodes = 1500;

}  // namespace fx
