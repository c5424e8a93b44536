// The comparison dock and its badges on the graph (compare_panel.h).
#include "app/gui/compare_panel.h"

#include <QBrush>
#include <QFileInfo>
#include <QGraphicsEllipseItem>
#include <QGraphicsSimpleTextItem>
#include <QLabel>
#include <QPen>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <nlohmann/json.hpp>

#include "app/gui/explain_panel.h"
#include "app/gui/graph_items.h"
#include "app/gui/graph_scene.h"
#include "app/gui/session.h"
#include "core/graph/graph_io.h"
#include "core/graph/graph_json.h"

namespace fx::app {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

constexpr int kBadgeKey = 0;  // QGraphicsItem::data key that marks our badges, so they are found, not held
const QString kAgree = QStringLiteral("compare-agree");
const QString kDiffer = QStringLiteral("compare-differ");

std::vector<int> agreement(const Graph& g, const PlanSideInput& a, const PlanSideInput& b) {
  auto sets = [&](const PlanSideInput& side) {
    std::vector<std::vector<NodeId>> of(static_cast<std::size_t>(g.num_nodes()));
    for (const PlanFileGroup& grp : side.file.groups) {
      std::vector<NodeId> sorted = grp.nodes;
      std::sort(sorted.begin(), sorted.end());
      for (NodeId n : grp.nodes) of[static_cast<std::size_t>(n)] = sorted;
    }
    return of;
  };
  const auto sa = sets(a), sb = sets(b);
  std::vector<int> out(static_cast<std::size_t>(g.num_nodes()));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = sa[i] == sb[i] ? 1 : 0;
  return out;
}

const PlanFileGroup* group_with(const PlanSideInput& side, NodeId n) {
  for (const PlanFileGroup& grp : side.file.groups) {
    if (std::find(grp.nodes.begin(), grp.nodes.end(), n) != grp.nodes.end()) return &grp;
  }
  return nullptr;
}

QString group_words(const PlanFileGroup& grp) {
  QString kernel = grp.kernel.empty() ? QString() : QStringLiteral(" (%1%2)").arg(grp.library ? QStringLiteral("library call ") : QString(), qs(grp.kernel).toHtmlEscaped());
  return QStringLiteral("<code>%1</code>%2").arg(qs(grp.id).toHtmlEscaped(), kernel);
}

QGraphicsItem* make_badge(NodeItem* parent, bool agree, const QString& tip) {
  auto* badge = new QGraphicsEllipseItem(0, 0, 16, 16, parent);
  badge->setBrush(QBrush(agree ? QColor("#2e7d32") : QColor("#ef6c00")));
  badge->setPen(QPen(Qt::white, 1.5));
  const QRectF box = parent->boundingRect();
  badge->setPos(box.right() - 10, box.top() - 6);
  badge->setZValue(10);
  badge->setToolTip(tip);
  badge->setData(kBadgeKey, agree ? kAgree : kDiffer);
  auto* mark = new QGraphicsSimpleTextItem(agree ? QStringLiteral("=") : QStringLiteral("≠"), badge);
  mark->setBrush(Qt::white);
  const QRectF r = mark->boundingRect();
  mark->setPos(8 - r.width() / 2, 8 - r.height() / 2);
  return badge;
}

}  // namespace

std::variant<Comparison, QString> compare_with_file(const Session& session, const QString& path) {
  auto text = read_text_file(path.toStdString(), LoadLimits{}.max_file_bytes);
  if (!text) return qs(format_diagnostics(text.errors(), path.toStdString()));
  auto other_graph = load_graph(*text);
  if (!other_graph) return qs(format_diagnostics(other_graph.errors(), path.toStdString()));
  const Graph& g = session.graph();
  bool same = other_graph->num_nodes() == g.num_nodes();
  for (NodeId n = 0; same && n < g.num_nodes(); ++n) same = other_graph->node(n).name == g.node(n).name;
  if (!same) return QObject::tr("%1 is a plan of another graph (its nodes differ): compare two plans of one graph").arg(path);
  auto doc = parse_json_text(*text);
  const nlohmann::json fusion = doc->contains("fusion") ? (*doc)["fusion"] : nlohmann::json{{"groups", nlohmann::json::array()}};
  auto plan = read_plan_section(g, fusion);
  if (!plan) return qs(format_diagnostics(plan.errors(), path.toStdString()));
  Comparison c;
  c.path = path;
  c.other.label = QFileInfo(path).fileName().toStdString();
  c.other.file = std::move(*plan);
  const PlanSideInput ours = side_of(session.engine(), "this plan");
  c.diff = diff_plans(g, session.engine().cost_model(), session.engine().options(), ours, c.other);
  c.agree = agreement(g, ours, c.other);
  return c;
}

ComparePanel::ComparePanel(Session* session, GraphScene* scene, QWidget* parent)
    : QWidget(parent), session_(session), scene_(scene) {
  auto* layout = new QVBoxLayout(this);
  title_ = new QLabel(tr("No plan to compare with: Fusion > Compare with plan…"), this);
  title_->setWordWrap(true);
  text_ = new QTextBrowser(this);
  layout->addWidget(title_);
  layout->addWidget(text_, 1);
  connect(session_, &Session::plan_changed, this, &ComparePanel::refresh);
  connect(session_, &Session::document_changed, this, &ComparePanel::clear);
  connect(scene_, &QGraphicsScene::selectionChanged, this, &ComparePanel::on_selection);
}

ComparePanel::~ComparePanel() = default;

bool ComparePanel::load(const QString& path) {
  if (!session_->has_document()) {
    error_ = tr("Open a graph first, then compare it with another plan of it.");
    return false;
  }
  auto result = compare_with_file(*session_, path);
  if (auto* message = std::get_if<QString>(&result)) {
    error_ = *message;
    return false;
  }
  error_.clear();
  comparison_ = std::move(std::get<Comparison>(result));
  pair_html_.clear();
  apply_overlay();
  text_->setHtml(html());
  return true;
}

void ComparePanel::clear() {
  comparison_.reset();
  pair_html_.clear();
  apply_overlay();
  title_->setText(tr("No plan to compare with: Fusion > Compare with plan…"));
  text_->clear();
}

void ComparePanel::refresh() {
  if (!comparison_) return;
  const QString path = comparison_->path;
  if (!load(path)) clear();  // the file went away or changed under us: say nothing rather than something stale
}

void ComparePanel::apply_overlay() {
  std::vector<QGraphicsItem*> old;
  for (QGraphicsItem* item : scene_->items()) {
    if (item->data(kBadgeKey).isValid()) old.push_back(item);
  }
  for (QGraphicsItem* item : old) delete item;  // no badge is a child of another, so each is deleted once
  if (!comparison_) return;
  const Graph& g = session_->graph();
  const QString other = qs(comparison_->other.label).toHtmlEscaped();
  for (NodeItem* item : scene_->node_items()) {
    const DrawnNode& d = item->node();
    if (d.kind != DrawnNode::Kind::op || d.node < 0 || d.node >= g.num_nodes()) continue;
    const bool agree = comparison_->agree[static_cast<std::size_t>(d.node)] == 1;
    const PlanFileGroup* theirs = group_with(comparison_->other, d.node);
    const QString where = theirs ? group_words(*theirs) : QStringLiteral("?");
    make_badge(item, agree, agree ? tr("Same group in %1: %2").arg(other, where)
                                  : tr("Grouped differently in %1: %2").arg(other, where));
  }
  title_->setText(tr("Compared with <b>%1</b> (%2)").arg(other, qs(comparison_->other.file.source).toHtmlEscaped()));
}

int ComparePanel::badge_count(bool agreeing) const {
  int n = 0;
  for (QGraphicsItem* item : scene_->items()) n += item->data(kBadgeKey).toString() == (agreeing ? kAgree : kDiffer);
  return n;
}

void ComparePanel::on_selection() {
  if (!comparison_) return;
  const std::vector<NodeId> nodes = scene_->selected_graph_nodes();
  if (nodes.size() == 2) show_pair(nodes[0], nodes[1]);
}

void ComparePanel::show_pair(NodeId a, NodeId b) {
  if (!comparison_) return;
  const FusionEngine& e = session_->engine();
  const Graph& g = e.graph();
  QString html = tr("<h3><code>%1</code> and <code>%2</code></h3>").arg(qs(g.node(a).name).toHtmlEscaped(), qs(g.node(b).name).toHtmlEscaped());
  const bool ours_fused = e.plan().group_of(a) == e.plan().group_of(b);
  html += tr("<p><b>This plan</b> (our engine): ");
  html += ours_fused ? tr("one kernel, group <code>%1</code>.</p>").arg(qs(e.plan().group_of_node(a).id).toHtmlEscaped())
                     : QStringLiteral("</p>") + decision_html(e.explain(a, b));
  const PlanFileGroup* ga = group_with(comparison_->other, a);
  const PlanFileGroup* gb = group_with(comparison_->other, b);
  html += tr("<p><b>%1</b> (%2): ").arg(qs(comparison_->other.label).toHtmlEscaped(), qs(comparison_->other.file.source).toHtmlEscaped());
  if (ga != nullptr && ga == gb) {
    html += tr("one kernel, %1.</p>").arg(group_words(*ga));
  } else {
    const auto reasons = pair_reasons_for(comparison_->other, "B", a, b);
    html += tr("kept apart (%1 and %2).</p>").arg(ga ? group_words(*ga) : QStringLiteral("?"), gb ? group_words(*gb) : QStringLiteral("?"));
    if (reasons.empty()) html += tr("<p>It recorded no reason for this pair (its scheduler did not compare them).</p>");
    for (const ReasonNote& r : reasons)
      html += QStringLiteral("<p><code>%1</code> %2</p>").arg(qs(r.code).toHtmlEscaped(), qs(r.message).toHtmlEscaped());
  }
  pair_html_ = html;
  text_->setHtml(this->html());
}

QString ComparePanel::summary_html() const {
  const PlanDiff& d = comparison_->diff;
  return tr("<p>%1 groups agree, %2 only in this plan, %3 only in %4.</p><pre>%5</pre>")
      .arg(d.both.size()).arg(d.only_a.size()).arg(d.only_b.size())
      .arg(qs(comparison_->other.label).toHtmlEscaped(), qs(plan_diff_text(session_->graph(), d)).toHtmlEscaped());
}

QString ComparePanel::html() const {
  if (!comparison_) return {};
  return pair_html_ + summary_html();
}

}  // namespace fx::app
