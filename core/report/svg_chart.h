// The session report's charts as inline SVG text: a roofline of the plan's kernels and predicted vs measured
// plan times. Pure functions, so the report stays one self-contained file and the charts are tested as text.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fx {

struct RooflinePoint {
  std::string label;          // the group's id
  double intensity = 0;       // FLOP per byte moved
  double flops_per_s = 0;     // achieved: FLOPs / time
  bool fused = false;         // drawn filled (the fused plan) or hollow (the unfused one)
  bool measured = false;      // a square at the run's measured bytes and time; a circle at the prediction
};

struct Roof {
  double bandwidth = 0;   // bytes/s
  double peak_flops = 0;  // FLOP/s
  std::string label;      // "H200: 4.8 TB/s, 67 TFLOP/s FP32"
};

// Log-log axes spanning the points and the ridge; points without FLOPs or time are left out.
std::string roofline_svg(const Roof& roof, const std::vector<RooflinePoint>& points);

struct TimeBar {
  std::string label;  // "unfused", "fused"
  double predicted_us = 0;
  std::optional<double> measured_us;
};

// Horizontal bars, predicted beside measured, on one linear scale.
std::string time_bars_svg(const std::vector<TimeBar>& bars);

}  // namespace fx
