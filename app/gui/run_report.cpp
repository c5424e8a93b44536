#include "app/gui/run_report.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QObject>
#include <QStringList>
#include <algorithm>
#include <cmath>
#include <map>

#include "core/cost/device_description.h"

namespace fx::app {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString mib(double bytes) { return QStringLiteral("%1 MiB").arg(bytes / 1048576, 0, 'f', 0); }

// The preset whose datasheet peaks the roofs take: the one the report's profile names, else the GPU's.
std::optional<DeviceDescription> peak_preset(const RunReport& r) {
  const std::string gpu = r.device ? r.device->name : std::string();
  const std::string named = r.profile && !r.profile->peak_device.empty() ? r.profile->peak_device : gpu;
  auto preset = DeviceDescription::preset(named);
  if (!preset && gpu.find("H100") != std::string::npos) preset = DeviceDescription::h100_sxm();
  if (!preset && gpu.find("H200") != std::string::npos) preset = DeviceDescription::h200();
  return preset;
}

}  // namespace

std::optional<RunReport> read_report(const QByteArray& json, QString* error) {
  auto report = read_run_report(std::string_view(json.constData(), static_cast<std::size_t>(json.size())));
  if (report) return std::move(*report);
  if (error) {
    QStringList lines;
    for (const Diagnostic& d : report.errors())
      lines << (d.pointer.empty() ? qs(d.message) : QObject::tr("at %1: %2").arg(qs(d.pointer), qs(d.message)));
    *error = lines.join(QLatin1Char('\n'));
  }
  return std::nullopt;
}

QString how(const KernelReport& k) {
  const QString library = qs(k.library), path = qs(k.path);
  if (path.isEmpty()) return library;
  // A library's path names the library itself ("cuBLASLt GEMM, ..."): say it once.
  if (library.isEmpty() || path.startsWith(library)) return path;
  return library + QStringLiteral(" · ") + path;
}

std::optional<double> kernel_flops(const KernelReport& k) {
  if (!k.measured || !k.measured->flops_per_s || k.measured_ms <= 0) return std::nullopt;
  return *k.measured->flops_per_s * k.measured_ms * 1e-3;
}

std::vector<GroupCheck> group_checks(const PlanReport& plan) {
  std::vector<GroupCheck> out;
  std::map<std::string, std::size_t> index;
  for (const KernelReport& k : plan.kernels) {
    if (k.group.empty()) continue;
    auto [it, fresh] = index.try_emplace(k.group, out.size());
    if (fresh) {
      out.push_back({});
      out.back().group = qs(k.group);
      out.back().measured_bytes = 0.0;
    }
    GroupCheck& g = out[it->second];
    ++g.kernels;
    g.measured_us += k.measured_ms * 1e3;
    // The prediction is the group's, repeated on each of its kernels.
    if (k.group_predicted_ms) g.predicted_us = *k.group_predicted_ms * 1e3;
    if (k.group_predicted_bytes > 0) g.predicted_bytes = static_cast<double>(k.group_predicted_bytes);
    const auto bytes = k.measured_bytes();
    g.measured_bytes = bytes && g.measured_bytes ? std::optional<double>(*g.measured_bytes + *bytes) : std::nullopt;
    g.report_flag = g.report_flag || (k.measured && k.measured->mismatch);
    if (g.reason.isEmpty() && k.measured) g.reason = qs(k.measured->mismatch_reason);
  }
  return out;
}

bool GroupCheck::comparable() const {
  return (predicted_us && measured_us > 0) || (predicted_bytes && measured_bytes);
}

QString GroupCheck::mismatch() const {
  QStringList parts;
  const bool bytes_off = measured_bytes && predicted_bytes && *predicted_bytes > 0 &&
                         std::abs(*measured_bytes / *predicted_bytes - 1.0) > kMismatchTolerance;
  if (bytes_off || (report_flag && measured_bytes && predicted_bytes)) {
    parts << QObject::tr("measured %1 vs %2 predicted").arg(mib(*measured_bytes), mib(*predicted_bytes));
  }
  if (predicted_us && *predicted_us > 0 && measured_us > 0 &&
      std::abs(measured_us / *predicted_us - 1.0) > kMismatchTolerance) {
    parts << QObject::tr("%1 µs vs %2 µs predicted").arg(measured_us, 0, 'f', 1).arg(*predicted_us, 0, 'f', 1);
  }
  return parts.join(QStringLiteral("; "));
}

Roofs roofs_of(const RunReport& report) {
  Roofs r;
  if (report.profile) {
    r.hbm_bandwidth = report.profile->peak_bandwidth_bytes_per_s;
    r.copy_bandwidth = report.profile->copy_bandwidth_bytes_per_s.value_or(0.0);
  }
  const auto preset = peak_preset(report);
  if (!preset) return r;
  r.peak_device = qs(preset->name);
  if (report.profile && !report.profile->peak_device.empty()) r.peak_device = qs(report.profile->peak_device);
  if (r.hbm_bandwidth <= 0) r.hbm_bandwidth = preset->hbm_bandwidth;
  const std::pair<const char*, double> roofs[] = {{"FP32", preset->fp32_flops},
                                                  {"TF32 tensor cores", preset->tf32_tensor_flops},
                                                  {"BF16/FP16 tensor cores", preset->fp16_tensor_flops}};
  for (const auto& [label, flops] : roofs) {
    if (flops <= 0) continue;
    r.compute_roofs.push_back({QObject::tr(label), flops});
    r.peak_flops = std::max(r.peak_flops, flops);
  }
  return r;
}

ReportCheck check_report(const RunReport& report, const QString& graph_name, const QString& graph_hash,
                         const QString& plan_hash) {
  if (graph_name.isEmpty() && graph_hash.isEmpty()) return {};
  const QString graph = qs(report.graph), report_graph_hash = qs(report.graph_hash);
  if (!report_graph_hash.isEmpty() && !graph_hash.isEmpty()) {
    if (report_graph_hash != graph_hash) {
      return {ReportMatch::other_graph,
              QObject::tr("This report measured another graph (\"%1\", content %2) than the open one (\"%3\", "
                          "content %4): its numbers are not shown on this graph.")
                  .arg(graph, report_graph_hash, graph_name, graph_hash)};
    }
    if (!report.plan_hash.empty() && qs(report.plan_hash) != plan_hash) {
      return {ReportMatch::other_plan,
              QObject::tr("Measured for another plan of this graph: the unfused numbers are shown on the Before "
                          "view, the fused ones only in the tables. Load the measured plan to see them on the graph.")};
    }
    return {ReportMatch::same, {}};
  }
  if (graph != graph_name) {
    return {ReportMatch::other_graph,
            QObject::tr("This report measured the graph \"%1\", not the open \"%2\": its numbers are not shown.")
                .arg(graph, graph_name)};
  }
  return {ReportMatch::unchecked,
          QObject::tr("This report carries no content hash: it matches the open graph by name only.")};
}

QString summary_line(const RunReport& r) {
  QStringList parts;
  if (r.hbm_traffic_reduction) {
    QString s = QObject::tr("HBM traffic %1× less").arg(*r.hbm_traffic_reduction, 0, 'f', 2);
    if (r.hbm_traffic_reduction_predicted)
      s += QObject::tr(" (predicted %1×)").arg(*r.hbm_traffic_reduction_predicted, 0, 'f', 2);
    parts << s;
  }
  if (r.speedup > 0) parts << QObject::tr("speedup %1×").arg(r.speedup, 0, 'f', 2);
  parts << (r.verified ? QObject::tr("outputs verified: yes") : QObject::tr("outputs verified: NO"));
  return QObject::tr("Measured: ") + parts.join(QStringLiteral(" · "));
}

QString describe_timing(const RunTiming& t) {
  if (t.repeat < 1) return {};
  QString out = QObject::tr("median of %1 runs of each plan after %2 warm-up runs").arg(t.repeat).arg(t.warmup);
  if (t.cold_l2) out += QObject::tr(", a 256 MB flush before each");
  if (t.repeat_ms) out += QObject::tr(" (about %1 ms of runs, as do_bench)").arg(*t.repeat_ms);
  if (t.rest_ms) out += QObject::tr("; the GPU idle %1 ms before").arg(*t.rest_ms);
  return out;
}

QString describe_fault(const RunFault& f) {
  QString s = QObject::tr("GPU fault: %1 (%2, %3).").arg(qs(f.error)).arg(f.code).arg(qs(f.message));
  if (f.step) {
    s += QLatin1Char('\n') + QObject::tr("In the %1 plan, step %2: kernel %3 of group %4, during %5.")
                               .arg(qs(f.plan.value_or("")))
                               .arg(*f.step)
                               .arg(qs(f.kernel.value_or("")), qs(f.group.value_or("")), qs(f.phase));
    s += QLatin1Char('\n') + (f.attribution == "exact"
                                  ? QObject::tr("Each step was synchronised: this is the kernel that faulted.")
                                  : QObject::tr("This is the last step launched before the error was seen; launches "
                                                "are asynchronous, so an earlier one may have faulted."));
  } else {
    s += QLatin1Char('\n') + QObject::tr("No plan step had been launched (during %1).").arg(qs(f.phase));
  }
  return s + QLatin1Char('\n') +
         QObject::tr("The run stopped at the fault, so nothing was measured; the GPU process ended, this window did not.");
}

QString device_name(const RunReport& report) {
  return report.device && !report.device->name.empty() ? qs(report.device->name) : QObject::tr("an unnamed GPU");
}

std::vector<KernelTimingRow> timing_rows(const RunReport& report) {
  std::vector<KernelTimingRow> rows;
  if (!report.completed()) return rows;
  for (const PlanReport* p : report.plans()) {
    double clock = 0;
    for (const KernelReport& k : p->kernels) {
      KernelTimingRow row;
      row.plan = p->name;
      row.kernel = k.name;
      row.group = k.group;
      row.nodes = k.nodes;
      row.start_us = clock;
      row.duration_us = k.measured_ms * 1e3;
      if (k.measured) {
        row.bytes_read = k.measured->bytes_read;
        row.bytes_written = k.measured->bytes_written;
      }
      if (k.group_predicted_bytes > 0) row.predicted_bytes = static_cast<double>(k.group_predicted_bytes);
      clock = row.start_us + row.duration_us;
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::optional<Progress> parse_progress_line(const QString& line) {
  const QJsonDocument doc = QJsonDocument::fromJson(line.toUtf8());
  if (!doc.isObject()) return std::nullopt;
  const QJsonObject o = doc.object();
  Progress p;
  p.step = o.value(QLatin1String("step")).toInt(-1);
  p.total = o.value(QLatin1String("total")).toInt(o.value(QLatin1String("steps")).toInt(0));
  p.message = o.value(QLatin1String("message")).toString();
  // fusion-cli run --progress: {"step": "compile", "progress": 0.4, "message": ...}, a fraction of the run.
  if (o.value(QLatin1String("step")).isString() && o.value(QLatin1String("progress")).isDouble()) {
    // The stage leads the bar's text ("compile: fused plan: fx_g_mul (3 of 9)"), as fusion-cli prints it.
    const QString stage = o.value(QLatin1String("step")).toString();
    if (!stage.isEmpty()) p.message = p.message.isEmpty() ? stage : stage + QLatin1String(": ") + p.message;
    p.total = 1000;
    p.step = static_cast<int>(std::lround(std::clamp(o.value(QLatin1String("progress")).toDouble(), 0.0, 1.0) * 1000));
  }
  if (p.step < 0) return std::nullopt;
  return p;
}

}  // namespace fx::app
