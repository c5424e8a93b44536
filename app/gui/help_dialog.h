// The Help menu's pages: the keyboard shortcuts (read from the window's own actions, so the list cannot drift
// from what the keys do) and "How to read this picture" (what boxes, colours, edges and numbers mean).
#pragma once

#include <QDialog>
#include <QString>

class QWidget;

namespace fx::app {

// "Ctrl+W<tab>Why not fused?" for every action of `window` that has a shortcut, sorted by menu text.
QString shortcuts_html(const QWidget* window);
// The legend of the graph view, in short paragraphs.
QString reading_guide_html();

// A read-only page with a title; closes with Esc.
class HelpDialog : public QDialog {
  Q_OBJECT
 public:
  HelpDialog(const QString& title, const QString& html, QWidget* parent = nullptr);
  QString html() const { return html_; }

 private:
  QString html_;
};

}  // namespace fx::app
