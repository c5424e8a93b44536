#include "kernels/executor/profile_summary.h"

#include <cmath>

#include "core/graph/shape.h"

namespace fx::gpu {
namespace {

// Below this much, a gap between what a kernel stored into the L2 and what reached DRAM is noise, not news.
constexpr double kL2ResidueNoteBytes = double{1 << 20};

std::optional<double> divide(std::optional<double> num, double den) {
  if (!num || !(den > 0.0)) return std::nullopt;
  return *num / den;
}

bool generated(const std::string& library) { return library.rfind("generated", 0) == 0; }

// Sum of the CUDA-event times of the steps of `group` in this plan: the time the group's FLOPs took.
double group_time_ms(const PlanReport& plan, const std::string& group) {
  double ms = 0.0;
  for (const KernelReport& k : plan.kernels) {
    if (k.group == group) ms += k.measured_ms;
  }
  return ms;
}

double plan_flops(const Plan& plan) {
  double flops = 0.0;
  for (const Group& g : plan.groups()) {
    if (g.launched()) flops += g.cost.flops;
  }
  return flops;
}

void add_notes(KernelProfile& k, const KernelCounters& c, std::int64_t l2_bytes) {
  if (k.predicted_bytes < static_cast<double>(l2_bytes)) {
    k.notes.push_back("footprint " + format_bytes(k.predicted_bytes) + " is below the L2 size (" +
                      format_bytes(static_cast<double>(l2_bytes)) + "): writes may stay in L2");
  }
  if (k.l2_bytes_written && k.bytes_written && *k.l2_bytes_written - *k.bytes_written > kL2ResidueNoteBytes &&
      *k.l2_bytes_written > (1.0 + kBytesMismatchTolerance) * *k.bytes_written) {
    k.notes.push_back(format_bytes(*k.l2_bytes_written - *k.bytes_written) +
                      " of the bytes it stored were still in the L2 when it ended");
  }
  if (c.available && !k.timeline.empty() && static_cast<std::size_t>(c.kernels) != k.timeline.size()) {
    k.notes.push_back("the counter pass saw " + std::to_string(c.kernels) + " CUDA kernels, the timing pass " +
                      std::to_string(k.timeline.size()) + " (the library chose another algorithm)");
  }
}

KernelProfile profile_kernel(const KernelReport& report, const StepMeasurement* step, const PlanReport& plan,
                             const Plan& groups, const ProfileSummary& s, std::int64_t l2_bytes) {
  KernelProfile k;
  k.name = report.name;
  k.group = report.group;
  k.library = report.library;
  k.predicted_bytes = static_cast<double>(report.bytes);
  k.time_ms = report.measured_ms;
  if (const Group* g = groups.find(report.group)) {
    const double ms = group_time_ms(plan, report.group);
    if (ms > 0.0) k.flops_per_s = g->cost.flops / (ms * 1e-3);
  }
  if (!step) {
    k.not_measured = "not measured: the profile passes have no record of this step";
    return k;
  }
  k.timeline = step->timeline;
  k.shared_window = step->shared_window;
  const KernelCounters& c = step->counters;
  if (c.available) {
    k.bytes_read = c.bytes_read;
    k.bytes_written = c.bytes_written;
    k.l2_bytes_written = c.l2_bytes_written;
    k.cuda_kernels = c.kernels;
    const double measured = c.bytes_read + c.bytes_written;
    k.measured_over_predicted = divide(measured, k.predicted_bytes);
    k.achieved_bandwidth = divide(measured, k.time_ms * 1e-3);
    k.fraction_of_peak = divide(k.achieved_bandwidth, s.peak_bandwidth);
    if (s.copy_bandwidth) k.fraction_of_copy = divide(k.achieved_bandwidth, *s.copy_bandwidth);
    k.mismatch = k.measured_over_predicted && std::abs(*k.measured_over_predicted - 1.0) > kBytesMismatchTolerance;
    k.mismatch_reason = explain_bytes_mismatch(k, l2_bytes);
  } else {
    k.not_measured = c.reason.empty() ? "not measured" : c.reason;
  }
  add_notes(k, c, l2_bytes);
  return k;
}

// Kernel `i` of the plan: its profile, and, where its bytes are shared with identical steps, a note saying so.
KernelProfile profile_step(const PlanReport& report, const PlanMeasurement& measured, std::size_t i, const Plan& groups,
                           const ProfileSummary& s, std::int64_t l2_bytes) {
  const StepMeasurement* step = i < measured.steps.size() ? &measured.steps[i] : nullptr;
  KernelProfile k = profile_kernel(report.kernels[i], step, report, groups, s, l2_bytes);
  if (k.shared_window && k.bytes_read) {
    k.notes.insert(k.notes.begin(), shared_window_text(*k.shared_window, report.name, static_cast<int>(i)));
  }
  return k;
}

PlanProfile profile_plan(const PlanReport& report, const PlanMeasurement& measured, const Plan& groups,
                         const ProfileSummary& s, std::int64_t l2_bytes) {
  PlanProfile p;
  p.name = report.name;
  p.predicted_bytes = static_cast<double>(report.bytes);
  p.time_ms = report.total_ms;
  p.flops = plan_flops(groups);
  if (p.time_ms > 0.0) p.flops_per_s = p.flops / (p.time_ms * 1e-3);
  double read = 0.0, written = 0.0;
  int missing = 0;
  for (std::size_t i = 0; i < report.kernels.size(); ++i) {
    KernelProfile k = profile_step(report, measured, i, groups, s, l2_bytes);
    if (k.bytes_read && k.bytes_written) {
      read += *k.bytes_read;
      written += *k.bytes_written;
    } else if (missing++ == 0) {
      p.not_measured = k.not_measured;
    }
    p.kernels.push_back(std::move(k));
  }
  if (missing > 0) {
    p.not_measured = std::to_string(missing) + " of " + std::to_string(report.kernels.size()) +
                     " kernels not measured (" + p.not_measured + ")";
    return p;
  }
  p.bytes_read = read;
  p.bytes_written = written;
  p.measured_over_predicted = divide(p.measured_bytes(), p.predicted_bytes);
  p.achieved_bandwidth = divide(p.measured_bytes(), p.time_ms * 1e-3);
  p.fraction_of_peak = divide(p.achieved_bandwidth, s.peak_bandwidth);
  if (s.copy_bandwidth) p.fraction_of_copy = divide(p.achieved_bandwidth, *s.copy_bandwidth);
  p.mismatch = p.measured_over_predicted && std::abs(*p.measured_over_predicted - 1.0) > kBytesMismatchTolerance;
  return p;
}

// The report's "measured" of a kernel or a plan: the fields both profiles have, by the same names.
template <typename Profile>
MeasuredTraffic traffic(const Profile& p) {
  MeasuredTraffic m;
  if (p.bytes_read && p.bytes_written) {
    m.bytes_read = p.bytes_read;
    m.bytes_written = p.bytes_written;
  } else {
    m.reason = p.not_measured;
  }
  m.predicted_bytes = p.predicted_bytes;
  m.measured_over_predicted = p.measured_over_predicted;
  m.mismatch = p.mismatch;
  m.achieved_bytes_per_s = p.achieved_bandwidth;
  m.fraction_of_peak_bandwidth = p.fraction_of_peak;
  m.fraction_of_copy_bandwidth = p.fraction_of_copy;
  m.flops_per_s = p.flops_per_s;
  return m;
}

MeasuredTraffic kernel_traffic(const KernelProfile& k) {
  MeasuredTraffic m = traffic(k);
  if (m.bytes()) {
    m.l2_bytes_written = k.l2_bytes_written;
    m.cuda_kernels = k.cuda_kernels;
  }
  m.mismatch_reason = k.mismatch_reason;
  m.notes = k.notes;
  m.timeline = k.timeline;
  m.shared_window = k.shared_window;
  return m;
}

MeasuredTraffic plan_traffic(const PlanProfile& p) {
  MeasuredTraffic m = traffic(p);
  m.flops = p.flops;
  return m;
}

}  // namespace

std::string explain_bytes_mismatch(const KernelProfile& k, std::int64_t l2_bytes) {
  if (!k.measured_over_predicted || std::abs(*k.measured_over_predicted - 1.0) <= kBytesMismatchTolerance) return {};
  if (*k.measured_over_predicted < 1.0) {
    if (k.predicted_bytes < static_cast<double>(l2_bytes)) {
      return "fewer bytes than predicted: the footprint is below the L2 size, writes may stay in L2";
    }
    if (k.l2_bytes_written && k.bytes_written &&
        *k.l2_bytes_written > (1.0 + kBytesMismatchTolerance) * *k.bytes_written) {
      return "fewer bytes than predicted: part of the writes was still in the L2 when the kernel ended";
    }
    return "fewer bytes than predicted: an operand was served from the L2 (broadcast or repeated input)";
  }
  if (k.library == kBuiltInKernelLibrary) {
    return "more bytes than predicted: every block of query rows reads K, V and the mask again, and what misses the "
           "L2 comes from DRAM again";
  }
  if (!generated(k.library)) {
    return "more bytes than predicted: the library re-reads operands across tiles or uses a workspace";
  }
  return "more bytes than predicted: re-reads that missed the L2 (strided or transposed access, a row read in "
         "several passes) or partly used 32-byte sectors";
}

ProfileSummary summarize_profile(const RunReport& report, const ProfileMeasurements& measured, const Plan& unfused,
                                 const Plan& fused, const DeviceDescription& peak, std::int64_t l2_bytes) {
  ProfileSummary s;
  s.timing_source = measured.timing_source;
  s.timing_reason = measured.timing_reason;
  s.counters_reason = measured.counters_reason;
  s.peak_device = peak.name;
  s.peak_bandwidth = peak.hbm_bandwidth;
  s.copy_bandwidth = measured.copy_bandwidth;
  s.copy_reason = measured.copy_reason;
  s.notes = measured.notes;
  s.plans[0] = profile_plan(report.unfused, measured.plans[0], unfused, s, l2_bytes);
  s.plans[1] = profile_plan(report.fused, measured.plans[1], fused, s, l2_bytes);
  s.predicted_reduction = divide(s.plans[0].predicted_bytes, s.plans[1].predicted_bytes);
  const auto u = s.plans[0].measured_bytes(), f = s.plans[1].measured_bytes();
  if (u && f && *f > 0.0) {
    s.hbm_traffic_reduction = *u / *f;
  } else {
    s.reduction_reason = !u ? s.plans[0].not_measured : !f ? s.plans[1].not_measured : "the fused plan moved 0 bytes";
  }
  return s;
}

void add_profile(RunReport& report, const ProfileSummary& s) {
  PlanReport* plans[2] = {&report.unfused, &report.fused};
  for (std::size_t p = 0; p < 2; ++p) {
    std::vector<KernelReport>& kernels = plans[p]->kernels;
    const auto& profiled = s.plans[p].kernels;
    for (std::size_t i = 0; i < kernels.size() && i < profiled.size(); ++i) kernels[i].measured = kernel_traffic(profiled[i]);
    plans[p]->measured = plan_traffic(s.plans[p]);
  }
  RunProfile& profile = report.profile.emplace();
  profile.timing_source = s.timing_source;
  profile.timing_reason = s.timing_reason;
  profile.counters = s.counters_reason.empty() ? "measured" : s.counters_reason;
  profile.peak_device = s.peak_device;
  profile.peak_bandwidth_bytes_per_s = s.peak_bandwidth;
  profile.copy_bandwidth_bytes_per_s = s.copy_bandwidth;
  profile.copy_bandwidth_reason = s.copy_reason;
  profile.notes = s.notes;
  report.hbm_traffic_reduction = s.hbm_traffic_reduction;
  report.hbm_traffic_reduction_reason = s.hbm_traffic_reduction ? std::string() : s.reduction_reason;
  report.hbm_traffic_reduction_predicted = s.predicted_reduction;
}

}  // namespace fx::gpu
