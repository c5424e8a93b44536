#include "app/gui/run_panel.h"

#include <algorithm>
#include <map>
#include <optional>

#include <QCheckBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include "app/gui/charts.h"
#include "app/gui/run_targets_menu.h"
#include "core/export/timings_export.h"
#include "core/graph/graph_io.h"

namespace fx::app {
namespace {

// A one-element graph: enough for fusion-cli to open the device and answer whether it can run here.
constexpr const char* kProbeGraph = R"({"format": "fusion-explorer/graph", "version": 1, "name": "probe",
  "inputs": [{"name": "x", "shape": [1], "dtype": "f32"}],
  "nodes": [{"name": "y", "op": "relu", "inputs": ["x"]}], "outputs": ["y"]})";

constexpr int kMeasuredBytesColumn = 4;
constexpr int kCheckColumn = 8;  // "Check": measured against predicted, per group

// A report carries the plan it measured (its fusion section), which "Load the measured plan" opens.
bool has_fusion(const RunReport& r) { return r.fusion.is_object() && !r.fusion.empty(); }

QString opt(const std::optional<double>& v, double scale, int decimals) {
  return v ? QString::number(*v * scale, 'f', decimals) : QStringLiteral("–");
}

// Step `step`'s measured MiB; where the counter pass measured them in an identical step's window, the cell names
// that step ("12.0 (as fused #3)"), so it claims no measurement of its own.
QString measured_bytes_cell(const KernelReport& k, const std::string& plan, int step) {
  QString cell = opt(k.measured_bytes(), 1.0 / 1048576, 1);
  if (k.measured_bytes() && k.measured->reused_measurement(plan, step)) {
    const SharedCounterWindow& w = *k.measured->shared_window;
    cell += QObject::tr(" (as %1 #%2)").arg(QString::fromStdString(w.plan)).arg(w.step);
  }
  return cell;
}

}  // namespace

RunPanel::RunPanel(QWidget* parent) : QWidget(parent) {
  runner_ = new ChildRunner(this);
  probe_ = new ChildRunner(this);
  run_button_ = new QPushButton(QIcon(QStringLiteral(":/icons/run.svg")), tr("Run on GPU"), this);
  targets_ = new RunTargetsMenu(this);
  cancel_button_ = new QPushButton(tr("Cancel"), this);
  open_button_ = new QPushButton(tr("Open report…"), this);
  like_pytorch_ = new QCheckBox(tr("Time as PyTorch benchmarks"), this);
  like_pytorch_->setToolTip(
      tr("Time both plans as triton.testing.do_bench times a PyTorch function, so the times compare with\n"
         "PyTorch benchmarks: a 256 MB flush before each run, 25 ms of warm-up and 100 ms of timed runs, after\n"
         "the GPU has idled 1 s (fusion-cli run --protocol do_bench).\n"
         "Off: 20 runs of each plan with a warm L2, as back to back."));
  progress_ = new QProgressBar(this);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("run.summary"));
  summary_->setWordWrap(true);
  QFont bold = summary_->font();
  bold.setBold(true);
  summary_->setFont(bold);
  load_plan_ = new QPushButton(tr("Load the measured plan"), this);
  load_plan_->setToolTip(tr("Replace the open plan by the one this report measured (undo with Ctrl+Z is not "
                            "possible across a load: save first if you want to keep the current plan)"));
  load_plan_->hide();
  table_ = new QTableWidget(this);
  latency_ = new KernelBarChart(KernelBarChart::Metric::time, this);
  bytes_ = new KernelBarChart(KernelBarChart::Metric::bytes, this);
  roofline_ = new RooflineChart(this);
  log_ = new QPlainTextEdit(this);
  log_->setReadOnly(true);
  tabs_ = new QTabWidget(this);
  tabs_->addTab(table_, tr("Kernels"));
  tabs_->addTab(latency_, tr("Latency"));
  tabs_->addTab(bytes_, tr("HBM bytes"));
  tabs_->addTab(roofline_, tr("Roofline"));
  tabs_->addTab(log_, tr("Log"));

  auto* top = new QHBoxLayout;
  top->addWidget(run_button_);
  top->addWidget(targets_);
  top->addWidget(cancel_button_);
  top->addWidget(like_pytorch_);
  top->addWidget(progress_, 1);
  top->addWidget(open_button_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(top);
  layout->addWidget(status_);
  auto* summary_row = new QHBoxLayout;
  summary_row->addWidget(summary_, 1);
  summary_row->addWidget(load_plan_);
  layout->addLayout(summary_row);
  layout->addWidget(tabs_, 1);
  cancel_button_->setEnabled(false);
  progress_->setRange(0, 1);
  progress_->setValue(0);

  connect(run_button_, &QPushButton::clicked, this, &RunPanel::run);
  connect(cancel_button_, &QPushButton::clicked, this, &RunPanel::cancel);
  connect(open_button_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open run report"), {}, tr("Run reports (*.json)"));
    if (!path.isEmpty()) open_report(path);
  });
  connect(load_plan_, &QPushButton::clicked, this, [this] {
    if (report_ && has_fusion(*report_))
      emit load_plan_requested(QJsonDocument::fromJson(QByteArray::fromStdString(report_->fusion.dump())).object());
  });
  connect(runner_, &ChildRunner::line, this, [this](const QString& line) {
    if (auto p = parse_progress_line(line)) {
      progress_->setRange(0, std::max(1, p->total));
      progress_->setValue(p->step);
      status_->setText(p->message);
    } else {
      log_->appendPlainText(line);
    }
  });
  connect(runner_, &ChildRunner::finished, this, &RunPanel::on_finished);
  connect(targets_, &RunTargetsMenu::target_changed, this, &RunPanel::update_availability);
  connect(probe_, &ChildRunner::finished, this, [this](const ChildResult& r) {
    if (r.status == ChildResult::Status::finished && r.exit_code == 0) return set_available(true, tr("Run the unfused and the fused plan on the GPU"));
    if (r.status == ChildResult::Status::finished && r.exit_code == 3)
      return set_available(false, tr("No CUDA device here (fusion-cli exit code 3): open a run report made on a GPU machine instead"));
    set_available(false, tr("fusion-cli cannot run here: %1 %2").arg(r.describe(), r.std_err.trimmed().left(300)));
  });
  set_available(false, tr("Checking for a GPU…"));
  probe_device();
}

void RunPanel::set_available(bool ok, const QString& why) {
  available_ = ok;
  local_why_ = why;
  update_availability();
}

// A remote target is tried when asked: whether it has a GPU, and a matching fusion-cli, the run itself says.
void RunPanel::update_availability() {
  const auto& target = targets_->current();
  const bool ok = target.remote() || available_;
  const QString why = target.remote() ? tr("Run the unfused and the fused plan on %1 (%2)")
                                            .arg(QString::fromStdString(target.name), QString::fromStdString(target.url))
                                      : local_why_;
  run_button_->setEnabled(ok && !runner_->running());
  run_button_->setToolTip(why);
  if (!runner_->running() && !report_) status_->setText(why);
  emit availability_changed(ok, why);
}

void RunPanel::probe_device() {
  const QString cli = find_fusion_cli();
  if (cli.isEmpty() || !temp_.isValid()) return set_available(false, tr("fusion-cli not found next to the program"));
  const QString graph = temp_.filePath(QStringLiteral("probe.json"));
  if (!write_text_file_atomic(graph.toStdString(), kProbeGraph)) return;
  probe_->start(cli, {QStringLiteral("run"), graph, QStringLiteral("--auto"), QStringLiteral("--json"),
                      temp_.filePath(QStringLiteral("probe-report.json"))});
}

void RunPanel::set_document(const QString& path, std::shared_ptr<const Graph> graph) {
  path_ = path;
  graph_ = std::move(graph);
  set_report(std::nullopt);
}

void RunPanel::run() {
  const QString cli = find_fusion_cli();
  const auto& target = targets_->current();
  if (!(available_ || target.remote()) || cli.isEmpty() || path_.isEmpty()) return;
  QStringList args{QStringLiteral("run")};
  if (plan_provider_) {
    const QString plan = temp_.filePath(QStringLiteral("run.fused.json"));
    if (!write_text_file_atomic(plan.toStdString(), plan_provider_())) return;
    args << plan << QStringLiteral("--plan") << plan;
  } else {
    args << path_ << QStringLiteral("--auto");
  }
  report_path_ = temp_.filePath(QStringLiteral("run-report.json"));
  QFile::remove(report_path_);
  args << QStringLiteral("--json") << report_path_ << QStringLiteral("--progress");
  if (like_pytorch_->isChecked()) {
    args << QStringLiteral("--protocol") << QStringLiteral("do_bench");
  }
  if (target.remote()) args << QStringLiteral("--target") << QString::fromStdString(target.name);
  log_->appendPlainText(QStringLiteral("$ %1 %2").arg(cli, args.join(' ')));
  progress_->setRange(0, 0);  // busy until the first progress line
  run_button_->setEnabled(false);
  cancel_button_->setEnabled(true);
  status_->setText(target.remote() ? tr("Running on %1…").arg(QString::fromStdString(target.name))
                                   : tr("Running on the GPU…"));
  runner_->set_cancel_grace_ms(target.remote() ? 15000 : 2000);  // time to stop the run there and remove its folder
  runner_->start(cli, args);
}

void RunPanel::cancel() { runner_->cancel(); }

void RunPanel::on_finished(const ChildResult& r) {
  cancel_button_->setEnabled(false);
  run_button_->setEnabled(available_ || targets_->current().remote());
  progress_->setRange(0, 1);
  progress_->setValue(r.status == ChildResult::Status::finished && r.exit_code == 0 ? 1 : 0);
  if (!r.std_err.isEmpty()) log_->appendPlainText(r.std_err);
  if (r.status == ChildResult::Status::finished && r.exit_code == 0 && open_report(report_path_)) {
    emit run_finished(true, tr("Run finished"));
    return;
  }
  if (r.status == ChildResult::Status::finished && r.exit_code == kCliGpuFaultExit) return on_gpu_fault(r);
  const QString message = tr("The GPU run %1.").arg(r.describe()) +
                          (r.std_err.isEmpty() ? QString() : QStringLiteral("\n") + r.std_err.trimmed().right(1200));
  status_->setText(message);
  tabs_->setCurrentWidget(log_);
  emit run_finished(false, message);
}

// The child ended on a GPU fault: its CUDA context died with it. The measurements of an earlier run are
// dropped so that nothing on screen looks like this run's; the panel says what faulted, where, and why nothing
// was measured.
void RunPanel::on_gpu_fault(const ChildResult& r) {
  QFile file(report_path_);
  const std::optional<RunReport> report = file.open(QIODevice::ReadOnly) ? read_report(file.readAll(), nullptr) : std::nullopt;
  set_report(std::nullopt);
  const QString message = report && report->fault ? describe_fault(*report->fault)
                                : tr("The GPU run stopped on a GPU fault (exit code %1) without a fault report.\n%2")
                                      .arg(kCliGpuFaultExit)
                                      .arg(r.std_err.trimmed().right(1200));
  status_->setText(message);
  tabs_->setCurrentWidget(log_);
  emit run_finished(false, message);
}

bool RunPanel::open_report(const QString& path) {
  QFile file(path);
  QString error;
  std::optional<RunReport> report;
  if (!file.open(QIODevice::ReadOnly)) error = file.errorString();
  else report = read_report(file.readAll(), &error);
  if (report && report->fault) {  // a run that faulted measured nothing
    set_report(std::nullopt);
    status_->setText(describe_fault(*report->fault));
    return false;
  }
  if (!report) {
    status_->setText(tr("Cannot read the run report %1: %2").arg(path, error));
    return false;
  }
  const ReportCheck check = check_report(*report, expect_name_, expect_graph_hash_, expect_plan_hash_);
  if (check.match == ReportMatch::other_graph) {
    set_report(std::nullopt);
    status_->setText(tr("Not shown: %1").arg(check.message));
    return false;
  }
  set_report(std::move(report));
  QString status = tr("Report: %1 on %2").arg(QString::fromStdString(report_->graph), device_name(*report_));
  if (!check_.message.isEmpty()) status += QLatin1Char('\n') + check_.message;
  if (const QString timing = describe_timing(report_->timing); !timing.isEmpty())
    status += QLatin1Char('\n') + tr("Timing: %1").arg(timing);
  if (const auto& clocks = report_->timing.gpu_clocks; clocks && !clocks->summary.empty()) {
    status += QLatin1Char('\n') + tr("GPU while timing: %1").arg(QString::fromStdString(clocks->summary));
  } else if (clocks && !clocks->note.empty()) {
    status += QLatin1Char('\n') + QString::fromStdString(clocks->note);
  }
  status_->setText(status);
  return true;
}

void RunPanel::set_expected(const QString& graph_name, const QString& graph_hash, const QString& plan_hash) {
  expect_name_ = graph_name;
  expect_graph_hash_ = graph_hash;
  expect_plan_hash_ = plan_hash;
  if (!report_) return;
  // The plan changed under an open report (an accept, an undo, a loaded plan): check it again.
  check_ = check_report(*report_, expect_name_, expect_graph_hash_, expect_plan_hash_);
  load_plan_->setVisible(check_.match == ReportMatch::other_plan && has_fusion(*report_));
  repaint_measured();
}

void RunPanel::set_report(std::optional<RunReport> report) {
  report_ = std::move(report);
  check_ = report_ ? check_report(*report_, expect_name_, expect_graph_hash_, expect_plan_hash_) : ReportCheck{};
  summary_->setText(report_ ? summary_line(*report_) : QString());
  load_plan_->setVisible(check_.match == ReportMatch::other_plan && report_ && has_fusion(*report_));
  latency_->set_report(report_);
  bytes_->set_report(report_);
  roofline_->set_report(report_);
  fill_table();
  repaint_measured();
  if (report_) emit report_shown();
}

std::vector<KernelTimingRow> RunPanel::timing_rows() const {
  return report_ ? fx::app::timing_rows(*report_) : std::vector<KernelTimingRow>{};
}

std::string RunPanel::timings_trace() const {
  const std::vector<ClockPoint> clocks = report_ ? clock_points(*report_) : std::vector<ClockPoint>{};
  return timings_to_chrome_trace(timing_rows(), clock_tracks(clocks), kClockTrackProcess);
}

void RunPanel::fill_table() {
  const QStringList headers{tr("Plan"), tr("Kernel"), tr("Group"), tr("Predicted MiB"), tr("Measured MiB"),
                            tr("Predicted µs"), tr("Measured µs"), tr("GB/s achieved"), tr("Check"), tr("How it ran")};
  table_->clear();
  table_->setColumnCount(static_cast<int>(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  table_->setRowCount(0);
  table_->verticalHeader()->hide();
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  if (!report_) return;
  for (const PlanReport* plan : report_->plans()) {
    std::map<QString, GroupCheck> checks;
    for (GroupCheck& g : group_checks(*plan)) checks[g.group] = std::move(g);
    for (const KernelReport& k : plan->kernels) {
      const auto check = checks.find(QString::fromStdString(k.group));
      const QString mismatch = check == checks.end() ? QString() : check->second.mismatch();
      const bool compared = check != checks.end() && check->second.comparable();
      const int row = table_->rowCount();
      table_->insertRow(row);
      const int step = static_cast<int>(&k - plan->kernels.data());
      const auto bytes = k.measured_bytes();
      const double time_us = k.measured_ms * 1e3;
      const std::optional<double> bandwidth =
          bytes && time_us > 0 ? std::optional<double>(*bytes / (time_us * 1e-6)) : std::nullopt;
      const std::optional<double> predicted_bytes =
          k.group_predicted_bytes > 0 ? std::optional<double>(static_cast<double>(k.group_predicted_bytes)) : std::nullopt;
      const QString how_it_ran = how(k);
      const QStringList cells{QString::fromStdString(plan->name), QString::fromStdString(k.name),
                              QString::fromStdString(k.group), opt(predicted_bytes, 1.0 / 1048576, 1),
                              measured_bytes_cell(k, plan->name, step), opt(k.group_predicted_ms, 1e3, 1), QString::number(time_us, 'f', 1),
                              opt(bandwidth, 1e-9, 0), !mismatch.isEmpty() ? tr("⚠ ") + mismatch : compared ? tr("within 10%") : QStringLiteral("–"), how_it_ran};
      for (int c = 0; c < cells.size(); ++c) {
        auto* item = new QTableWidgetItem(cells[c]);
        if (!how_it_ran.isEmpty()) item->setToolTip(how_it_ran);  // the library path or layout choice, in full
        if (c == kMeasuredBytesColumn && bytes && k.measured->shared_window) {
          item->setToolTip(QString::fromStdString(shared_window_text(*k.measured->shared_window, plan->name, step)));
        }
        if (c == kCheckColumn && !mismatch.isEmpty()) {
          item->setForeground(QColor("#b71c1c"));
          item->setToolTip(check->second.reason.isEmpty() ? mismatch : mismatch + QStringLiteral("\n") + check->second.reason);
        }
        table_->setItem(row, c, item);
      }
    }
  }
  table_->resizeColumnsToContents();
  // "How it ran" can be a long sentence (the layouts timed and their times): it takes the width left, at most
  // kHowWidth when the table is narrow, and the tooltip of every cell of the row has it in full.
  constexpr int kHowWidth = 360;
  const int how = static_cast<int>(headers.size()) - 1;
  table_->setColumnWidth(how, std::min(table_->columnWidth(how), kHowWidth));
  table_->horizontalHeader()->setStretchLastSection(true);
}

std::map<QString, GroupMeasure> RunPanel::measured_groups_of(const QString& plan_name) const {
  std::map<QString, GroupMeasure> out;
  if (!report_) return out;
  // The fused plan is the last (the first is the unfused baseline); its numbers belong on the graph only when
  // the report measured the plan on screen.
  const bool fused = plan_name != QLatin1String("unfused");
  if (fused && check_.match == ReportMatch::other_plan) return out;
  const PlanReport* plan = fused ? &report_->fused : report_->plan(plan_name.toStdString());
  if (plan == nullptr) return out;
  // A group run as several kernels (a contraction and its leftover elementwise kernel, a convolution between
  // its layout conversions) shows their sum and how many.
  for (const GroupCheck& g : group_checks(*plan)) {
    GroupMeasure& m = out[g.group];
    m.text = (g.kernels > 1 ? tr("%1 kernels: ").arg(g.kernels) : QString()) +
             QStringLiteral("%1 µs").arg(g.measured_us, 0, 'f', 1) +
             (g.measured_bytes ? QStringLiteral(" · %1 MiB").arg(*g.measured_bytes / 1048576, 0, 'f', 0) : QString());
    m.mismatch = g.mismatch();
  }
  return out;
}

void RunPanel::repaint_measured() {
  std::map<QString, QString> text;
  for (const auto& [group, m] : measured_groups_of(QStringLiteral("fused"))) text[group] = m.text;
  emit measured_groups(text);
  emit measured_changed();
}

}  // namespace fx::app
