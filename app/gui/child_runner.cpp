#include "app/gui/child_runner.h"

#ifdef __linux__
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#endif

#include <QCoreApplication>
#include <QFileInfo>
#include <QStandardPaths>
#include <QTimer>

namespace fx::app {

QString find_fusion_cli() {
  const QString env = qEnvironmentVariable("FX_CLI");
  if (!env.isEmpty()) return env;
  const QString dir = QCoreApplication::applicationDirPath();
  for (const QString& candidate : {dir + QStringLiteral("/fusion-cli"), dir + QStringLiteral("/../cli/fusion-cli"),
                                   dir + QStringLiteral("/../app/cli/fusion-cli")})
    if (QFileInfo(candidate).isExecutable()) return QFileInfo(candidate).canonicalFilePath();
  return QStandardPaths::findExecutable(QStringLiteral("fusion-cli"));
}

QString ChildResult::describe() const {
  switch (status) {
    case Status::failed_to_start: return QObject::tr("could not be started");
    case Status::crashed: return QObject::tr("crashed");
    case Status::cancelled: return QObject::tr("was cancelled");
    case Status::finished: break;
  }
  return exit_code == 0 ? QObject::tr("finished") : QObject::tr("exited with code %1").arg(exit_code);
}

ChildRunner::ChildRunner(QObject* parent) : QObject(parent) {
  connect(&process_, &QProcess::readyReadStandardOutput, this, &ChildRunner::on_stdout);
  connect(&process_, &QProcess::readyReadStandardError, this,
          [this] { err_ += QString::fromLocal8Bit(process_.readAllStandardError()); });
  connect(&process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error != QProcess::FailedToStart) return;
    ChildResult r;
    r.status = ChildResult::Status::failed_to_start;
    r.std_err = process_.errorString();
    emit finished(r);
  });
  connect(&process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
    on_stdout();
    if (!partial_.isEmpty()) emit line(partial_);
    err_ += QString::fromLocal8Bit(process_.readAllStandardError());
    ChildResult r;
    r.exit_code = code;
    r.status = cancelled_ ? ChildResult::Status::cancelled
               : status == QProcess::CrashExit ? ChildResult::Status::crashed
                                               : ChildResult::Status::finished;
    r.std_out = out_;
    r.std_err = err_;
    emit finished(r);
  });
}

ChildRunner::~ChildRunner() {
  // Never leave a GPU job running behind a closed window.
  disconnect(&process_, nullptr, this, nullptr);
  if (process_.state() != QProcess::NotRunning) {
    process_.kill();
    process_.waitForFinished(3000);
  }
}

void ChildRunner::start(const QString& program, const QStringList& args) {
  if (running()) {
    cancel();
    process_.waitForFinished(3000);
  }
  out_.clear();
  err_.clear();
  partial_.clear();
  cancelled_ = false;
#ifdef __linux__
  // The child ends with the GUI however the GUI ends (SIGTERM, SIGKILL, a crash), not only through this
  // object's destructor: the kernel sends it SIGTERM when its parent dies.
  const pid_t parent = ::getpid();
  process_.setChildProcessModifier([parent] {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);  // the GUI died before the line above took effect
  });
#endif
  process_.start(program, args);
}

void ChildRunner::cancel() {
  if (!running()) return;
  cancelled_ = true;
  process_.terminate();
  // A child stuck in a driver call may ignore SIGTERM: kill it if it is still there shortly after.
  QTimer::singleShot(cancel_grace_ms_, this, [this] {
    if (process_.state() != QProcess::NotRunning) process_.kill();
  });
}

void ChildRunner::on_stdout() {
  const QString chunk = QString::fromLocal8Bit(process_.readAllStandardOutput());
  out_ += chunk;
  partial_ += chunk;
  qsizetype nl;
  while ((nl = partial_.indexOf('\n')) >= 0) {
    emit line(partial_.left(nl));
    partial_.remove(0, nl + 1);
  }
}

}  // namespace fx::app
