// What-if controls: the engine's limits (max fusion size, register budget, kinds on/off, recompute) and the
// device the cost model predicts for (a datasheet preset or a calibrated JSON file).
#pragma once

#include <QWidget>
#include <utility>
#include <vector>

#include "core/fusion/engine.h"

class QSpinBox;
class QCheckBox;
class QComboBox;
class QLabel;

namespace fx::app {

class WhatIfPanel : public QWidget {
  Q_OBJECT
 public:
  explicit WhatIfPanel(QWidget* parent = nullptr);
  void set_from(const EngineOptions& options, const DeviceDescription& device);
  EngineOptions options() const;
  DeviceDescription device() const;
  // Adds a device (from a calibrated file) to the list and selects it; "" or an error message.
  QString load_device_file(const QString& path);

 signals:
  void what_if_changed(const fx::EngineOptions& options, const fx::DeviceDescription& device);

 private:
  void changed();
  void show_device();
  QSpinBox* max_size_;
  QSpinBox* registers_;
  std::vector<std::pair<FusionKind, QCheckBox*>> kinds_;  // one box per kind a what-if can switch off
  QCheckBox* recompute_;
  QComboBox* device_combo_;
  QLabel* device_text_;
  std::vector<DeviceDescription> devices_;
  bool updating_ = false;
};

}  // namespace fx::app
