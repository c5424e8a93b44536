// The run panel's "Run on" button: this computer or a saved remote target (ssh, Slurm). The list lives in
// targets.json in the settings folder (fx::remote), which `fusion-cli run --target NAME` reads too; the
// choice is kept in the GUI's settings.
#pragma once

#include <QToolButton>

#include "app/remote/target.h"

class QMenu;

namespace fx::app {

class RunTargetsMenu : public QToolButton {
  Q_OBJECT
 public:
  explicit RunTargetsMenu(QWidget* parent = nullptr);
  const fx::remote::RunTarget& current() const { return current_; }
  const std::vector<fx::remote::RunTarget>& targets() const { return targets_; }
  // Adds (or replaces) a target and chooses it; false with the reason for a URL that does not parse.
  bool add_target(const QString& name, const QString& url, QString* error);
  void remove_target(const QString& name);
  // Chooses a saved target by name ("" or "local": this computer).
  void choose(const QString& name);
  void reload();

 signals:
  void target_changed(const fx::remote::RunTarget& target);

 private:
  void rebuild_menu();
  void ask_for_target();
  bool save(QString* error);
  QMenu* menu_;
  std::vector<fx::remote::RunTarget> targets_;
  fx::remote::RunTarget current_;
};

}  // namespace fx::app
