// The candidates dock: the table, a filter, and the Accept / Reject / Accept all profitable buttons.
#pragma once

#include <QWidget>

#include "app/gui/candidates_model.h"

class QTableView;
class QSortFilterProxyModel;
class QCheckBox;
class QPushButton;
class QLabel;

namespace fx::app {

class CandidatesPanel : public QWidget {
  Q_OBJECT
 public:
  explicit CandidatesPanel(QWidget* parent = nullptr);
  CandidatesModel* model() { return model_; }
  void refresh(const FusionEngine* engine);
  QString current_id() const;

 signals:
  void candidate_selected(const QString& id, const std::vector<fx::NodeId>& nodes);
  void accept_requested(const QString& id);
  void reject_requested(const QString& id);
  void auto_fuse_requested();

 private:
  void update_buttons();
  CandidatesModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QCheckBox* only_fusible_;
  QPushButton* accept_;
  QPushButton* reject_;
  QPushButton* auto_;
  QLabel* summary_;
};

}  // namespace fx::app
