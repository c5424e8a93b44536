// The engine's candidates for the current plan as a table: kind, strategy, nodes, predicted bytes saved,
// time before/after, speedup, verdict. Rebuilt whenever the plan changes.
#pragma once

#include <QAbstractTableModel>
#include <vector>

#include "core/fusion/engine.h"

namespace fx::app {

class CandidatesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kId, kKind, kNodes, kBytesSaved, kBefore, kAfter, kSpeedup, kVerdict, kColumnCount };
  enum Role { CandidateIdRole = Qt::UserRole + 1, FusibleRole, SortRole };

  explicit CandidatesModel(QObject* parent = nullptr);
  // engine may be null (no document). The model copies the candidates: it never holds engine pointers.
  void refresh(const FusionEngine* engine);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

  const Candidate& candidate(int row) const { return rows_[static_cast<std::size_t>(row)]; }
  int row_of(const QString& id) const;
  const Graph* graph() const { return graph_; }

 private:
  std::vector<Candidate> rows_;
  std::vector<QString> node_text_;
  std::vector<QString> kind_text_;  // "prologue", "epilogue", "vertical (multi-output)"...
  const Graph* graph_ = nullptr;  // for node names only; valid while the session's document is
};

}  // namespace fx::app
