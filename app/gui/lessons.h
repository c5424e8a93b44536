// The workshop lessons shipped with the app (lessons/*.json): found like the samples, in the source tree when
// running from a build folder or beside an installed program, and loaded with their sample graph and any run
// report bundled with them.
#pragma once

#include <QString>
#include <optional>
#include <vector>

#include "core/lesson/answer.h"
#include "core/lesson/lesson.h"

namespace fx::app {

QString lessons_dir();  // "" when none is found

struct LessonFile {
  QString path;
  Lesson lesson;
};
// Every lesson that reads, in file-name order (the order they are taught in).
std::vector<LessonFile> find_lessons();

// A lesson ready to teach: the lesson, the path of its sample graph, and its bundled run report when that report
// measured this graph and the plan auto-fuse makes (otherwise `run_note` says why it is not shown).
struct OpenedLesson {
  Lesson lesson;
  QString graph_path;
  std::optional<LessonRun> run;
  QString run_note;
};
// nullopt with `error` set when the lesson, its sample or its device cannot be read.
std::optional<OpenedLesson> open_lesson_file(const QString& path, QString* error);

}  // namespace fx::app
