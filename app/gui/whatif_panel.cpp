#include "app/gui/whatif_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>

namespace fx::app {
namespace {
QString qs(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

WhatIfPanel::WhatIfPanel(QWidget* parent) : QWidget(parent), devices_(DeviceDescription::presets()) {
  max_size_ = new QSpinBox(this);
  max_size_->setRange(2, 100000);
  max_size_->setToolTip(tr("Largest group in nodes (TorchInductor's max_fusion_size is 64)"));
  registers_ = new QSpinBox(this);
  registers_->setRange(8, 255);
  registers_->setToolTip(tr("Estimated live 32-bit values per thread before REGISTER_PRESSURE"));
  kinds_ = {{FusionKind::vertical, new QCheckBox(tr("Vertical (producer → consumer)"), this)},
            {FusionKind::horizontal, new QCheckBox(tr("Horizontal (siblings sharing an input)"), this)},
            {FusionKind::epilogue, new QCheckBox(tr("Epilogue (after matmul / reduction)"), this)},
            {FusionKind::attention, new QCheckBox(tr("Attention (Q·Kᵀ → softmax → ·V as one call)"), this)}};
  recompute_ = new QCheckBox(tr("Recompute cheap producers"), this);
  device_combo_ = new QComboBox(this);
  for (const DeviceDescription& d : devices_) device_combo_->addItem(qs(d.name));
  auto* load = new QPushButton(tr("Load calibrated…"), this);
  device_text_ = new QLabel(this);
  device_text_->setWordWrap(true);

  auto* form = new QFormLayout(this);
  form->addRow(tr("Max fusion size"), max_size_);
  form->addRow(tr("Register budget"), registers_);
  for (const auto& [kind, box] : kinds_) form->addRow(box == kinds_.front().second ? tr("Kinds") : QString(), box);
  form->addRow(QString(), recompute_);
  form->addRow(tr("Device"), device_combo_);
  form->addRow(QString(), load);
  form->addRow(device_text_);

  set_from(EngineOptions{}, DeviceDescription::default_device());  // as fusion-cli's analyze and explain
  for (QSpinBox* s : {max_size_, registers_}) connect(s, &QSpinBox::editingFinished, this, &WhatIfPanel::changed);
  for (const auto& [kind, box] : kinds_) connect(box, &QCheckBox::toggled, this, &WhatIfPanel::changed);
  connect(recompute_, &QCheckBox::toggled, this, &WhatIfPanel::changed);
  connect(device_combo_, &QComboBox::currentIndexChanged, this, [this] {
    show_device();
    changed();
  });
  connect(load, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Device description"), {}, tr("JSON (*.json)"));
    if (path.isEmpty()) return;
    const QString error = load_device_file(path);
    if (!error.isEmpty()) QMessageBox::critical(this, tr("Cannot load device"), error);
  });
}

QString WhatIfPanel::load_device_file(const QString& path) {
  auto device = fx::load_device_file(path.toStdString());
  if (!device) return qs(format_diagnostics(device.errors(), path.toStdString()));
  devices_.push_back(*device);
  device_combo_->addItem(qs(device->name));
  device_combo_->setCurrentIndex(device_combo_->count() - 1);
  return {};
}

void WhatIfPanel::set_from(const EngineOptions& o, const DeviceDescription& device) {
  updating_ = true;
  max_size_->setValue(o.max_fusion_size);
  registers_->setValue(o.register_budget);
  for (const auto& [kind, box] : kinds_) box->setChecked(!o.disabled_kinds.count(kind));
  recompute_->setChecked(o.allow_recompute);
  auto it = std::find(devices_.begin(), devices_.end(), device);
  if (it == devices_.end()) {
    devices_.push_back(device);
    device_combo_->addItem(qs(device.name));
    it = devices_.end() - 1;
  }
  device_combo_->setCurrentIndex(static_cast<int>(it - devices_.begin()));
  show_device();
  updating_ = false;
}

EngineOptions WhatIfPanel::options() const {
  EngineOptions o;
  o.max_fusion_size = max_size_->value();
  o.register_budget = registers_->value();
  for (const auto& [kind, box] : kinds_) {
    if (!box->isChecked()) o.disabled_kinds.insert(kind);
  }
  o.allow_recompute = recompute_->isChecked();
  return o;
}

DeviceDescription WhatIfPanel::device() const {
  const int i = std::max(0, device_combo_->currentIndex());
  return devices_[static_cast<std::size_t>(i)];
}

void WhatIfPanel::show_device() {
  const DeviceDescription d = device();
  device_text_->setText(tr("HBM %1 TB/s, FP32 %2 TFLOP/s, tensor FP16 %3 TFLOP/s, launch %4 µs, %5 SMs\n%6")
                            .arg(d.hbm_bandwidth / 1e12, 0, 'f', 2).arg(d.fp32_flops / 1e12, 0, 'f', 0)
                            .arg(d.fp16_tensor_flops / 1e12, 0, 'f', 0).arg(d.launch_overhead_s * 1e6, 0, 'f', 1)
                            .arg(d.sm_count).arg(qs(d.source)));
}

void WhatIfPanel::changed() {
  if (!updating_) emit what_if_changed(options(), device());
}

}  // namespace fx::app
