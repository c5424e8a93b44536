// Builds nlohmann's DOM through its SAX interface, which json::parse cannot do: it reports duplicate object
// keys (json::parse silently keeps the last) and skips the value of the top-level "metadata" key, which the
// format ignores, so a file of millions of empty objects there costs no memory.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/graph/diagnostic.h"

namespace fx {

// Parses `text` as json::parse does (throwing its parse_error / out_of_range on bad syntax); every duplicate
// key is appended to `duplicates` with its JSON pointer, the first occurrence kept.
nlohmann::json parse_json_dom(std::string_view text, Diagnostics& duplicates);

}  // namespace fx
