#include "core/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/report/xml_text.h"

namespace fx {
namespace {

constexpr const char* kSvgOpen = "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" font-family=\"sans-serif\"";
constexpr double kPlotLeft = 70, kPlotTop = 20, kPlotWidth = 520, kPlotHeight = 300;

std::string px(double v) {
  std::ostringstream out;
  out.precision(1);
  out << std::fixed << v;
  return out.str();
}

std::string si(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  std::ostringstream out;
  out.precision(3);
  out << v << ' ' << prefixes[i] << unit;
  return out.str();
}

// Log scale from [lo, hi] (powers of ten) onto [0, length].
struct LogAxis {
  double lo, hi, length;
  double at(double v) const { return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * length; }
};

LogAxis decade_axis(double lo, double hi, double length) {
  lo = std::pow(10.0, std::floor(std::log10(lo)));
  hi = std::pow(10.0, std::ceil(std::log10(hi)));
  if (hi <= lo) hi = lo * 10;
  return {lo, hi, length};
}

void roofline_axes(std::ostringstream& out, const LogAxis& x, const LogAxis& y) {
  out << "<rect x=\"" << px(kPlotLeft) << "\" y=\"" << px(kPlotTop) << "\" width=\"" << px(kPlotWidth)
      << "\" height=\"" << px(kPlotHeight) << "\" fill=\"#ffffff\" stroke=\"#444444\"/>\n";
  for (double v = x.lo; v <= x.hi * 1.0001; v *= 10) {
    const double sx = kPlotLeft + x.at(v);
    out << "<line x1=\"" << px(sx) << "\" y1=\"" << px(kPlotTop) << "\" x2=\"" << px(sx) << "\" y2=\""
        << px(kPlotTop + kPlotHeight) << "\" stroke=\"#dddddd\"/><text x=\"" << px(sx) << "\" y=\""
        << px(kPlotTop + kPlotHeight + 16) << "\" font-size=\"11\" text-anchor=\"middle\">" << xml_escape(si(v, ""))
        << "</text>\n";
  }
  for (double v = y.lo; v <= y.hi * 1.0001; v *= 10) {
    const double sy = kPlotTop + kPlotHeight - y.at(v);
    out << "<line x1=\"" << px(kPlotLeft) << "\" y1=\"" << px(sy) << "\" x2=\"" << px(kPlotLeft + kPlotWidth)
        << "\" y2=\"" << px(sy) << "\" stroke=\"#dddddd\"/><text x=\"" << px(kPlotLeft - 6) << "\" y=\"" << px(sy + 4)
        << "\" font-size=\"11\" text-anchor=\"end\">" << xml_escape(si(v, "")) << "</text>\n";
  }
  out << "<text x=\"" << px(kPlotLeft + kPlotWidth / 2) << "\" y=\"" << px(kPlotTop + kPlotHeight + 34)
      << "\" font-size=\"12\" text-anchor=\"middle\">arithmetic intensity (FLOP per byte moved)</text>\n"
      << "<text x=\"14\" y=\"" << px(kPlotTop + kPlotHeight / 2) << "\" font-size=\"12\" text-anchor=\"middle\" "
      << "transform=\"rotate(-90 14 " << px(kPlotTop + kPlotHeight / 2) << ")\">FLOP/s</text>\n";
}

}  // namespace

std::string roofline_svg(const Roof& roof, const std::vector<RooflinePoint>& points) {
  std::vector<RooflinePoint> shown;
  for (const RooflinePoint& p : points)
    if (p.intensity > 0 && p.flops_per_s > 0 && std::isfinite(p.intensity) && std::isfinite(p.flops_per_s))
      shown.push_back(p);
  const double ridge = roof.peak_flops / roof.bandwidth;
  double x_lo = ridge / 100, x_hi = ridge * 10, y_hi = roof.peak_flops * 2, y_lo = roof.peak_flops / 1e5;
  for (const RooflinePoint& p : shown) {
    x_lo = std::min(x_lo, p.intensity);
    x_hi = std::max(x_hi, p.intensity);
    y_lo = std::min(y_lo, p.flops_per_s);
  }
  const LogAxis x = decade_axis(x_lo, x_hi, kPlotWidth), y = decade_axis(y_lo, y_hi, kPlotHeight);
  std::ostringstream out;
  out << kSvgOpen << " width=\"620\" height=\"380\" viewBox=\"0 0 620 380\"><title>roofline: "
      << xml_escape(roof.label) << "</title>\n";
  roofline_axes(out, x, y);
  // The roof: bandwidth-limited up to the ridge point, then flat at the compute peak.
  auto sx = [&](double v) { return kPlotLeft + x.at(v); };
  auto sy = [&](double v) { return kPlotTop + kPlotHeight - y.at(v); };
  const double start = std::max(x.lo, y.lo / roof.bandwidth);
  out << "<polyline fill=\"none\" stroke=\"#b22222\" stroke-width=\"2\" points=\"" << px(sx(start)) << ","
      << px(sy(start * roof.bandwidth)) << " " << px(sx(ridge)) << "," << px(sy(roof.peak_flops)) << " "
      << px(sx(x.hi)) << "," << px(sy(roof.peak_flops)) << "\"/>\n"
      << "<text x=\"" << px(kPlotLeft + 8) << "\" y=\"" << px(kPlotTop + 14) << "\" font-size=\"12\" fill=\"#b22222\">"
      << xml_escape(roof.label) << "</text>\n";
  for (const RooflinePoint& p : shown) {
    const std::string title = p.label + (p.fused ? " (fused plan)" : " (unfused plan)") +
                              (p.measured ? ", measured" : ", predicted") + ": " + si(p.intensity, "FLOP/B") + ", " +
                              si(p.flops_per_s, "FLOP/s");
    const char* fill = p.fused ? (p.measured ? "#e6550d" : "#1f77b4") : "#ffffff";
    const char* stroke = p.measured ? "#e6550d" : "#1f77b4";
    if (p.measured) {
      out << "<rect x=\"" << px(sx(p.intensity) - 4.5) << "\" y=\"" << px(sy(p.flops_per_s) - 4.5)
          << "\" width=\"9\" height=\"9\"";
    } else {
      out << "<circle cx=\"" << px(sx(p.intensity)) << "\" cy=\"" << px(sy(p.flops_per_s)) << "\" r=\"5\"";
    }
    out << " fill=\"" << fill << "\" stroke=\"" << stroke << "\" stroke-width=\"1.5\"><title>" << xml_escape(title)
        << "</title></" << (p.measured ? "rect" : "circle") << ">\n";
  }
  out << "</svg>";
  return out.str();
}

std::string time_bars_svg(const std::vector<TimeBar>& bars) {
  double most = 0;
  for (const TimeBar& b : bars) most = std::max({most, b.predicted_us, b.measured_us.value_or(0)});
  if (most <= 0) most = 1;
  const double label_width = 90, bar_width = 380, row = 44;
  const double height = 30 + row * static_cast<double>(bars.size());
  std::ostringstream out;
  out << kSvgOpen << " width=\"620\" height=\"" << px(height) << "\" viewBox=\"0 0 620 " << px(height)
      << "\"><title>plan times, predicted and measured</title>\n"
      << "<rect x=\"" << px(label_width) << "\" y=\"4\" width=\"12\" height=\"10\" fill=\"#9ecae1\"/>"
      << "<text x=\"" << px(label_width + 16) << "\" y=\"13\" font-size=\"11\">predicted</text>"
      << "<rect x=\"" << px(label_width + 90) << "\" y=\"4\" width=\"12\" height=\"10\" fill=\"#08519c\"/>"
      << "<text x=\"" << px(label_width + 106) << "\" y=\"13\" font-size=\"11\">measured</text>\n";
  double top = 24;
  for (const TimeBar& b : bars) {
    out << "<text x=\"" << px(label_width - 6) << "\" y=\"" << px(top + 22) << "\" font-size=\"12\" "
        << "text-anchor=\"end\">" << xml_escape(b.label) << "</text>\n";
    auto bar = [&](double us, double y, const char* colour) {
      const double w = std::max(1.0, us / most * bar_width);
      out << "<rect x=\"" << px(label_width) << "\" y=\"" << px(y) << "\" width=\"" << px(w)
          << "\" height=\"16\" fill=\"" << colour << "\"/><text x=\"" << px(label_width + w + 4) << "\" y=\""
          << px(y + 12) << "\" font-size=\"11\">" << xml_escape(format_time_us(us)) << "</text>\n";
    };
    bar(b.predicted_us, top + 2, "#9ecae1");
    if (b.measured_us) bar(*b.measured_us, top + 20, "#08519c");
    top += row;
  }
  out << "</svg>";
  return out.str();
}

}  // namespace fx
