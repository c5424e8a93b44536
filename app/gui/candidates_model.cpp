#include "app/gui/candidates_model.h"

#include <QBrush>
#include <QColor>
#include <QStringList>
#include <algorithm>

namespace fx::app {
namespace {

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<int>(s.size())); }

QString node_list(const Graph& g, const std::vector<NodeId>& nodes) {
  QStringList names;
  for (NodeId n : nodes) names << qs(g.node(n).name);
  if (names.size() > 6) return names.mid(0, 5).join(QStringLiteral(", ")) + QStringLiteral(", … (%1)").arg(names.size());
  return names.join(QStringLiteral(", "));
}

QString micros(double s) { return QStringLiteral("%1 µs").arg(s * 1e6, 0, 'f', 1); }

// The engine calls any merge touching a reduction or contraction an epilogue; a producer merged into such a
// consumer (res1 into ln2) is, for people, a prologue. The strategy is named only where it is not a plain merge.
QString kind_text(const FusionEngine& engine, const Candidate& c) {
  QString kind = qs(to_string(c.kind));
  if (c.kind == FusionKind::epilogue) {
    // A group's id is "g:" and its first node's name: found through the graph's name index, since Plan::find
    // scans every group (per candidate, that made opening 99,000 nodes quadratic).
    const auto first = engine.graph().find_node(c.group_a.substr(2));
    const Group* producer = first ? &engine.plan().group_of_node(*first) : nullptr;
    const bool heavy_producer = producer != nullptr && std::any_of(producer->nodes.begin(), producer->nodes.end(), [&](NodeId n) {
      const OpClass k = engine.graph().node(n).op_class();
      return k == OpClass::reduction || k == OpClass::contraction;
    });
    if (!heavy_producer) kind = QStringLiteral("prologue");
  }
  if (c.strategy != Strategy::merge) kind += QStringLiteral(" (%1)").arg(qs(to_string(c.strategy)).replace('_', '-'));
  return kind;
}

// The decision's sentence without the "epilogue g:a + g:b: " the log prefixes it with (the row names both).
QString verdict_sentence(const Candidate& c) {
  const QString message = qs(c.decision.message);
  const QString prefix = qs(to_string(c.kind)) + QLatin1Char(' ') + qs(c.group_a) + QStringLiteral(" + ") + qs(c.group_b) + QStringLiteral(": ");
  return message.startsWith(prefix) ? message.mid(prefix.size()) : message;
}

}  // namespace

CandidatesModel::CandidatesModel(QObject* parent) : QAbstractTableModel(parent) {}

void CandidatesModel::refresh(const FusionEngine* engine) {
  beginResetModel();
  rows_.clear();
  node_text_.clear();
  kind_text_.clear();
  graph_ = engine != nullptr ? &engine->graph() : nullptr;
  if (engine != nullptr) {
    rows_ = engine->candidates();
    for (const Candidate& c : rows_) {
      node_text_.push_back(node_list(*graph_, c.nodes));
      kind_text_.push_back(kind_text(*engine, c));
    }
  }
  endResetModel();
}

int CandidatesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int CandidatesModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumnCount; }

int CandidatesModel::row_of(const QString& id) const {
  for (std::size_t i = 0; i < rows_.size(); ++i)
    if (qs(rows_[i].id) == id) return static_cast<int>(i);
  return -1;
}

QVariant CandidatesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= kColumnCount) return {};
  const Candidate& c = rows_[static_cast<std::size_t>(index.row())];
  const double saved_bytes = static_cast<double>(c.bytes_before - c.bytes_after);
  const double speedup = c.time_after_s > 0 ? c.time_before_s / c.time_after_s : 0.0;
  if (role == CandidateIdRole) return qs(c.id);
  if (role == FusibleRole) return c.decision.fuse;
  if (role == SortRole) {
    switch (index.column()) {
      case kBytesSaved: return saved_bytes;
      case kBefore: return c.time_before_s;
      case kAfter: return c.time_after_s;
      case kSpeedup: return speedup;
      default: return data(index, Qt::DisplayRole);
    }
  }
  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case kId: return qs(c.id);
      case kKind: return kind_text_[static_cast<std::size_t>(index.row())];
      case kNodes: return node_text_[static_cast<std::size_t>(index.row())];
      case kBytesSaved: return qs(format_bytes(saved_bytes));
      case kBefore: return micros(c.time_before_s);
      case kAfter: return micros(c.time_after_s);
      case kSpeedup: return speedup > 0 ? QStringLiteral("%1×").arg(speedup, 0, 'f', 2) : QStringLiteral("–");
      case kVerdict:
        return (c.decision.fuse ? tr("fuse: ") : QString()) + verdict_sentence(c);
      default: return {};
    }
  }
  if (role == Qt::ToolTipRole) return QStringLiteral("%1 — %2").arg(qs(to_string(c.decision.reason)), qs(c.decision.message));
  if (role == Qt::ForegroundRole && index.column() == kVerdict)
    return QBrush(c.decision.fuse ? QColor("#2e7d32") : QColor("#c62828"));
  if (role == Qt::TextAlignmentRole && index.column() >= kBytesSaved && index.column() <= kSpeedup)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant CandidatesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Id", "Kind", "Nodes", "Bytes saved", "Before", "After", "Speedup", "Verdict"};
  return section >= 0 && section < kColumnCount ? tr(names[section]) : QVariant();
}

}  // namespace fx::app
