#include "core/report/xml_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace fx {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') out += "\xEF\xBF\xBD";
        else out += c;
    }
  }
  return out;
}

std::string exact_number(double value) {
  if (!std::isfinite(value)) return "0";
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string format_time_us(double microseconds) {
  char buffer[32];
  if (std::fabs(microseconds) < 1000) std::snprintf(buffer, sizeof buffer, "%.3g us", microseconds);
  else std::snprintf(buffer, sizeof buffer, "%.3g ms", microseconds / 1000);
  return buffer;
}

}  // namespace fx
