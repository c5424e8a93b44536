#include "app/gui/run_targets_menu.h"

#include <QActionGroup>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>

namespace fx::app {
namespace {

const QString kSetting = QStringLiteral("run/target");

}  // namespace

RunTargetsMenu::RunTargetsMenu(QWidget* parent) : QToolButton(parent), menu_(new QMenu(this)) {
  setMenu(menu_);
  setPopupMode(QToolButton::InstantPopup);
  setToolButtonStyle(Qt::ToolButtonTextOnly);
  reload();
}

void RunTargetsMenu::reload() {
  std::string error;
  targets_ = fx::remote::load_targets(fx::remote::targets_file(), &error);
  if (!error.empty()) setToolTip(QString::fromStdString(error));
  choose(QSettings().value(kSetting).toString());
}

void RunTargetsMenu::choose(const QString& name) {
  current_ = fx::remote::RunTarget{};
  current_.name = "local";
  for (const auto& t : targets_)
    if (QString::fromStdString(t.name) == name) current_ = t;
  QSettings().setValue(kSetting, current_.remote() ? QString::fromStdString(current_.name) : QString());
  setText(tr("Run on: %1").arg(current_.remote() ? QString::fromStdString(current_.name) : tr("this computer")));
  rebuild_menu();
  emit target_changed(current_);
}

void RunTargetsMenu::rebuild_menu() {
  menu_->clear();
  auto* group = new QActionGroup(menu_);
  auto add = [&](const QString& text, const QString& name, const QString& tip, bool checked) {
    QAction* a = menu_->addAction(text, this, [this, name] { choose(name); });
    a->setCheckable(true);
    a->setChecked(checked);
    a->setToolTip(tip);
    group->addAction(a);
  };
  add(tr("This computer"), QString(), tr("Run with the fusion-cli next to this program"), !current_.remote());
  for (const auto& t : targets_) {
    const QString name = QString::fromStdString(t.name);
    add(name + QStringLiteral("  —  ") + QString::fromStdString(t.url), name, QString::fromStdString(t.url),
        current_.remote() && t.name == current_.name);
  }
  menu_->addSeparator();
  menu_->addAction(tr("Add a target…"), this, &RunTargetsMenu::ask_for_target);
  if (current_.remote()) {
    const QString name = QString::fromStdString(current_.name);
    menu_->addAction(tr("Remove “%1”").arg(name), this, [this, name] { remove_target(name); });
  }
}

bool RunTargetsMenu::save(QString* error) {
  std::string why;
  if (fx::remote::save_targets(fx::remote::targets_file(), targets_, &why)) return true;
  *error = QString::fromStdString(why);
  return false;
}

bool RunTargetsMenu::add_target(const QString& name, const QString& url, QString* error) {
  std::string why;
  auto t = fx::remote::parse_target_url(url.trimmed().toStdString(), &why);
  if (name.trimmed().isEmpty() || name.trimmed() == QStringLiteral("local")) why = "give the target a name (not 'local')";
  if (!why.empty() || !t || !t->remote()) {
    *error = why.empty() ? tr("a remote target is ssh://… or slurm://…") : QString::fromStdString(why);
    return false;
  }
  t->name = name.trimmed().toStdString();
  std::erase_if(targets_, [&](const auto& o) { return o.name == t->name; });
  targets_.push_back(*t);
  if (!save(error)) return false;
  choose(name.trimmed());
  return true;
}

void RunTargetsMenu::remove_target(const QString& name) {
  std::erase_if(targets_, [&](const auto& o) { return QString::fromStdString(o.name) == name; });
  QString error;
  if (!save(&error)) QMessageBox::warning(this, tr("Run targets"), error);
  choose(QString());
}

void RunTargetsMenu::ask_for_target() {
  QDialog dialog(this);
  dialog.setWindowTitle(tr("Add a run target"));
  auto* name = new QLineEdit(&dialog);
  auto* url = new QLineEdit(&dialog);
  url->setPlaceholderText(QStringLiteral("ssh://user@gpu-host:22"));
  auto* help = new QLabel(tr("ssh://[user@]host[:port] logs in with your own ssh keys, agent and ~/.ssh/config (a Host\n"
                             "alias works); nothing is stored but the name and URL. Options after '?':\n"
                             "cli=/path/to/fusion-cli, timeout=SECONDS. A Slurm cluster: slurm://login-host\n"
                             "?partition=gpu&gpus=1&time=10:00 runs through srun there (docs/remote.md)."),
                          &dialog);
  auto* error = new QLabel(&dialog);
  error->setStyleSheet(QStringLiteral("color: #b00020"));
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
  auto* form = new QFormLayout(&dialog);
  form->addRow(tr("Name"), name);
  form->addRow(tr("URL"), url);
  form->addRow(help);
  form->addRow(error);
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  connect(buttons, &QDialogButtonBox::accepted, &dialog, [&] {
    QString why;
    if (add_target(name->text(), url->text(), &why)) dialog.accept();
    else error->setText(why);
  });
  dialog.exec();
}

}  // namespace fx::app
