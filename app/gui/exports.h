// Exports of the current document and view. Every write is atomic (QSaveFile: temp file + rename).
#pragma once

#include <QString>
#include <string>

#include "core/fusion/engine.h"

namespace fx::app {

class GraphScene;

// DOT of the graph with the plan's fused groups as clusters coloured by fusion kind.
std::string plan_to_dot(const FusionEngine& engine);
// The whole scene as SVG (vector) or PNG (at most 8,000 px on the long side). Return "" or an error.
QString export_scene_svg(GraphScene& scene, const QString& path);
QString export_scene_png(GraphScene& scene, const QString& path);

}  // namespace fx::app
