// The measurement dock: Run on GPU through `fusion-cli run --progress` (a child process, cancellable), or open
// a run report made elsewhere; then the kernels table, latency and bytes bars, and the roofline.
#pragma once

#include <QTemporaryDir>
#include <QWidget>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "app/gui/child_runner.h"
#include "app/gui/run_report.h"
#include "core/graph/graph.h"

class QProgressBar;
class QPushButton;
class QCheckBox;
class QLabel;
class QTableWidget;
class QPlainTextEdit;
class QTabWidget;

namespace fx::app {

class KernelBarChart;
class RooflineChart;
class RunTargetsMenu;

// What a run measured for one group, as the graph shows it: the time and bytes, and a sentence where they
// differ from the prediction by more than kMismatchTolerance.
struct GroupMeasure {
  QString text, mismatch;
};

class RunPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunPanel(QWidget* parent = nullptr);
  // The document to run; its path is what fusion-cli reads (the session is saved next to it for plans).
  void set_document(const QString& path, std::shared_ptr<const Graph> graph);
  // The open graph and plan, by name and content hash: a report is checked against them before its numbers
  // are painted (another graph: refused; another plan: the fused numbers stay in the tables).
  void set_expected(const QString& graph_name, const QString& graph_hash, const QString& plan_hash);
  const ReportCheck& report_check() const { return check_; }
  // Per group id, the numbers of the plan named `plan` ("unfused", or "fused": the last plan); empty for the
  // fused plan of a report measured for another plan.
  std::map<QString, GroupMeasure> measured_groups_of(const QString& plan) const;
  // Gives the current session as fused-graph JSON; it is run with --plan (without one, --auto).
  void set_plan_provider(std::function<std::string()> provider) { plan_provider_ = std::move(provider); }
  // False, with the reason in the status line, for a file that is no report or is a GPU fault's (which the
  // status line then describes).
  bool open_report(const QString& path);
  void set_report(std::optional<RunReport> report);
  const std::optional<RunReport>& report() const { return report_; }
  std::vector<KernelTimingRow> timing_rows() const;
  // The shown report's kernels as a Chrome trace, with the NVML samples it carries as counter tracks.
  std::string timings_trace() const;
  // Asks fusion-cli whether it can run on a GPU here (exit code 3 means no device).
  void probe_device();
  bool device_available() const { return available_; }
  void repaint_measured();
  void cancel();
  ChildRunner* runner() { return runner_; }
  RunTargetsMenu* targets() { return targets_; }

 public slots:
  void run();

 signals:
  void availability_changed(bool available, const QString& why);
  void measured_groups(const std::map<QString, QString>& text_by_group);
  void measured_changed();  // a report was shown, cleared or re-checked: repaint both plans' numbers
  // "Load the measured plan": the report's fusion section, for a report measured for another plan.
  void load_plan_requested(const QJsonObject& fusion);
  void run_finished(bool ok, const QString& message);  // message: a GPU fault's description when one ended it
  void report_shown();  // a report (opened or just measured) is in the table

 private:
  void on_finished(const ChildResult& r);
  void on_gpu_fault(const ChildResult& r);
  void fill_table();
  void set_available(bool ok, const QString& why);
  void update_availability();

  ChildRunner* runner_;
  ChildRunner* probe_;
  QPushButton* run_button_;
  RunTargetsMenu* targets_;  // this computer or a remote target (ssh, Slurm)
  QPushButton* cancel_button_;
  QPushButton* open_button_;
  QCheckBox* like_pytorch_;  // time as do_bench does (run()'s flags)
  QProgressBar* progress_;
  QLabel* status_;
  QLabel* summary_;        // measured vs predicted HBM reduction, speedup, verified
  QPushButton* load_plan_;
  QTabWidget* tabs_;
  QTableWidget* table_;
  KernelBarChart* latency_;
  KernelBarChart* bytes_;
  RooflineChart* roofline_;
  QPlainTextEdit* log_;
  QTemporaryDir temp_;
  QString path_;
  std::function<std::string()> plan_provider_;
  QString report_path_;
  std::shared_ptr<const Graph> graph_;
  std::optional<RunReport> report_;
  QString expect_name_, expect_graph_hash_, expect_plan_hash_;
  ReportCheck check_;
  bool available_ = false;        // a GPU here (the probe's answer)
  QString local_why_;             // the probe's sentence
};

}  // namespace fx::app
