// Runs one child process (fusion-cli) and reports its lines, its end and how it ended. A crash, a CUDA fault
// or a non-zero exit of the child is reported with its stderr; it can never take the GUI down.
#pragma once

#include <QObject>
#include <QProcess>
#include <QStringList>

namespace fx::app {

// fusion-cli next to this program, in the build tree's app/cli, or on PATH; FX_CLI overrides.
QString find_fusion_cli();

struct ChildResult {
  enum class Status { finished, failed_to_start, crashed, cancelled } status = Status::finished;
  int exit_code = 0;
  QString std_out;
  QString std_err;
  QString describe() const;  // "exited with code 3", "crashed (signal)", ...
};

class ChildRunner : public QObject {
  Q_OBJECT
 public:
  explicit ChildRunner(QObject* parent = nullptr);
  ~ChildRunner() override;
  // Starts program with args; a run already going is cancelled first.
  void start(const QString& program, const QStringList& args);
  void cancel();
  // How long a cancelled child may take to end before it is killed (a remote run cleans up on the target).
  void set_cancel_grace_ms(int ms) { cancel_grace_ms_ = ms; }
  bool running() const { return process_.state() != QProcess::NotRunning; }

 signals:
  void line(const QString& text);  // each stdout line as it arrives (progress)
  void finished(const fx::app::ChildResult& result);

 private:
  void on_stdout();
  QProcess process_;
  QString out_, err_, partial_;
  bool cancelled_ = false;
  int cancel_grace_ms_ = 2000;
};

}  // namespace fx::app
