// The explanation dock: for a group, a candidate or a pair of nodes, the engine's verdict and the HBM traffic
// arithmetic in plain words; below, the group's generated CUDA source (from `fusion-cli codegen`).
#pragma once

#include <QTemporaryDir>
#include <QWidget>

#include "core/fusion/engine.h"

class QTextBrowser;
class QPlainTextEdit;
class QLabel;
class QCheckBox;

namespace fx::app {

class ChildRunner;
class Session;

class ExplainPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ExplainPanel(QWidget* parent = nullptr);
  void clear();
  void show_group(const Session& session, int group_index);
  void show_candidate(const Session& session, const Candidate& candidate);
  void show_decision(const Session& session, NodeId a, NodeId b, const PairExplanation& why);
  QString html() const;
  QString source() const;  // as shown: the shared helpers folded unless "Show shared helpers" is on
  void set_show_helpers(bool on);

 private:
  void request_source(const Session& session, const std::string& group_id);
  void show_source();
  QTextBrowser* text_;
  QPlainTextEdit* source_;
  QLabel* source_label_;
  QCheckBox* show_helpers_;
  QString full_source_;
  ChildRunner* codegen_;
  QTemporaryDir temp_;
};

// "Unfused: 5 reads + 3 writes = 2 GiB … fused: 3 reads + 1 write = 1 GiB": the HBM arithmetic for a node set.
QString traffic_html(const FusionEngine& engine, const std::vector<NodeId>& nodes, const GroupCost& fused);
QString decision_html(const FusionDecision& d);
// What a view group is (core/analysis/views.h): no kernel, no traffic, the value whose buffer it reads.
QString view_html(const Graph& g, const Group& group);
// The generated source with each copy of the device helpers every kernel shares replaced by one comment line.
QString fold_shared_helpers(const QString& source);

}  // namespace fx::app
