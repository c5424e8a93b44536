// The answers a lesson reveals, computed from the engine (and from a bundled run report where it measured the
// same graph and plan), and how close a learner's prediction came. Nothing here is read from the lesson file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cost/device_description.h"
#include "core/graph/graph.h"
#include "core/lesson/lesson.h"
#include "core/report/run_report.h"

namespace fx {

struct Reveal {
  std::optional<double> model_value;  // numeric questions: MiB, a kernel count, a speedup
  std::string model_choice;           // choice questions: "fused", "memory", "yes"
  std::string model_text;             // "The cost model (H100 SXM): 768 MiB."
  std::optional<double> measured_value;
  std::string measured_choice;
  std::string measured_text;          // "Measured on NVIDIA H100 80GB HBM3 (2026-11-22): 775 MiB."; "" when none
  std::string why;                    // the engine's reasoning: its decision message, the intensity and ridge
};

// A run report as a lesson shows it: the report, the date it was recorded, and whether it may be shown.
struct LessonRun {
  RunReport report;
  std::string measured_on;
  std::string label() const;  // "NVIDIA H100 80GB HBM3, measured 2026-11-22"
};

// "" when `run` measured this graph with the same shapes (its predicted unfused bytes equal the engine's) and,
// for its fused plan, the plan auto-fuse makes on `device`; otherwise why a learner must not see its numbers.
std::string lesson_run_mismatch(const RunReport& run, const Graph& graph, const DeviceDescription& device);

// Fails (with a message) when a step names a node the graph lacks or is not a predict step.
Expected<Reveal> reveal(const LessonStep& step, const Graph& graph, const DeviceDescription& device,
                        const LessonRun* run);

// The words a choice question accepts, in the order a view offers them.
std::vector<std::string> choices(Quantity q);
// The unit a numeric answer is typed in ("MiB", "kernels", "x").
std::string unit_of(Quantity q);

struct Grade {
  bool close = false;  // within 10% (a number), or the same word (a choice)
  std::string text;    // "You said 512 MiB: the model says 768 MiB, off by a factor of 1.5."
};
// Grades the learner's answer against the model's (and the measurement's, where there is one). An answer
// that is not a number or not one of the choices is graded as such, never guessed at.
Grade grade(const Reveal& reveal, Quantity q, const std::string& answer);

// The run step's text: both plans' measured times and bytes and the speedup, labelled with the GPU and date.
std::string describe_run(const LessonRun& run);

}  // namespace fx
