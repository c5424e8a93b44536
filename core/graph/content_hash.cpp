#include "core/graph/content_hash.h"

#include <cstdio>

#include "core/graph/graph_json.h"

namespace fx {

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed) {
  std::uint64_t h = seed;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(std::uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

std::string graph_content_hash(const Graph& graph) {
  nlohmann::ordered_json j = graph_to_json(graph);
  j.erase("name");
  j.erase("description");
  return hex64(fnv1a64(j.dump()));
}

}  // namespace fx
