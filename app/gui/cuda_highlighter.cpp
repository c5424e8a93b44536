#include "app/gui/cuda_highlighter.h"

namespace fx::app {
namespace {
QTextCharFormat make_format(const QColor& color, bool bold = false) {
  QTextCharFormat f;
  f.setForeground(color);
  if (bold) f.setFontWeight(QFont::Bold);
  return f;
}
}  // namespace

CudaHighlighter::CudaHighlighter(QTextDocument* document) : QSyntaxHighlighter(document) {
  // Mid-saturation colours stay readable on both the light and the dark base colour.
  rules_.push_back({QRegularExpression(QStringLiteral(
                        R"(\b(if|else|for|while|return|const|constexpr|static|inline|extern|struct|template|typename|)"
                        R"(auto|unsigned|signed|void|__global__|__device__|__host__|__shared__|__restrict__|)"
                        R"(__launch_bounds__|__syncthreads|__forceinline__)\b)")),
                    make_format(QColor("#7b4dc2"), true)});
  rules_.push_back({QRegularExpression(QStringLiteral(
                        R"(\b(float|double|int|long|bool|char|size_t|int64_t|int32_t|uint32_t|half|__half|)"
                        R"(__nv_bfloat16|float2|float4)\b)")),
                    make_format(QColor("#1f7a8c"), true)});
  rules_.push_back({QRegularExpression(QStringLiteral(R"(\b(threadIdx|blockIdx|blockDim|gridDim)\b)")),
                    make_format(QColor("#c0661e"))});
  rules_.push_back({QRegularExpression(QStringLiteral(R"(\b[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?[fFuUlL]*\b)")),
                    make_format(QColor("#b8860b"))});
  rules_.push_back({QRegularExpression(QStringLiteral(R"("[^"]*")")), make_format(QColor("#2e8b57"))});
  rules_.push_back({QRegularExpression(QStringLiteral(R"(^\s*#\s*\w+)")), make_format(QColor("#a0522d"))});
  comment_ = make_format(QColor("#808080"));
}

void CudaHighlighter::highlightBlock(const QString& text) {
  for (const Rule& rule : rules_) {
    auto it = rule.pattern.globalMatch(text);
    while (it.hasNext()) {
      const auto m = it.next();
      setFormat(static_cast<int>(m.capturedStart()), static_cast<int>(m.capturedLength()), rule.format);
    }
  }
  // Block comments may span lines: state 1 means "inside /* */".
  int start = previousBlockState() == 1 ? 0 : static_cast<int>(text.indexOf(QStringLiteral("/*")));
  setCurrentBlockState(0);
  while (start >= 0) {
    const int end = static_cast<int>(text.indexOf(QStringLiteral("*/"), start));
    const int length = end < 0 ? static_cast<int>(text.length()) - start : end - start + 2;
    if (end < 0) setCurrentBlockState(1);
    setFormat(start, length, comment_);
    start = end < 0 ? -1 : static_cast<int>(text.indexOf(QStringLiteral("/*"), start + length));
  }
  const int line = static_cast<int>(text.indexOf(QStringLiteral("//")));
  if (line >= 0 && format(line) != comment_) setFormat(line, static_cast<int>(text.length()) - line, comment_);
}

}  // namespace fx::app
