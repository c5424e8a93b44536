// Text and attribute values escaped for XML, so the session report parses as XHTML whatever names a graph holds.
#pragma once

#include <string>
#include <string_view>

namespace fx {

// & < > " ' as entities; control characters other than tab, newline and return (not allowed in XML 1.0)
// become U+FFFD.
std::string xml_escape(std::string_view text);

// A number for an attribute or a label: shortest text that reads back to the same double ("2147483648", "0.25").
std::string exact_number(double value);

// "12.3 us", "1.46 ms": microseconds below a millisecond, else milliseconds, three significant figures.
std::string format_time_us(double microseconds);

}  // namespace fx
