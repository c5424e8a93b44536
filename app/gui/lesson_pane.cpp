#include "app/gui/lesson_pane.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

namespace fx::app {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString kind_label(StepKind k) {
  switch (k) {
    case StepKind::explain: return QObject::tr("Explain");
    case StepKind::predict: return QObject::tr("Predict");
    case StepKind::act: return QObject::tr("Do");
    case StepKind::run: return QObject::tr("Measure");
    case StepKind::reflect: return QObject::tr("Reflect");
  }
  return {};
}

QLabel* wrapped(QWidget* parent) {
  auto* l = new QLabel(parent);
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return l;
}

}  // namespace

LessonPane::LessonPane(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("lesson_pane"));
  lesson_title_ = wrapped(this);
  lesson_title_->setObjectName(QStringLiteral("lesson_title"));
  progress_ = new QLabel(this);
  title_ = wrapped(this);
  title_->setObjectName(QStringLiteral("step_title"));
  text_ = wrapped(this);
  number_ = new QLineEdit(this);
  number_->setObjectName(QStringLiteral("lesson_answer"));
  unit_ = new QLabel(this);
  choice_ = new QComboBox(this);
  reveal_ = new QPushButton(tr("Reveal"), this);
  act_ = new QPushButton(tr("Do it"), this);
  answer_ = wrapped(this);
  answer_->setObjectName(QStringLiteral("lesson_reveal"));
  back_ = new QPushButton(tr("◀ Back"), this);
  next_ = new QPushButton(tr("Next ▶"), this);
  back_->setToolTip(tr("Previous step (PageUp)"));
  next_->setToolTip(tr("Next step (PageDown or Right)"));

  auto* answer_row = new QHBoxLayout;
  answer_row->addWidget(number_, 1);
  answer_row->addWidget(unit_);
  answer_row->addWidget(choice_, 1);
  answer_row->addWidget(reveal_);
  auto* nav = new QHBoxLayout;
  nav->addWidget(back_);
  nav->addStretch(1);
  nav->addWidget(progress_);
  nav->addStretch(1);
  nav->addWidget(next_);
  // The step scrolls, the navigation stays: long texts at projector sizes are never clipped.
  auto* content = new QWidget(this);
  auto* layout = new QVBoxLayout(content);
  layout->addWidget(lesson_title_);
  layout->addWidget(title_);
  layout->addWidget(text_);
  layout->addLayout(answer_row);
  layout->addWidget(act_, 0, Qt::AlignLeft);
  layout->addWidget(answer_);
  layout->addStretch(1);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(content);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* outer = new QVBoxLayout(this);
  outer->addWidget(scroll, 1);
  outer->addLayout(nav);

  connect(reveal_, &QPushButton::clicked, this, &LessonPane::reveal_answer);
  connect(number_, &QLineEdit::returnPressed, this, &LessonPane::reveal_answer);
  connect(act_, &QPushButton::clicked, this, [this] {
    if (lesson_ && current().action) emit action_requested(*current().action);
  });
  connect(back_, &QPushButton::clicked, this, &LessonPane::back);
  connect(next_, &QPushButton::clicked, this, &LessonPane::next);
  set_high_contrast(false);
  show_step();
}

void LessonPane::start(OpenedLesson lesson, std::shared_ptr<const Graph> graph, DeviceDescription device) {
  lesson_ = std::move(lesson);
  graph_ = std::move(graph);
  device_ = std::move(device);
  step_ = 0;
  show_step();
}

void LessonPane::next() {
  if (!lesson_ || step_ + 1 >= static_cast<int>(lesson_->lesson.steps.size())) return;
  ++step_;
  show_step();
}

void LessonPane::back() {
  if (!lesson_ || step_ == 0) return;
  --step_;
  show_step();
}

void LessonPane::show_step() {
  revealed_ = false;
  set_reveal({});
  number_->clear();
  for (QWidget* w : {static_cast<QWidget*>(number_), static_cast<QWidget*>(unit_), static_cast<QWidget*>(choice_),
                     static_cast<QWidget*>(reveal_), static_cast<QWidget*>(act_)})
    w->hide();
  if (!lesson_) {
    lesson_title_->setText(tr("No lesson open"));
    title_->clear();
    text_->setText(tr("Pick one from the Lessons menu. Each opens its sample graph and walks through it step by "
                      "step: you predict, then the app reveals the cost model's answer and what a GPU measured."));
    progress_->clear();
    back_->setEnabled(false);
    next_->setEnabled(false);
    return;
  }
  const LessonStep& s = current();
  const int count = static_cast<int>(lesson_->lesson.steps.size());
  lesson_title_->setText(qs(lesson_->lesson.title));
  progress_->setText(tr("Step %1 of %2").arg(step_ + 1).arg(count));
  title_->setText(tr("%1: %2").arg(kind_label(s.kind), qs(s.title)));
  text_->setText(qs(s.text));
  back_->setEnabled(step_ > 0);
  next_->setEnabled(step_ + 1 < count);
  if (s.kind == StepKind::predict) show_predict(s);
  if (s.kind == StepKind::act) act_->show();
  if (s.kind == StepKind::run) show_run();
  emit step_changed(step_);
}

void LessonPane::show_predict(const LessonStep& s) {
  reveal_->show();
  reveal_->setEnabled(true);
  const std::vector<std::string> words = choices(*s.quantity);
  if (words.empty()) {
    number_->show();
    unit_->show();
    unit_->setText(qs(unit_of(*s.quantity)));
    number_->setPlaceholderText(tr("your estimate"));
    number_->setFocus();
    return;
  }
  choice_->clear();
  choice_->addItem(tr("(pick one)"), QString());
  for (const std::string& w : words) choice_->addItem(qs(w), qs(w));
  choice_->show();
}

void LessonPane::show_run() {
  if (lesson_->run) {
    set_reveal(qs(describe_run(*lesson_->run)));
    return;
  }
  QString text = tr("No run report is bundled with this lesson, so there is nothing measured to show. On a machine "
                    "with an NVIDIA GPU, File > Run on GPU (Ctrl+R) measures both plans; the numbers appear in the "
                    "Measurements panel.");
  if (!lesson_->run_note.isEmpty()) text = lesson_->run_note + QStringLiteral("\n\n") + text;
  set_reveal(text);
}

void LessonPane::set_answer(const QString& answer) {
  if (lesson_ && current().quantity && is_choice(*current().quantity)) {
    const int i = choice_->findData(answer);
    if (i >= 0) choice_->setCurrentIndex(i);
  } else {
    number_->setText(answer);
  }
}

void LessonPane::reveal_answer() {
  if (!lesson_ || current().kind != StepKind::predict || !graph_) return;
  const LessonStep& s = current();
  const QString said = is_choice(*s.quantity) ? choice_->currentData().toString() : number_->text().trimmed();
  if (said.isEmpty()) {
    set_reveal(tr("Make your prediction first, then reveal."));
    return;
  }
  auto r = reveal(s, *graph_, *device_, lesson_->run ? &*lesson_->run : nullptr);
  if (!r) {
    set_reveal(tr("This step cannot be answered: %1").arg(qs(format_diagnostics(r.errors()))));
    return;
  }
  const Grade g = grade(*r, *s.quantity, said.toStdString());
  // The grade already names both answers: say once where they come from.
  QString sources = tr("Model: the cost model for %1.").arg(qs(device_->name));
  if (!r->measured_text.empty()) sources += QLatin1Char(' ') + tr("Measured: %1.").arg(qs(lesson_->run->label()));
  QStringList lines{qs(g.text), sources};
  if (!r->why.empty()) lines << qs(r->why);
  set_reveal(lines.join(QStringLiteral("\n\n")));
  revealed_ = true;
}

void LessonPane::set_high_contrast(bool on) {
  const int base = on ? 20 : 0;  // 0: the window's own size, which View > Larger text scales
  const QString size = base ? QStringLiteral("font-size: %1pt;").arg(base) : QString();
  setStyleSheet(on ? QStringLiteral("QWidget#lesson_pane { background: #ffffff; } QLabel { color: #000000; %1 } "
                                    "QLabel#step_title { font-weight: bold; color: #00338d; } "
                                    "QLabel#lesson_reveal { background: #fff3b0; border: 2px solid #000000; "
                                    "padding: 8px; } QLineEdit, QComboBox, QPushButton { %1 }")
                         .arg(size)
                   : QStringLiteral("QLabel#step_title { font-weight: bold; } "
                                    "QLabel#lesson_title { font-size: 13pt; font-weight: bold; } "
                                    "QLabel#lesson_reveal { background: palette(alternate-base); padding: 6px; }"));
  setAttribute(Qt::WA_StyledBackground, true);
}

void LessonPane::set_reveal(const QString& text) {
  answer_->setText(text);
  answer_->setVisible(!text.isEmpty());
}

QString LessonPane::step_title() const { return title_->text(); }
QString LessonPane::step_text() const { return text_->text(); }
QString LessonPane::reveal_text() const { return answer_->text(); }

}  // namespace fx::app
