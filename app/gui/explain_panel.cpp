#include "app/gui/explain_panel.h"

#include <QCheckBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "app/gui/child_runner.h"
#include "app/gui/cuda_highlighter.h"
#include "app/gui/session.h"
#include "core/analysis/views.h"
#include "core/fusion/attention.h"
#include "core/fusion/kernel_names.h"
#include "core/graph/graph_io.h"

namespace fx::app {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }
QString bytes(double b) { return qs(format_bytes(b)); }
QString micros(double s) { return QStringLiteral("%1 µs").arg(s * 1e6, 0, 'f', 1); }

QString names(const Graph& g, const std::vector<NodeId>& nodes) {
  QStringList out;
  for (NodeId n : nodes) out << QStringLiteral("<code>%1</code>").arg(qs(g.node(n).name).toHtmlEscaped());
  return out.join(QStringLiteral(" → "));
}

}  // namespace

QString traffic_html(const FusionEngine& engine, const std::vector<NodeId>& nodes, const GroupCost& fused) {
  const Graph& g = engine.graph();
  GroupCost unfused;
  int kernels = 0;  // a view run alone launches nothing (core/analysis/views.h)
  for (NodeId n : nodes) {
    const GroupCost c = engine.cost_model().single(g, n);
    unfused += c;
    kernels += lone_view(g, n).is_view() ? 0 : 1;
  }
  const double before = static_cast<double>(unfused.bytes_moved());
  const double after = static_cast<double>(fused.bytes_moved());
  QString html = QStringLiteral("<h3>Memory traffic (HBM)</h3><table cellpadding=3>");
  html += QStringLiteral("<tr><td><b>Unfused</b> (%1)</td><td>%2</td><td>%3</td></tr>")
              .arg(kernels == 1 ? QObject::tr("1 kernel") : QObject::tr("%1 kernels").arg(kernels))
              .arg(qs(describe_traffic(unfused)).toHtmlEscaped(), micros(unfused.time_s));
  html += QStringLiteral("<tr><td><b>Fused</b> (1 kernel)</td><td>%1</td><td>%2</td></tr></table>")
              .arg(qs(describe_traffic(fused)).toHtmlEscaped(), micros(fused.time_s));
  if (before > 0 && nodes.size() > 1)
    html += QStringLiteral("<p>Fusing keeps the intermediates in registers: %1 less traffic (%2% of the unfused "
                           "bytes), and %3.</p>")
                .arg(bytes(before - after))
                .arg(100.0 * (before - after) / before, 0, 'f', 0)
                .arg(kernels > 2   ? QObject::tr("%1 fewer kernel launches").arg(kernels - 1)
                     : kernels == 2 ? QObject::tr("one kernel launch less")
                                    : QObject::tr("no fewer kernel launches (the views among these ops launch none)"));
  if (fused.compute_bound())
    html += QStringLiteral("<p><i>This kernel is compute-bound (%1 of math vs %2 of memory time): saving bytes "
                           "barely changes its time.</i></p>").arg(micros(fused.compute_time_s), micros(fused.memory_time_s));
  return html;
}

QString view_html(const Graph& g, const Group& group) {
  const NodeId n = group.nodes.front();
  return QObject::tr("<h3>A view: no kernel, no HBM traffic</h3><p><code>%1</code> (%2) reads the bytes of "
                     "<code>%3</code> as they lie, as %4: a reshape of a row-major tensor moves no element, so "
                     "nothing is launched, nothing is timed, and its output shares the buffer of <code>%3</code>. "
                     "It is not counted as a kernel.</p>")
      .arg(qs(g.node(n).name).toHtmlEscaped(), qs(g.node(n).op), qs(g.value_name(group.view_of)).toHtmlEscaped(),
           qs(type_to_string(g.node(n).type)).toHtmlEscaped());
}

QString fold_shared_helpers(const QString& source) {
  static const QString begin = QStringLiteral("// ---- Fusion Explorer device helpers");
  static const QString end = QStringLiteral("// ---- end of helpers ----");
  QString out;
  qsizetype at = 0;
  while (true) {
    const qsizetype b = source.indexOf(begin, at);
    const qsizetype e = b < 0 ? -1 : source.indexOf(end, b);
    if (e < 0) break;
    const int lines = static_cast<int>(source.mid(b, e - b).count(QLatin1Char('\n'))) + 1;
    out += source.mid(at, b - at);
    out += QObject::tr("// [%1 lines of device helpers shared by every kernel: conversions, math, random numbers, "
                       "block reductions. Tick \"Show shared helpers\" to read them.]").arg(lines);
    at = e + end.size();
  }
  return out + source.mid(at);
}

QString decision_html(const FusionDecision& d) {
  QString html = QStringLiteral("<p><b style='color:%1'>%2</b> — %3</p>")
                     .arg(d.fuse ? "#2e7d32" : "#c62828", qs(std::string(to_string(d.reason))),
                          qs(d.message).toHtmlEscaped());
  if (!d.numbers.empty()) {
    html += QStringLiteral("<table cellpadding=2>");
    for (const auto& [key, value] : d.numbers)
      html += QStringLiteral("<tr><td><code>%1</code></td><td align=right>%2</td></tr>").arg(qs(key)).arg(value, 0, 'g', 6);
    html += QStringLiteral("</table>");
  }
  return html;
}

ExplainPanel::ExplainPanel(QWidget* parent) : QWidget(parent) {
  text_ = new QTextBrowser(this);
  text_->setOpenExternalLinks(false);
  source_ = new QPlainTextEdit(this);
  source_->setReadOnly(true);
  source_->setLineWrapMode(QPlainTextEdit::NoWrap);
  source_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  new CudaHighlighter(source_->document());
  source_label_ = new QLabel(tr("Generated CUDA source"), this);
  show_helpers_ = new QCheckBox(tr("Show shared helpers"), this);
  connect(show_helpers_, &QCheckBox::toggled, this, [this] { show_source(); });
  auto* bottom = new QWidget(this);
  auto* bl = new QVBoxLayout(bottom);
  bl->setContentsMargins(0, 0, 0, 0);
  auto* header = new QHBoxLayout;
  header->addWidget(source_label_, 1);
  header->addWidget(show_helpers_);
  bl->addLayout(header);
  bl->addWidget(source_);
  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(text_);
  split->addWidget(bottom);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(split);
  codegen_ = new ChildRunner(this);
  connect(codegen_, &ChildRunner::finished, this, [this](const ChildResult& r) {
    if (r.status == ChildResult::Status::finished && r.exit_code == 0) {
      full_source_ = r.std_out;
      show_source();
    } else if (r.status != ChildResult::Status::cancelled) {
      source_->setPlainText(tr("// fusion-cli codegen %1.\n// %2").arg(r.describe(), r.std_err.trimmed().replace('\n', "\n// ")));
    }
  });
  clear();
}

void ExplainPanel::clear() {
  text_->setHtml(tr("<p>Select a node or a group to see its memory traffic, a candidate to see what fusing it "
                    "would save, or two nodes (Ctrl+click) and press <b>Why not fused?</b> (Ctrl+W).</p>"));
  source_->clear();
}

QString ExplainPanel::html() const { return text_->toHtml(); }
QString ExplainPanel::source() const { return source_->toPlainText(); }

void ExplainPanel::set_show_helpers(bool on) { show_helpers_->setChecked(on); }

void ExplainPanel::show_source() {
  source_->setPlainText(show_helpers_->isChecked() ? full_source_ : fold_shared_helpers(full_source_));
}

void ExplainPanel::show_group(const Session& session, int group_index) {
  const FusionEngine& e = session.engine();
  const Group& g = e.plan().groups()[static_cast<std::size_t>(group_index)];
  QStringList kinds;
  for (FusionKind k : g.kinds) kinds << qs(std::string(to_string(k)));
  QString html = QStringLiteral("<h2>%1 <small>%2</small></h2><p>%3</p>")
                     .arg(qs(g.id).toHtmlEscaped(), kinds.join('+'), names(e.graph(), g.nodes));
  if (!g.recomputed.empty())
    html += tr("<p>Recomputes %1 instead of reading it from memory.</p>").arg(names(e.graph(), g.recomputed));
  if (const std::string kernel = group_kernel_name(e.graph(), e.plan(), group_index); !kernel.empty())
    html += tr("<p>Kernel: <code>%1</code> (its name in a run report and a profiler)</p>").arg(qs(kernel).toHtmlEscaped());
  if (g.is_view()) {
    html += view_html(e.graph(), g);
  } else {
    if (!g.copy_reason.empty()) html += tr("<p><b>A copy, not a view:</b> %1.</p>").arg(qs(g.copy_reason).toHtmlEscaped());
    html += traffic_html(e, g.nodes, g.cost);
    if (const std::string attention = attention_group_explanation(e.graph(), e.cost_model(), g.nodes, g.cost);
        !attention.empty()) {
      html += QStringLiteral("<p>%1</p>").arg(qs(attention).toHtmlEscaped());
    }
  }
  QStringList sources;  // where the user's program made these nodes (exported from PyTorch)
  for (NodeId n : g.nodes)
    if (!e.graph().node(n).source.empty() && !sources.contains(qs(e.graph().node(n).source))) sources << qs(e.graph().node(n).source);
  if (!sources.isEmpty()) html += tr("<p>From: %1</p>").arg(sources.join(", ").toHtmlEscaped());
  text_->setHtml(html);
  request_source(session, g.id);
}

void ExplainPanel::show_candidate(const Session& session, const Candidate& c) {
  const FusionEngine& e = session.engine();
  QString html = QStringLiteral("<h2>Candidate %1</h2><p>%2 (%3) of %4 and %5</p><p>%6</p>")
                     .arg(qs(c.id).toHtmlEscaped(), qs(std::string(to_string(c.kind))),
                          qs(std::string(to_string(c.strategy))), qs(c.group_a).toHtmlEscaped(),
                          qs(c.group_b).toHtmlEscaped(), names(e.graph(), c.nodes));
  html += decision_html(c.decision);
  html += QStringLiteral("<p>Predicted: %1 → %2 (%3 → %4)</p>")
              .arg(micros(c.time_before_s), micros(c.time_after_s), bytes(static_cast<double>(c.bytes_before)),
                   bytes(static_cast<double>(c.bytes_after)));
  text_->setHtml(html);
}

void ExplainPanel::show_decision(const Session& session, NodeId a, NodeId b, const PairExplanation& why) {
  const Graph& g = session.graph();
  const Plan& plan = session.engine().plan();
  // The nodes the user picked, and the kernels they are in (a kernel is named after its first node).
  auto where = [&](NodeId n) {
    const Group& group = plan.group_of_node(n);
    return group.nodes.size() > 1 ? tr("<code>%1</code> (in kernel <code>%2</code>)")
                                        .arg(qs(g.node(n).name).toHtmlEscaped(), qs(group.id).toHtmlEscaped())
                                  : tr("<code>%1</code>").arg(qs(g.node(n).name).toHtmlEscaped());
  };
  QString html = tr("<h2>Why not fused?</h2><p>Can %1 and %2 run in one kernel?</p>").arg(where(a), where(b));
  // The heading names the two nodes and their kernels already; the engine's message starts by naming them too.
  FusionDecision shown = why.decision;
  const std::string named = g.node(a).name + " (in kernel ";
  const std::string plain = g.node(a).name + " and ";
  if (const auto colon = shown.message.find(": "); colon != std::string::npos &&
      (shown.message.rfind(named, 0) == 0 || shown.message.rfind(plain, 0) == 0)) {
    shown.message = shown.message.substr(colon + 2);
  }
  html += decision_html(shown);
  if (why.path.size() > 2) html += tr("<p>Path between them: %1</p>").arg(names(g, why.path));
  if (why.blocking && !why.decision.fuse) {
    html += tr("<p>Blocked at the edge <code>%1</code> → <code>%2</code> (highlighted on the graph).</p>")
                .arg(qs(g.node(why.blocking->first).name).toHtmlEscaped(),
                     qs(g.node(why.blocking->second).name).toHtmlEscaped());
  }
  text_->setHtml(html);
}

void ExplainPanel::request_source(const Session& session, const std::string& group_id) {
  const QString cli = find_fusion_cli();
  if (cli.isEmpty() || !temp_.isValid()) {
    source_->setPlainText(tr("// fusion-cli not found: the generated source comes from `fusion-cli codegen`."));
    return;
  }
  // The child reads the plan from a file: write the current session (graph + plan) for it.
  const QString plan = temp_.filePath(QStringLiteral("session.fused.json"));
  if (!write_text_file_atomic(plan.toStdString(), session.engine().save_fused_graph())) return;
  full_source_.clear();
  source_->setPlainText(tr("// generating…"));
  codegen_->start(cli, {QStringLiteral("codegen"), plan, QStringLiteral("--plan"), plan, QStringLiteral("--group"),
                        qs(group_id)});
}

}  // namespace fx::app
