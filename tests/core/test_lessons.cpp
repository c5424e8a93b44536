// Workshop lessons (core/lesson): every shipped lesson loads, names an existing sample and valid steps, and
// every answer it reveals is computed (the engine's, or the bundled run report's when it measured that graph).
#include <algorithm>
#include <filesystem>
#include <map>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "core/lesson/answer.h"
#include "core/lesson/lesson.h"
#include "tests/core/fusion_test_util.h"

namespace fx {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const fs::path kLessons = fs::path(FX_SOURCE_DIR) / "lessons";

std::vector<fs::path> lesson_files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(kLessons))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

Lesson load(const fs::path& path) {
  auto l = read_lesson(read_file(path), path.stem().string());
  EXPECT_TRUE(l.ok()) << path << ": " << (l.ok() ? "" : format_diagnostics(l.errors()));
  return l.ok() ? std::move(l).value() : Lesson{};
}

DeviceDescription device_of(const Lesson& l) {
  return l.device.empty() ? DeviceDescription::default_device() : DeviceDescription::preset(l.device).value();
}

std::optional<LessonRun> run_of(const Lesson& l) {
  if (!l.run) return std::nullopt;
  auto r = read_run_report(read_file(kLessons / l.run->file));
  EXPECT_TRUE(r.ok()) << l.id;
  return LessonRun{std::move(r).value(), l.run->measured_on};
}

TEST(Lessons, EveryShippedLessonLoadsWithItsSampleAndAnswers) {
  const auto files = lesson_files();
  ASSERT_GE(files.size(), 8u);
  for (const fs::path& f : files) {
    const Lesson l = load(f);
    ASSERT_FALSE(l.steps.empty()) << f;
    ASSERT_TRUE(l.device.empty() || DeviceDescription::preset(l.device)) << f << ": device " << l.device;
    const Graph g = testing::sample(l.graph + ".json");
    const std::optional<LessonRun> run = run_of(l);
    if (run) {
      EXPECT_EQ(lesson_run_mismatch(run->report, g, device_of(l)), "") << f;
    }
    int predicts = 0;
    for (const LessonStep& s : l.steps) {
      if (s.kind != StepKind::predict) continue;
      ++predicts;
      auto r = reveal(s, g, device_of(l), run ? &*run : nullptr);
      ASSERT_TRUE(r.ok()) << f << " " << s.title << ": " << format_diagnostics(r.errors());
      if (is_choice(*s.quantity)) {
        const auto words = choices(*s.quantity);
        EXPECT_NE(std::find(words.begin(), words.end(), r->model_choice), words.end()) << f << " " << s.title;
      } else {
        EXPECT_TRUE(r->model_value && *r->model_value > 0) << f << " " << s.title;
      }
    }
    EXPECT_GE(predicts, 2) << f << ": a lesson asks the learner to predict";
  }
}

// A lesson states no results: a number with a unit in its text would be a typed answer, not the engine's.
TEST(Lessons, TextsTypeNoNumbersOfTheirOwn) {
  const std::regex typed(R"(\b\d+(\.\d+)?\s*(MiB|GiB|KiB|MB|GB|us|ms|x|kernels?|%|TB/s|GB/s)\b)");
  for (const fs::path& f : lesson_files()) {
    const Lesson l = load(f);
    for (const LessonStep& s : l.steps)
      EXPECT_FALSE(std::regex_search(s.text, typed)) << f << " step \"" << s.title << "\": " << s.text;
  }
}

TEST(Lessons, TheVerticalFusionLessonRevealsTheModelAndTheH100Measurement) {
  const Lesson l = load(kLessons / "02-vertical-fusion.json");
  const Graph g = testing::sample("relu_mul_add.json");
  const std::optional<LessonRun> run = run_of(l);
  ASSERT_TRUE(run);
  std::map<Quantity, Reveal> by;
  for (const LessonStep& s : l.steps)
    if (s.kind == StepKind::predict) by[*s.quantity] = reveal(s, g, DeviceDescription::h100_sxm(), &*run).value();
  EXPECT_DOUBLE_EQ(*by[Quantity::bytes_unfused].model_value, 2048.0);  // three kernels, 8192 x 8192 f32 each
  EXPECT_DOUBLE_EQ(*by[Quantity::bytes_fused].model_value, 1024.0);
  EXPECT_DOUBLE_EQ(*by[Quantity::kernel_count].model_value, 1.0);
  EXPECT_DOUBLE_EQ(*by[Quantity::bytes_unfused].measured_value, *run->report.plan("unfused")->measured_bytes() / 1048576);
  EXPECT_DOUBLE_EQ(*by[Quantity::speedup].measured_value,
                   run->report.plan("unfused")->total_ms / run->report.plan("fused")->total_ms);
  EXPECT_NE(by[Quantity::kernel_count].measured_text.find("NVIDIA H100 80GB HBM3, measured 2026-11-22"),
            std::string::npos);
  const std::string text = describe_run(*run);
  EXPECT_NE(text.find("NVIDIA H100"), std::string::npos);
  EXPECT_NE(text.find("Speedup of the fused plan: 2.06x"), std::string::npos);
}

TEST(Lessons, ARunOfAnotherGraphOrPlanIsNotShown) {
  const Lesson l = load(kLessons / "02-vertical-fusion.json");
  const std::optional<LessonRun> run = run_of(l);
  ASSERT_TRUE(run);
  EXPECT_NE(lesson_run_mismatch(run->report, testing::sample("sin_cos.json"), DeviceDescription::h100_sxm()), "");
  RunReport other_plan = run->report;
  other_plan.fused.kernels.front().nodes = {"mul"};
  EXPECT_NE(lesson_run_mismatch(other_plan, testing::sample("relu_mul_add.json"), DeviceDescription::h100_sxm()), "");
}

// The lesson's answers are what auto-fuse does: the chain is one attention kernel, which moves Q, K, V, the mask
// and ctx once (4 x 24 MiB + 4 MiB).
TEST(Lessons, AttentionIsOneKernel) {
  const Lesson l = load(kLessons / "09-attention.json");
  const Graph g = testing::sample(l.graph + ".json");
  int same_kernel = 0;
  for (const LessonStep& s : l.steps) {
    if (s.kind != StepKind::predict) continue;
    const Reveal r = reveal(s, g, device_of(l), nullptr).value();
    if (s.quantity == Quantity::same_kernel) {
      EXPECT_EQ(r.model_choice, "yes") << s.title;
      EXPECT_FALSE(r.why.empty());
      ++same_kernel;
    }
    if (s.quantity == Quantity::bytes_fused) {
      EXPECT_DOUBLE_EQ(*r.model_value, 100.0) << s.title;
    }
  }
  EXPECT_EQ(same_kernel, 2);
}

// The GEMM and the whole DAG after it are one cuDNN call: x, W and b read once, y written once
// (64 + 32 + 0.0078 + 64 MiB).
TEST(Lessons, AGeluWrittenOutJoinsTheGemm) {
  const Lesson l = load(kLessons / "10-epilogue-dag.json");
  const Graph g = testing::sample(l.graph + ".json");
  std::set<Quantity> seen;
  for (const LessonStep& s : l.steps) {
    if (s.kind != StepKind::predict) continue;
    const Reveal r = reveal(s, g, device_of(l), nullptr).value();
    seen.insert(*s.quantity);
    if (s.quantity == Quantity::same_kernel) EXPECT_EQ(r.model_choice, "yes") << s.title;
    if (s.quantity == Quantity::kernel_count) EXPECT_DOUBLE_EQ(*r.model_value, 1.0);
    if (s.quantity == Quantity::bytes_fused) EXPECT_NEAR(*r.model_value, 160.0, 0.01) << s.title;
  }
  EXPECT_EQ(seen, (std::set<Quantity>{Quantity::same_kernel, Quantity::kernel_count, Quantity::bytes_fused}));
}

TEST(Lessons, GradingSaysHowClose) {
  Reveal r;
  r.model_value = 2048;
  r.measured_value = 2062.3;
  Grade g = grade(r, Quantity::bytes_unfused, "2 GiB");
  EXPECT_TRUE(g.close);
  EXPECT_NE(g.text.find("spot on"), std::string::npos);
  g = grade(r, Quantity::bytes_unfused, "512");
  EXPECT_FALSE(g.close);
  EXPECT_NE(g.text.find("low by a factor of 4"), std::string::npos);
  EXPECT_NE(g.text.find("Measured:"), std::string::npos);
  g = grade(r, Quantity::bytes_unfused, "lots");
  EXPECT_FALSE(g.close);
  EXPECT_NE(g.text.find("not a positive number"), std::string::npos);
  Reveal c;
  c.model_choice = "no";
  EXPECT_TRUE(grade(c, Quantity::same_kernel, "no").close);
  EXPECT_FALSE(grade(c, Quantity::same_kernel, "yes").close);
}

TEST(Lessons, BadLessonsAreRefusedWithAPointer) {
  const std::string head = R"({"format": "fusion-explorer/lesson", "version": 1, "title": "t", "graph": "g", )";
  auto pointer = [&](const std::string& rest) {
    auto l = read_lesson(head + rest, "x");
    return l.ok() ? std::string("(accepted)") : l.errors().front().pointer;
  };
  EXPECT_EQ(pointer(R"("steps": []})"), "/steps");
  EXPECT_EQ(pointer(R"("steps": [{"kind": "lecture", "title": "a", "text": "b"}]})"), "/steps/0/kind");
  EXPECT_EQ(pointer(R"("steps": [{"kind": "predict", "title": "a", "text": "b"}]})"), "/steps/0");
  EXPECT_EQ(pointer(R"("steps": [{"kind": "predict", "title": "a", "text": "b", "quantity": "bound"}]})"),
            "/steps/0/nodes");
  EXPECT_EQ(pointer(R"("steps": [{"kind": "act", "title": "a", "text": "b", "action": "fly"}]})"), "/steps/0/action");
  EXPECT_EQ(pointer(R"("run_report": {"file": "r.json", "measured_on": "yesterday"}, "steps": []})"),
            "/run_report/measured_on");
  EXPECT_FALSE(read_lesson(R"({"format": "fusion-explorer/graph", "version": 1})", "x").ok());
  // A step naming a node the graph lacks is refused when answered, not guessed.
  LessonStep s{StepKind::predict, "t", "x", Quantity::bound, {"nope"}, std::nullopt};
  EXPECT_FALSE(reveal(s, testing::sample("relu_mul_add.json"), DeviceDescription::h100_sxm(), nullptr).ok());
}

}  // namespace
}  // namespace fx
