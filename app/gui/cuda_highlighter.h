// Simple CUDA C++ highlighting for the read-only source view: keywords, types, numbers, strings, comments.
#pragma once

#include <QRegularExpression>
#include <QSyntaxHighlighter>
#include <vector>

namespace fx::app {

class CudaHighlighter : public QSyntaxHighlighter {
 public:
  explicit CudaHighlighter(QTextDocument* document);

 protected:
  void highlightBlock(const QString& text) override;

 private:
  struct Rule {
    QRegularExpression pattern;
    QTextCharFormat format;
  };
  std::vector<Rule> rules_;
  QTextCharFormat comment_;
};

}  // namespace fx::app
