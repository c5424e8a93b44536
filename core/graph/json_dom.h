// Builds nlohmann's DOM through its SAX interface, which json::parse cannot do: it reports duplicate object
// keys (json::parse silently keeps the last) and integers beyond int64 (json::parse keeps them as unsigned
// or float), and skips the value of the top-level "metadata" key, which the format ignores, so a file of
// millions of empty objects there costs no memory.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/graph/diagnostic.h"

namespace fx {

// Parses `text` as json::parse does (throwing its parse_error / out_of_range on bad syntax); every duplicate
// key (the first occurrence kept) and every integer outside int64's range (json::parse would keep it as an
// unsigned or a float) is appended to `problems` with its JSON pointer.
nlohmann::json parse_json_dom(std::string_view text, Diagnostics& problems);

}  // namespace fx
