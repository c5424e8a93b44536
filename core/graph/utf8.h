// UTF-8 checks for text that reaches formats which demand it (JSON saves, DOT labels): graph files are
// UTF-8 by construction, but names from ONNX models and cut labels are not.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace fx {

// The byte offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or nullopt when the whole text is valid.
std::optional<std::size_t> invalid_utf8_offset(std::string_view text);

// The longest prefix of `text` of at most `max_bytes` bytes that ends on a character boundary.
std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes);

// Number of characters (code points) in valid UTF-8.
std::size_t utf8_length(std::string_view text);

}  // namespace fx
