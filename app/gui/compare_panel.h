// "Compare with plan...": a second plan of the same graph (Inductor's, recorded by fusion_explorer.inductor, or
// another plan of ours) laid over the current one. Each node gets a badge, "=" where both plans put it in the
// same group and "≠" where they differ; the panel lists the comparison as `fusion-cli diff` does, and for two
// selected nodes shows both sides' answers: our engine's decision and the other plan's recorded reasons.
#pragma once

#include <QString>
#include <QWidget>
#include <memory>
#include <optional>
#include <variant>
#include <vector>

#include "core/fusion/plan_diff.h"

class QLabel;
class QTextBrowser;

namespace fx::app {

class GraphScene;
class Session;

// The other plan as loaded, and the comparison with the session's current plan; rebuilt when the plan changes.
struct Comparison {
  QString path;
  PlanSideInput other;  // its engine is null: the other plan is data
  PlanDiff diff;
  std::vector<int> agree;  // per node: 1 where both plans hold the same group around it
};

// Reads `path` as a plan of the session's graph and compares; an error message (with the JSON pointer) when
// the file is not a plan of this graph.
std::variant<Comparison, QString> compare_with_file(const Session& session, const QString& path);

class ComparePanel : public QWidget {
  Q_OBJECT
 public:
  ComparePanel(Session* session, GraphScene* scene, QWidget* parent = nullptr);
  ~ComparePanel() override;

  // Loads and overlays; false (with the message in error()) when the file cannot be compared.
  bool load(const QString& path);
  void clear();
  bool active() const { return comparison_.has_value(); }
  const Comparison* comparison() const { return comparison_ ? &*comparison_ : nullptr; }
  // Puts the badges on the scene's current items again (after a relayout made new ones).
  void apply_overlay();
  // Both sides' answers for the pair (from the scene's selection when two nodes are selected).
  void show_pair(NodeId a, NodeId b);
  QString html() const;
  QString error() const { return error_; }
  int badge_count(bool agreeing) const;

 private:
  void refresh();
  void on_selection();
  QString summary_html() const;

  Session* session_;
  GraphScene* scene_;
  QLabel* title_;
  QTextBrowser* text_;
  std::optional<Comparison> comparison_;
  QString error_, pair_html_;
};

}  // namespace fx::app
