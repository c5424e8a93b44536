#include "app/gui/run_report.h"

#include <algorithm>
#include <cmath>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cmath>
#include <map>
#include <numeric>

#include "core/cost/device_description.h"

namespace fx::app {
namespace {

// The first of several spellings present as a number.
std::optional<double> number(const QJsonObject& o, std::initializer_list<const char*> keys, double scale = 1.0) {
  for (const char* k : keys) {
    const QJsonValue v = o.value(QLatin1String(k));
    if (v.isDouble()) return v.toDouble() * scale;
  }
  return std::nullopt;
}

QString text(const QJsonObject& o, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (o.value(QLatin1String(k)).isString()) return o.value(QLatin1String(k)).toString();
  return {};
}

KernelRun parse_kernel(const QJsonObject& k) {
  KernelRun r;
  r.name = text(k, {"name", "kernel"});
  r.group = text(k, {"group", "group_id"});
  r.library = text(k, {"library"});
  r.path = text(k, {"path"});
  for (const QJsonValue& n : k.value(QLatin1String("nodes")).toArray()) r.nodes.push_back(n.toString());
  r.start_us = number(k, {"start_us"}).value_or(0.0);
  r.time_us = number(k, {"measured_us", "time_us", "measured_time_us", "duration_us"})
                  .value_or(number(k, {"measured_ms", "time_ms"}, 1e3).value_or(0.0));
  r.predicted_us = number(k, {"predicted_us", "predicted_time_us"});
  if (!r.predicted_us) r.predicted_us = number(k, {"predicted_s", "predicted_time_s"}, 1e6);
  if (!r.predicted_us) r.predicted_us = number(k, {"group_predicted_ms"}, 1e3);  // fusion-cli run's field
  r.bytes_read = number(k, {"measured_bytes_read", "bytes_read", "dram_bytes_read"});
  r.bytes_written = number(k, {"measured_bytes_written", "bytes_written", "dram_bytes_write", "dram_bytes_written"});
  if (!r.bytes_read && !r.bytes_written) r.bytes_read = number(k, {"measured_bytes"});
  r.predicted_bytes = number(k, {"predicted_bytes", "group_predicted_bytes"});
  r.flops = number(k, {"flops"});
  // fusion-cli run nests the CUPTI pass's numbers in "measured" (an object; absent or with a reason when the
  // counters could not be read).
  const QJsonObject m = k.value(QLatin1String("measured")).toObject();
  if (!m.isEmpty()) {
    if (!r.bytes_read) r.bytes_read = number(m, {"bytes_read"});
    if (!r.bytes_written) r.bytes_written = number(m, {"bytes_written"});
    if (!r.predicted_bytes) r.predicted_bytes = number(m, {"predicted_bytes"});
    if (!r.flops) {
      if (auto rate = number(m, {"flops_per_s"}); rate && r.time_us > 0) r.flops = *rate * r.time_us * 1e-6;
    }
    r.bytes_mismatch = m.value(QLatin1String("mismatch")).toBool(false);
    r.mismatch_reason = text(m, {"mismatch_reason"});
  }
  return r;
}

QString mib(double bytes) { return QStringLiteral("%1 MiB").arg(bytes / 1048576, 0, 'f', 0); }

// The roofs of the preset the report names: the datasheet peaks the cost model plans with.
void read_roofs(const QJsonObject& root, RunReport& r) {
  const QJsonObject profile = root.value(QLatin1String("profile")).toObject();
  r.peak_device = text(profile, {"peak_device"});
  if (auto bw = number(profile, {"peak_bandwidth_bytes_per_s"})) r.hbm_bandwidth = *bw;
  r.copy_bandwidth = number(profile, {"copy_bandwidth_bytes_per_s"}).value_or(0.0);
  auto preset = DeviceDescription::preset((r.peak_device.isEmpty() ? r.device : r.peak_device).toStdString());
  if (!preset && r.device.contains(QLatin1String("H100"))) preset = DeviceDescription::h100_sxm();
  if (!preset && r.device.contains(QLatin1String("H200"))) preset = DeviceDescription::h200();
  if (!preset) return;
  if (r.peak_device.isEmpty()) r.peak_device = QString::fromStdString(preset->name);
  if (r.hbm_bandwidth <= 0) r.hbm_bandwidth = preset->hbm_bandwidth;
  const std::pair<const char*, double> roofs[] = {{"FP32", preset->fp32_flops},
                                                  {"TF32 tensor cores", preset->tf32_tensor_flops},
                                                  {"BF16/FP16 tensor cores", preset->fp16_tensor_flops}};
  for (const auto& [label, flops] : roofs) {
    if (flops <= 0) continue;
    r.compute_roofs.push_back({QObject::tr(label), flops});
    r.peak_flops = std::max(r.peak_flops, flops);
  }
}

PlanRun parse_plan(const QString& name, const QJsonObject& p) {
  PlanRun plan;
  plan.name = name.isEmpty() ? text(p, {"name", "plan"}) : name;
  for (const QJsonValue& k : p.value(QLatin1String("kernels")).toArray()) plan.kernels.push_back(parse_kernel(k.toObject()));
  if (auto ms = number(p, {"total_ms"}, 1e3); ms && *ms > 0) plan.measured_us = ms;
  return plan;
}

}  // namespace

QString unreadable_version(const QJsonObject& root) {
  const QJsonValue format = root.value(QLatin1String("format"));
  if (!format.isUndefined() && format.toString() != QLatin1String(kRunReportFormat)) {
    return QObject::tr("not a run report: its format is \"%1\", not \"%2\"")
        .arg(format.isString() ? format.toString() : QStringLiteral("?"), QLatin1String(kRunReportFormat));
  }
  const QJsonValue version = root.value(QLatin1String("version"));
  if (!version.isUndefined() && version.toInt(-1) != kRunReportVersion) {
    return QObject::tr("run report version %1: this program reads version %2 "
                       "(schemas/run-report.schema.json); run the graph again with this fusion-cli")
        .arg(version.isDouble() ? QString::number(version.toDouble()) : QStringLiteral("?"))
        .arg(kRunReportVersion);
  }
  return {};
}

std::optional<double> KernelRun::measured_bytes() const {
  if (!bytes_read && !bytes_written) return std::nullopt;
  return bytes_read.value_or(0.0) + bytes_written.value_or(0.0);
}

QString KernelRun::how() const {
  if (path.isEmpty()) return library;
  // A library's path names the library itself ("cuBLASLt GEMM, ..."): say it once.
  if (library.isEmpty() || path.startsWith(library)) return path;
  return library + QStringLiteral(" · ") + path;
}

double PlanRun::steps_us() const {
  return std::accumulate(kernels.begin(), kernels.end(), 0.0, [](double s, const KernelRun& k) { return s + k.time_us; });
}

double PlanRun::total_us() const { return measured_us.value_or(steps_us()); }

std::vector<GroupCheck> PlanRun::group_checks() const {
  std::vector<GroupCheck> out;
  std::map<QString, std::size_t> index;
  for (const KernelRun& k : kernels) {
    if (k.group.isEmpty()) continue;
    auto [it, fresh] = index.try_emplace(k.group, out.size());
    if (fresh) {
      out.push_back({});
      out.back().group = k.group;
      out.back().measured_bytes = 0.0;
    }
    GroupCheck& g = out[it->second];
    ++g.kernels;
    g.measured_us += k.time_us;
    // The prediction is the group's, repeated on each of its kernels.
    if (k.predicted_us) g.predicted_us = k.predicted_us;
    if (k.predicted_bytes) g.predicted_bytes = k.predicted_bytes;
    const auto bytes = k.measured_bytes();
    g.measured_bytes = bytes && g.measured_bytes ? std::optional<double>(*g.measured_bytes + *bytes) : std::nullopt;
    g.report_flag = g.report_flag || k.bytes_mismatch;
    if (g.reason.isEmpty()) g.reason = k.mismatch_reason;
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

std::optional<double> PlanRun::total_bytes() const {
  double total = 0;
  for (const KernelRun& k : kernels) {
    auto b = k.measured_bytes();
    if (!b) return std::nullopt;
    total += *b;
  }
  return total;
}

const PlanRun* RunReport::plan(const QString& name) const {
  for (const PlanRun& p : plans)
    if (p.name == name) return &p;
  return nullptr;
}

QString describe_timing(const QJsonObject& timing) {
  const double repeat = timing.value(QLatin1String("repeat")).toDouble(0);
  if (repeat < 1) return {};
  const int warmup = timing.value(QLatin1String("warmup")).toInt(0);
  QString out = QObject::tr("median of %1 runs of each plan after %2 warm-up runs").arg(static_cast<int>(repeat)).arg(warmup);
  if (timing.value(QLatin1String("cold_l2")).toBool(false)) out += QObject::tr(", a 256 MB flush before each");
  const double repeat_ms = timing.value(QLatin1String("repeat_ms")).toDouble(0);
  if (repeat_ms > 0) out += QObject::tr(" (about %1 ms of runs, as do_bench)").arg(repeat_ms);
  const double rest_ms = timing.value(QLatin1String("rest_ms")).toDouble(0);
  if (rest_ms > 0) out += QObject::tr("; the GPU idle %1 ms before").arg(rest_ms);
  return out;
}

std::optional<RunReport> parse_run_report(const QByteArray& json, QString* error) {
  QJsonParseError pe;
  const QJsonDocument doc = QJsonDocument::fromJson(json, &pe);
  if (doc.isNull() || !doc.isObject()) {
    if (error) *error = QObject::tr("not a JSON object: %1 at offset %2").arg(pe.errorString()).arg(pe.offset);
    return std::nullopt;
  }
  const QJsonObject root = doc.object();
  if (QString why = unreadable_version(root); !why.isEmpty()) {
    if (error) *error = why;
    return std::nullopt;
  }
  RunReport r;
  r.graph = text(root, {"graph", "graph_name"});
  r.graph_hash = text(root, {"graph_hash"});
  r.plan_hash = text(root, {"plan_hash"});
  r.fusion = root.value(QLatin1String("fusion")).toObject();
  r.hbm_reduction = number(root, {"hbm_traffic_reduction"});
  r.hbm_reduction_predicted = number(root, {"hbm_traffic_reduction_predicted"});
  if (root.value(QLatin1String("verification")).isObject()) {
    r.verified = root.value(QLatin1String("verification")).toObject().value(QLatin1String("passed")).toBool(false);
  }
  const QJsonValue device = root.value(QLatin1String("device"));
  if (device.isString()) r.device = device.toString();
  if (device.isObject()) {
    const QJsonObject d = device.toObject();
    r.device = text(d, {"name"});
    r.hbm_bandwidth = number(d, {"hbm_bandwidth"}).value_or(number(d, {"hbm_bandwidth_gbps"}, 1e9).value_or(0.0));
    r.peak_flops = number(d, {"peak_flops", "fp32_flops"}).value_or(0.0);
  }
  const QJsonValue plans = root.value(QLatin1String("plans"));
  if (plans.isArray()) {
    for (const QJsonValue& p : plans.toArray()) r.plans.push_back(parse_plan({}, p.toObject()));
  } else if (plans.isObject()) {
    const QJsonObject o = plans.toObject();
    for (auto it = o.begin(); it != o.end(); ++it) r.plans.push_back(parse_plan(it.key(), it.value().toObject()));
  }
  if (r.plans.empty()) {
    if (error) *error = QObject::tr("the report has no \"plans\" with kernels");
    return std::nullopt;
  }
  read_roofs(root, r);
  r.speedup = number(root, {"speedup"});
  const QJsonObject clocks =
      root.value(QLatin1String("timing")).toObject().value(QLatin1String("gpu_clocks")).toObject();
  r.clocks = text(clocks, {"summary"});
  r.clocks_note = text(clocks, {"note"});
  r.timing = describe_timing(root.value(QLatin1String("timing")).toObject());
  const PlanRun* unfused = r.plan(QStringLiteral("unfused"));
  const PlanRun* fused = r.plans.size() > 1 ? &r.plans.back() : nullptr;
  if (!r.speedup && unfused && fused && fused != unfused && fused->total_us() > 0)
    r.speedup = unfused->total_us() / fused->total_us();
  return r;
}

ReportCheck check_report(const RunReport& report, const QString& graph_name, const QString& graph_hash,
                         const QString& plan_hash) {
  if (graph_name.isEmpty() && graph_hash.isEmpty()) return {};
  if (!report.graph_hash.isEmpty() && !graph_hash.isEmpty()) {
    if (report.graph_hash != graph_hash) {
      return {ReportMatch::other_graph,
              QObject::tr("This report measured another graph (\"%1\", content %2) than the open one (\"%3\", "
                          "content %4): its numbers are not shown on this graph.")
                  .arg(report.graph, report.graph_hash, graph_name, graph_hash)};
    }
    if (!report.plan_hash.isEmpty() && report.plan_hash != plan_hash) {
      return {ReportMatch::other_plan,
              QObject::tr("Measured for another plan of this graph: the unfused numbers are shown on the Before "
                          "view, the fused ones only in the tables. Load the measured plan to see them on the graph.")};
    }
    return {ReportMatch::same, {}};
  }
  if (report.graph != graph_name) {
    return {ReportMatch::other_graph,
            QObject::tr("This report measured the graph \"%1\", not the open \"%2\": its numbers are not shown.")
                .arg(report.graph, graph_name)};
  }
  return {ReportMatch::unchecked,
          QObject::tr("This report carries no content hash (an older fusion-cli): it matches the open graph by name "
                      "only.")};
}

QString summary_line(const RunReport& r) {
  QStringList parts;
  if (r.hbm_reduction) {
    QString s = QObject::tr("HBM traffic %1× less").arg(*r.hbm_reduction, 0, 'f', 2);
    if (r.hbm_reduction_predicted) s += QObject::tr(" (predicted %1×)").arg(*r.hbm_reduction_predicted, 0, 'f', 2);
    parts << s;
  }
  if (r.speedup) parts << QObject::tr("speedup %1×").arg(*r.speedup, 0, 'f', 2);
  if (r.verified) parts << (*r.verified ? QObject::tr("outputs verified: yes") : QObject::tr("outputs verified: NO"));
  return parts.isEmpty() ? QString() : QObject::tr("Measured: ") + parts.join(QStringLiteral(" · "));
}

std::optional<RunFault> parse_run_fault(const QByteArray& json) {
  const QJsonDocument doc = QJsonDocument::fromJson(json);
  if (!doc.isObject() || doc.object().value(QLatin1String("status")).toString() != QLatin1String("gpu_fault")) return std::nullopt;
  const QJsonObject root = doc.object();
  const QJsonObject f = root.value(QLatin1String("fault")).toObject();
  RunFault r;
  r.graph = text(root, {"graph"});
  r.device = text(root.value(QLatin1String("device")).toObject(), {"name"});
  r.error = text(f, {"error"});
  r.code = static_cast<qint64>(number(f, {"code"}).value_or(0.0));
  r.message = text(f, {"message"});
  r.phase = text(f, {"phase"});
  r.plan = text(f, {"plan"});
  r.kernel = text(f, {"kernel"});
  r.group = text(f, {"group"});
  r.step = f.value(QLatin1String("step")).toInt(-1);
  r.attribution = text(f, {"attribution"});
  return r;
}

QString RunFault::describe() const {
  QString s = QObject::tr("GPU fault: %1 (%2, %3).").arg(error).arg(code).arg(message);
  if (step >= 0) {
    s += QLatin1Char('\n') + QObject::tr("In the %1 plan, step %2: kernel %3 of group %4, during %5.")
                               .arg(plan).arg(step).arg(kernel, group, phase);
    s += QLatin1Char('\n') + (attribution == QLatin1String("exact")
                                  ? QObject::tr("Each step was synchronised: this is the kernel that faulted.")
                                  : QObject::tr("This is the last step launched before the error was seen; launches "
                                                "are asynchronous, so an earlier one may have faulted."));
  } else {
    s += QLatin1Char('\n') + QObject::tr("No plan step had been launched (during %1).").arg(phase);
  }
  return s + QLatin1Char('\n') +
         QObject::tr("The run stopped at the fault, so nothing was measured; the GPU process ended, this window did not.");
}

std::vector<KernelTimingRow> timing_rows(const RunReport& report) {
  std::vector<KernelTimingRow> rows;
  for (const PlanRun& p : report.plans) {
    double clock = 0;
    for (const KernelRun& k : p.kernels) {
      KernelTimingRow row;
      row.plan = p.name.toStdString();
      row.kernel = k.name.toStdString();
      row.group = k.group.toStdString();
      for (const QString& n : k.nodes) row.nodes.push_back(n.toStdString());
      row.start_us = k.start_us > 0 ? k.start_us : clock;
      row.duration_us = k.time_us;
      row.bytes_read = k.bytes_read;
      row.bytes_written = k.bytes_written;
      row.predicted_bytes = k.predicted_bytes;
      clock = row.start_us + k.time_us;
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
  p.message = text(o, {"message", "what", "stage"});
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
