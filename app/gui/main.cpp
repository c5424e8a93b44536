// fusion-explorer: the desktop app. Everything but argument handling lives in fx_app.
#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QElapsedTimer>
#include <QTimer>
#include <QSettings>
#include <QMessageBox>
#include <QFile>
#include <QDockWidget>
#include <QFileInfo>
#include <QScreen>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <vector>
#include <memory>

#include "app/gui/compare_panel.h"
#include "app/gui/lesson_pane.h"
#include "app/gui/lessons.h"
#include "app/gui/main_window.h"
#include "app/gui/run_panel.h"

namespace {

// Without a display Qt aborts inside QApplication's constructor with a message about its xcb plugin, which tells
// a newcomer on a remote shell nothing. --help and --version need no window: they are answered through Qt's
// offscreen platform. Anything else is refused with what to do instead.
bool has_display() {
#if defined(Q_OS_LINUX)
  return qEnvironmentVariableIsSet("DISPLAY") || qEnvironmentVariableIsSet("WAYLAND_DISPLAY") ||
         qEnvironmentVariableIsSet("QT_QPA_PLATFORM");
#else
  return true;
#endif
}

bool asks_only_for_text(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    for (const char* flag : {"-h", "--help", "--help-all", "-v", "--version"}) {
      if (std::strcmp(argv[i], flag) == 0) return true;
    }
  }
  return false;
}

// CPU time of the whole process so far (every thread): on a shared machine the wall time also counts waiting for
// a core, so --timing prints both.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// The process's peak resident memory (Linux's VmHWM), printed by --timing.
void print_peak_memory() {
  QFile status(QStringLiteral("/proc/self/status"));
  if (!status.open(QIODevice::ReadOnly)) return;
  for (const QByteArray& line : status.readAll().split('\n')) {
    if (!line.startsWith("VmHWM:")) continue;
    const long kib = line.mid(6).trimmed().split(' ').front().toLong();
    std::printf("peak memory: %.0f MB\n", static_cast<double>(kib) / 1024.0);
  }
  std::fflush(stdout);
}

struct TimedStep {
  QString label;
  std::function<void()> action;
};

// Runs the steps one after another, each once the previous picture has landed, and prints how long each took to
// its picture (wall and process CPU); a step that needs no new picture (a find whose hit is already drawn) is
// done at once. `done` runs after the last picture.
class TimedSteps : public QObject {
 public:
  TimedSteps(fx::app::MainWindow& window, std::vector<TimedStep> steps, bool print, std::function<void()> done)
      : window_(window), steps_(std::move(steps)), print_(print), done_(std::move(done)) {
    connect(&window, &fx::app::MainWindow::picture_ready, this, &TimedSteps::on_picture);
  }

 private:
  void on_picture(double seconds) {
    if (next_ == 0 && !timer_.isValid()) {
      if (print_) std::printf("time to first picture: %.3f s (process CPU %.3f s)\n", seconds, process_cpu_seconds());
    } else if (next_ > 0) {
      if (print_) {
        std::printf("%s: %.3f s (process CPU %.3f s)\n", steps_[next_ - 1].label.toUtf8().constData(),
                    static_cast<double>(timer_.nsecsElapsed()) * 1e-9, process_cpu_seconds() - cpu_at_start_);
      }
    }
    std::fflush(stdout);
    timer_.start();
    if (next_ >= steps_.size()) {
      disconnect(&window_, nullptr, this, nullptr);
      done_();
      return;
    }
    cpu_at_start_ = process_cpu_seconds();
    steps_[next_++].action();
    // Only the newest layout is ever shown (older ones are dropped), so the next picture is this step's.
    if (!window_.layout_busy()) QTimer::singleShot(0, this, [this] { on_picture(0.0); });
  }

  fx::app::MainWindow& window_;
  std::vector<TimedStep> steps_;
  bool print_;
  std::function<void()> done_;
  std::size_t next_ = 0;
  QElapsedTimer timer_;
  double cpu_at_start_ = 0.0;
};

// --lesson NAME --lesson-step N --answer TEXT: a lesson shown at one step, for screenshots and rehearsals.
bool open_lesson_from_command_line(fx::app::MainWindow& window, const QString& name, int step, const QString& answer) {
  QString path = name;
  if (!QFileInfo::exists(path))
    path = fx::app::lessons_dir() + QLatin1Char('/') + name + (name.endsWith(QLatin1String(".json")) ? "" : ".json");
  if (!window.open_lesson(path)) return false;
  fx::app::LessonPane& pane = *window.lesson_pane();
  const auto& steps = pane.lesson()->lesson.steps;
  while (pane.step() + 1 < step) {
    const fx::LessonStep& s = steps[static_cast<std::size_t>(pane.step())];
    if (s.kind == fx::StepKind::act && s.action) emit pane.action_requested(*s.action);
    pane.next();
  }
  if (!answer.isEmpty()) {
    pane.set_answer(answer);
    pane.reveal_answer();
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (!has_display()) {
    if (!asks_only_for_text(argc, argv)) {
      std::fprintf(stderr,
                   "fusion-explorer: no display (DISPLAY and WAYLAND_DISPLAY are unset). Run it in a desktop session "
                   "or under xvfb-run (scripts/start.sh does that), or get the same analysis as text with fusion-cli "
                   "(fusion-cli analyze FILE).\n");
      return 2;
    }
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  QApplication app(argc, argv);
  Q_INIT_RESOURCE(fusion_explorer);
  QApplication::setApplicationName(QStringLiteral("fusion-explorer"));
  QApplication::setOrganizationName(QStringLiteral("fusion-explorer"));
  QApplication::setApplicationVersion(QStringLiteral("0.1.0"));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/app.svg")));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("Explore operator fusion in deep-learning graphs"));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("FILE"), QStringLiteral("graph or fused graph (session) to open"));
  QCommandLineOption autofuse(QStringLiteral("auto-fuse"), QStringLiteral("accept all profitable fusions after opening"));
  QCommandLineOption transformer(QStringLiteral("transformer"), QStringLiteral("open a generated transformer of N layers"),
                                 QStringLiteral("N"));
  QCommandLineOption report(QStringLiteral("report"), QStringLiteral("open a run report JSON"), QStringLiteral("FILE"));
  QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                QStringLiteral("save the window as PNG once the graph is drawn, then quit"), QStringLiteral("PNG"));
  QCommandLineOption timing(QStringLiteral("timing"),
                            QStringLiteral("print the time to first picture (then to the pictures after --find and "
                                           "--auto-fuse, in that order) and the peak memory, and quit"));
  QCommandLineOption find(QStringLiteral("find"), QStringLiteral("with --timing: find TEXT after the first picture"),
                          QStringLiteral("TEXT"));
  QCommandLineOption compare(QStringLiteral("compare"),
                             QStringLiteral("overlay another plan of the graph (e.g. Inductor's)"), QStringLiteral("PLAN"));
  QCommandLineOption view(QStringLiteral("view"), QStringLiteral("before, after, kernels or side-by-side"),
                          QStringLiteral("VIEW"));
  QCommandLineOption why(QStringLiteral("why-not"), QStringLiteral("ask why two nodes are not fused (A,B) once drawn"),
                         QStringLiteral("A,B"));
  QCommandLineOption lesson(QStringLiteral("lesson"),
                            QStringLiteral("open a workshop lesson (a file, or a name from the Lessons menu's folder)"),
                            QStringLiteral("LESSON"));
  QCommandLineOption lesson_step(QStringLiteral("lesson-step"),
                                 QStringLiteral("with --lesson: go to step N, doing the act steps on the way"),
                                 QStringLiteral("N"));
  QCommandLineOption lesson_answer(QStringLiteral("answer"),
                            QStringLiteral("with --lesson-step on a predict step: enter this prediction and reveal"),
                            QStringLiteral("TEXT"));
  QCommandLineOption instructor(QStringLiteral("instructor"),
                                QStringLiteral("instructor mode: large text, high contrast, the whole screen"));
  parser.addOptions({autofuse, transformer, report, screenshot, timing, find, compare, view, why, lesson, lesson_step,
                     lesson_answer, instructor});
  parser.process(app);

  fx::app::MainWindow window;
  // No larger than the screen: on a 1280x800 laptop or a 1600x900 projector the docks' default sizes are
  // taken from the window that is actually shown.
  const QScreen* screen = QGuiApplication::primaryScreen();
  window.resize(screen ? QSize(1500, 950).boundedTo(screen->availableGeometry().size()) : QSize(1500, 950));
  window.show();
  const QString shot = parser.value(screenshot);
  const bool time_only = parser.isSet(timing);
  // Crash protection (not for screenshots and timings, which must never stop at a question).
  const QString autosave = QFileInfo(QSettings().fileName()).absolutePath() + QStringLiteral("/autosave.fused.json");
  const bool interactive = shot.isEmpty() && !time_only;
  bool restored = false;
  if (interactive && QFileInfo::exists(autosave)) {
    const auto answer = QMessageBox::question(
        &window, QObject::tr("Restore session"),
        QObject::tr("Fusion Explorer did not close normally last time. Restore the session it saved "
                    "automatically (graph, plan and decisions)?"));
    if (answer == QMessageBox::Yes) restored = window.open_file(autosave);
    if (!restored) QFile::remove(autosave);
  }
  if (interactive) window.session().enable_autosave(autosave);
  if (restored) {
    window.session().set_path({});  // Save asks where: the autosave file is not the user's document
  } else if (parser.isSet(transformer)) {
    window.open_generated_transformer(parser.value(transformer).toInt());
  } else if (!parser.positionalArguments().isEmpty()) {
    // Scripted runs never stop at a dialog: a file that does not open is reported on stderr instead.
    if (!window.open_file(parser.positionalArguments().front(), !interactive)) {
      if (!interactive) {
        std::fprintf(stderr, "fusion-explorer: %s\n", window.last_error().toLocal8Bit().constData());
        return 2;
      }
    }
  }
  if (parser.isSet(lesson) &&
      !open_lesson_from_command_line(window, parser.value(lesson), parser.value(lesson_step).toInt(),
                                     parser.value(lesson_answer)) &&
      !interactive) {
    std::fprintf(stderr, "fusion-explorer: --lesson: %s\n", window.last_error().toLocal8Bit().constData());
    return 2;
  }
  if (parser.isSet(instructor)) {  // a projector: the whole screen for the lesson and the graph
    window.set_instructor_mode(true);
    if (screen) window.setGeometry(screen->availableGeometry());
  }
  // Under --timing, "Accept all profitable" is timed on its own, after the first picture.
  const bool time_auto_fuse = time_only && parser.isSet(autofuse);
  if (parser.isSet(autofuse) && !time_auto_fuse && window.session().has_document()) window.session().auto_fuse();
  if (parser.isSet(report)) window.run_panel()->open_report(parser.value(report));
  if (parser.isSet(compare) && !window.compare_panel()->load(parser.value(compare)))
    std::fprintf(stderr, "fusion-explorer: --compare: %s\n", qPrintable(window.compare_panel()->error()));
  else if (parser.isSet(compare)) window.findChild<QDockWidget*>(QStringLiteral("dock.compare"))->raise();
  const QString mode = parser.value(view);
  if (mode == QLatin1String("before")) window.set_view_mode(fx::app::ViewMode::unfused);
  if (mode == QLatin1String("kernels")) window.set_view_mode(fx::app::ViewMode::collapsed);
  if (mode == QLatin1String("side-by-side")) window.set_side_by_side(true);
  // The question is asked once the picture exists: the answer is drawn on it.
  const QStringList pair = parser.value(why).split(QLatin1Char(','), Qt::SkipEmptyParts);
  if (pair.size() == 2) {
    auto asked = std::make_shared<bool>(false);
    QObject::connect(&window, &fx::app::MainWindow::picture_ready, &window, [&window, pair, asked] {
      if (*asked || window.layout_busy()) return;
      *asked = true;
      window.ask_why_not(pair[0], pair[1]);
    });
  }

  if (!shot.isEmpty() || time_only) {
    window.set_confirm_close(false);
    // Under --timing, what is timed after the first picture, each to the picture it leads to.
    std::vector<TimedStep> steps;
    if (time_only && parser.isSet(find)) {
      const QString text = parser.value(find);
      steps.push_back({QStringLiteral("find \"%1\" to the picture showing it").arg(text), [&window, text] { window.find_next(text); }});
    }
    if (time_auto_fuse) {
      steps.push_back({QStringLiteral("accept all profitable to updated picture"), [&window] { window.accept_all_profitable(); }});
    }
    auto* run = new TimedSteps(window, std::move(steps), time_only, [&] {
      QTimer::singleShot(300, &app, [&] {
        if (!shot.isEmpty()) window.grab().save(shot);
        if (time_only) print_peak_memory();
        app.quit();
      });
    });
    run->setParent(&app);
  }
  return app.exec();
}
