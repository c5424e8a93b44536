// Where a run's wall time went, stage by stage, read off the progress the executor and the profiler report
// (compile, tune, verify, time, profile, ...): what the what-if loop costs, made visible in the text report and
// the JSON ("stages_s").
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace fx::cli {

class StageClock {
 public:
  // The time before the first stage (reading the graph, starting CUDA) is "setup".
  StageClock() : current_("setup"), since_(Clock::now()) {}

  // Ends the current stage and starts `stage`; a stage entered again adds to its earlier time.
  void enter(const std::string& stage) {
    if (stage == current_) return;
    close();
    current_ = stage;
  }

  // Each stage's seconds, in the order first entered, the current one counted up to now.
  std::vector<std::pair<std::string, double>> seconds() {
    close();
    return totals_;
  }

  // "setup 0.41 s, device 0.02 s, compile 0.10 s, ...; 3.2 s in all"
  std::string summary() {
    std::string out;
    double all = 0;
    char text[64];
    for (const auto& [stage, s] : seconds()) {
      std::snprintf(text, sizeof text, "%.2f s", s);
      out += (out.empty() ? "" : ", ") + stage + " " + text;
      all += s;
    }
    std::snprintf(text, sizeof text, "%.1f s", all);
    return out + "; " + text + " in all";
  }

 private:
  using Clock = std::chrono::steady_clock;
  void close() {
    const auto now = Clock::now();
    const double s = std::chrono::duration<double>(now - since_).count();
    since_ = now;
    for (auto& [stage, total] : totals_) {
      if (stage == current_) {
        total += s;
        return;
      }
    }
    totals_.emplace_back(current_, s);
  }
  std::string current_;
  Clock::time_point since_;
  std::vector<std::pair<std::string, double>> totals_;
};

}  // namespace fx::cli
