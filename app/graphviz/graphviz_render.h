// Graphviz is not thread-safe: every caller (the GUI's layout worker, the report's pictures) takes this one mutex.
#pragma once

#include <mutex>
#include <string>

#include "core/graph/diagnostic.h"

namespace fx {

std::mutex& graphviz_mutex();

// DOT text laid out by dot and rendered as an SVG document.
Expected<std::string> render_dot_svg(const std::string& dot);

}  // namespace fx
