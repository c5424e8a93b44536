// The measurement dock: Run on GPU through `fusion-cli run --progress` (a child process, cancellable), or open
// a run report made elsewhere; then the kernels table, latency and bytes bars, and the roofline.
#pragma once

#include <QTemporaryDir>
#include <QWidget>
#include <functional>
#include <map>
#include <memory>
#include <optional>

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

class RunPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunPanel(QWidget* parent = nullptr);
  // The document to run; its path is what fusion-cli reads (the session is saved next to it for plans).
  void set_document(const QString& path, std::shared_ptr<const Graph> graph);
  // Gives the current session as fused-graph JSON; it is run with --plan (without one, --auto).
  void set_plan_provider(std::function<std::string()> provider) { plan_provider_ = std::move(provider); }
  // False, with the reason in the status line, for a file that is no report or is a GPU fault's (which the
  // status line then describes).
  bool open_report(const QString& path);
  void set_report(std::optional<RunReport> report);
  const std::optional<RunReport>& report() const { return report_; }
  std::vector<KernelTimingRow> timing_rows() const;
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
  bool available_ = false;        // a GPU here (the probe's answer)
  QString local_why_;             // the probe's sentence
};

}  // namespace fx::app
