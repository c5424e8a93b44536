#include "app/gui/candidates_panel.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

namespace fx::app {
namespace {

// Shows every candidate, or only those the engine would fuse.
class FusibleFilter : public QSortFilterProxyModel {
 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;
  void set_only_fusible(bool on) {
    only_fusible_ = on;
    invalidateFilter();
  }

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override {
    if (!only_fusible_) return true;
    return sourceModel()->index(row, 0, parent).data(CandidatesModel::FusibleRole).toBool();
  }

 private:
  bool only_fusible_ = false;
};

}  // namespace

CandidatesPanel::CandidatesPanel(QWidget* parent) : QWidget(parent) {
  model_ = new CandidatesModel(this);
  auto* filter = new FusibleFilter(this);
  proxy_ = filter;
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(CandidatesModel::SortRole);

  table_ = new QTableView(this);
  table_->setModel(proxy_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setSortingEnabled(true);
  table_->sortByColumn(-1, Qt::AscendingOrder);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setAlternatingRowColors(true);
  table_->setWordWrap(false);

  only_fusible_ = new QCheckBox(tr("Only fusible"), this);
  accept_ = new QPushButton(QIcon(QStringLiteral(":/icons/accept.svg")), tr("&Accept"), this);
  reject_ = new QPushButton(QIcon(QStringLiteral(":/icons/reject.svg")), tr("&Reject"), this);
  auto_ = new QPushButton(QIcon(QStringLiteral(":/icons/auto_fuse.svg")), tr("Accept all &profitable"), this);
  accept_->setToolTip(tr("Merge the two groups of the selected candidate (Ctrl+Return)"));
  reject_->setToolTip(tr("Record that this fusion is not wanted; auto-fuse will skip it (Ctrl+Backspace)"));
  auto_->setToolTip(tr("Greedy auto-fuse by predicted time saved (one undo step)"));
  accept_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
  reject_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Backspace));
  summary_ = new QLabel(this);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(accept_);
  buttons->addWidget(reject_);
  buttons->addWidget(auto_);
  buttons->addStretch();
  buttons->addWidget(only_fusible_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(buttons);
  layout->addWidget(table_);
  layout->addWidget(summary_);

  connect(only_fusible_, &QCheckBox::toggled, this, [filter](bool on) { filter->set_only_fusible(on); });
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] {
    update_buttons();
    const int row = proxy_->mapToSource(table_->currentIndex()).row();
    if (row >= 0) emit candidate_selected(current_id(), model_->candidate(row).nodes);
  });
  connect(accept_, &QPushButton::clicked, this, [this] { emit accept_requested(current_id()); });
  connect(reject_, &QPushButton::clicked, this, [this] { emit reject_requested(current_id()); });
  connect(auto_, &QPushButton::clicked, this, &CandidatesPanel::auto_fuse_requested);
  update_buttons();
}

QString CandidatesPanel::current_id() const {
  const QModelIndex index = table_->currentIndex();
  return index.isValid() ? index.data(CandidatesModel::CandidateIdRole).toString() : QString();
}

void CandidatesPanel::refresh(const FusionEngine* engine) {
  const QString keep = current_id();
  model_->refresh(engine);
  table_->resizeColumnsToContents();
  int fusible = 0;
  for (int r = 0; r < model_->rowCount(); ++r) fusible += model_->candidate(r).decision.fuse ? 1 : 0;
  summary_->setText(tr("%1 candidate(s), %2 fusible").arg(model_->rowCount()).arg(fusible));
  const int row = model_->row_of(keep);
  if (row >= 0) table_->setCurrentIndex(proxy_->mapFromSource(model_->index(row, 0)));
  auto_->setEnabled(engine != nullptr);
  update_buttons();
}

void CandidatesPanel::update_buttons() {
  const QModelIndex index = table_->currentIndex();
  accept_->setEnabled(index.isValid() && index.data(CandidatesModel::FusibleRole).toBool());
  reject_->setEnabled(index.isValid());
}

}  // namespace fx::app
