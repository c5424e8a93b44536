// Exports of the current document and view. Every write goes through write_file_atomic.
#pragma once

#include <QByteArray>
#include <QString>
#include <string>

#include "core/fusion/engine.h"

namespace fx::app {

class GraphScene;

// Writes through core's write_text_file_atomic, as saves do: the old file survives any failure, and a symlink,
// the mode and hard links are kept (QSaveFile's rename would break hard links). Returns "" or the error.
QString write_file_atomic(const QString& path, const QByteArray& bytes);

// DOT of the graph with the plan's fused groups as clusters coloured by fusion kind.
std::string plan_to_dot(const FusionEngine& engine);
// The whole scene as SVG (vector) or PNG (at most 8,000 px on the long side). Return "" or an error.
QString export_scene_svg(GraphScene& scene, const QString& path);
QString export_scene_png(GraphScene& scene, const QString& path);

}  // namespace fx::app
