// The sample graphs shipped with the app, for the Samples menu: found in the source tree when running from
// a build folder, or next to an installed program.
#pragma once

#include <QString>
#include <vector>

namespace fx::app {

struct SampleInfo {
  QString name;         // the graph's name
  QString path;
  QString description;  // what it teaches
};

QString samples_dir();  // "" when none is found
std::vector<SampleInfo> find_samples();

}  // namespace fx::app
