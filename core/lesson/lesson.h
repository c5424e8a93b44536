// A workshop lesson (lessons/*.json, schemas/lesson.schema.json): a sample graph and steps to walk through it.
// Steps explain, ask the learner to predict, act on the graph, reveal a run's measurements, or reflect. A
// lesson carries no answers: every number it reveals is computed by the engine (answer.h) or read from a run
// report bundled with it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/diagnostic.h"

namespace fx {

enum class StepKind { explain, predict, act, run, reflect };
std::string_view to_string(StepKind k);

// What a predict step asks for. Node lists name nodes of the lesson's graph.
enum class Quantity {
  bytes_unfused,  // MiB the listed nodes move run one kernel each (all nodes when none are listed)
  bytes_fused,    // MiB the auto-fused kernels holding the listed nodes move
  kernel_count,   // kernels auto-fuse makes
  speedup,        // predicted unfused time / auto-fused time
  faster_plan,    // which of the two plans (unfused, auto-fused) is faster
  bound,          // is the node memory bound or compute bound (run alone)
  same_kernel,    // does auto-fuse put the two nodes in one kernel
};
std::string_view to_string(Quantity q);
bool is_choice(Quantity q);  // answered by picking one of a few words, not by a number

// What an act step does to the graph on screen.
enum class Action { auto_fuse, unfuse };

struct LessonStep {
  StepKind kind = StepKind::explain;
  std::string title;
  std::string text;  // plain text; a blank line separates paragraphs
  std::optional<Quantity> quantity;  // predict steps
  std::vector<std::string> nodes;    // bytes_* (a subset), bound (one), same_kernel (two)
  std::optional<Action> action;      // act steps
};

struct BundledRun {
  std::string file;         // relative to the lesson file
  std::string measured_on;  // the date the report was recorded, YYYY-MM-DD
};

struct Lesson {
  std::string id;      // the file's base name, "02-vertical-fusion"
  std::string title;
  std::string summary;
  std::string graph;   // a sample graph's file name without .json
  std::string device;  // the cost-model preset the answers are computed for ("" for the default)
  std::optional<BundledRun> run;
  int minutes = 0;     // how long it takes in a workshop
  std::vector<LessonStep> steps;
};

inline constexpr const char* kLessonFormat = "fusion-explorer/lesson";
inline constexpr int kLessonVersion = 1;

// The one reader of lesson files; errors are located by JSON pointer.
Expected<Lesson> read_lesson(std::string_view json_text, std::string id);

}  // namespace fx
