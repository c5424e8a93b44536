#include "app/gui/run_report.h"

#include <algorithm>
#include <cmath>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <numeric>

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
  }
  return r;
}

PlanRun parse_plan(const QString& name, const QJsonObject& p) {
  PlanRun plan;
  plan.name = name.isEmpty() ? text(p, {"name", "plan"}) : name;
  for (const QJsonValue& k : p.value(QLatin1String("kernels")).toArray()) plan.kernels.push_back(parse_kernel(k.toObject()));
  if (auto ms = number(p, {"total_ms"}, 1e3); ms && *ms > 0) plan.measured_us = ms;
  return plan;
}

}  // namespace

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
  RunReport r;
  r.graph = text(root, {"graph", "graph_name"});
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
    p.total = 1000;
    p.step = static_cast<int>(std::lround(std::clamp(o.value(QLatin1String("progress")).toDouble(), 0.0, 1.0) * 1000));
  }
  if (p.step < 0) return std::nullopt;
  return p;
}

}  // namespace fx::app
