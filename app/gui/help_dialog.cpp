#include "app/gui/help_dialog.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QKeySequence>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <QWidget>
#include <map>

namespace fx::app {

QString shortcuts_html(const QWidget* window) {
  std::map<QString, QString> rows;  // by action text, without the '&' mnemonics
  for (const QAction* a : window->findChildren<QAction*>()) {
    if (a->shortcut().isEmpty() || a->text().isEmpty()) continue;
    QString text = a->text();
    text.remove(QLatin1Char('&'));
    rows[text] = a->shortcut().toString(QKeySequence::NativeText);
  }
  QString html = QObject::tr("<h3>Keyboard shortcuts</h3><table cellpadding=3>");
  for (const auto& [text, keys] : rows) {
    html += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(keys.toHtmlEscaped(), text.toHtmlEscaped());
  }
  html += QObject::tr("<tr><td><b>+ / −</b>, wheel</td><td>Zoom the graph (over the graph)</td></tr>"
                      "<tr><td><b>Ctrl+click</b></td><td>Select a second node (then Why not fused?)</td></tr>"
                      "<tr><td><b>Drag</b></td><td>Pan the graph</td></tr></table>");
  return html;
}

QString reading_guide_html() {
  return QObject::tr(
      "<h3>How to read this picture</h3>"
      "<p><b>A box is an operation</b> (its op, node name and output type; weights it reads are listed inside). "
      "Fill colours give the op class: elementwise, reduction, contraction (matmul, convolution), layout, opaque. "
      "Round boxes are the graph's inputs; a thick border marks a graph output.</p>"
      "<p><b>A coloured frame is a fused kernel</b>: every box inside runs in one kernel. Its title names the "
      "group after its first node (<code>g:q_mm</code>) and how it was fused: <i>vertical</i> (a chain of "
      "elementwise ops), <i>epilogue</i> (work after a matmul or a reduction), <i>prologue</i> (a producer merged "
      "into a reduction), <i>horizontal</i> (siblings reading one input).</p>"
      "<p><b>An edge is a tensor.</b> A dark edge with a size (<code>24 MiB</code>) is written to HBM by one "
      "kernel and read back by the next: that traffic is what fusion removes. A thin grey edge labelled "
      "<i>on chip</i> stays in registers or shared memory inside a kernel and is never written. A red dashed edge "
      "with a cross is a fusion the engine refused; hover over it for the reason in a sentence.</p>"
      "<p><b>Numbers.</b> The grey line in a box or frame is the cost model's prediction (bytes moved, time). "
      "After a run on a GPU (or an opened run report) the measured time and bytes take its place in green, or in "
      "red with ⚠ where they differ from the prediction by more than 10%.</p>"
      "<p><b>Views.</b> <i>Before</i> shows the unfused graph: one kernel per op, with the unfused plan's own "
      "predictions and measurements. <i>After</i> shows the fused groups, <i>Kernels</i> one box per kernel, and "
      "<i>Before | After</i> both side by side, with the same zoom and selection.</p>"
      "<p><b>Why not fused?</b> Select two nodes (Ctrl+click) or one edge and press Ctrl+W: the answer names the "
      "two nodes and their kernels, and for nodes joined through other kernels the path and the edge where the "
      "engine says no, highlighted on the graph.</p>");
}

HelpDialog::HelpDialog(const QString& title, const QString& html, QWidget* parent) : QDialog(parent), html_(html) {
  setWindowTitle(title);
  auto* text = new QTextBrowser(this);
  text->setHtml(html);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(text);
  layout->addWidget(buttons);
  resize(560, 520);
}

}  // namespace fx::app
