// libFuzzer target over the graph loader and validation: parse, validate, and for a valid graph its
// canonical save, reload and DOT export. Any crash, sanitizer report, uncaught exception or broken
// property (tests/fuzz/graph_properties.h) is a finding; scripts/fuzz.sh runs it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tests/fuzz/graph_properties.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto bad = fx::fuzz::check_graph_document(text)) {
    std::fprintf(stderr, "graph property violated: %s\n", bad->c_str());
    std::abort();
  }
  return 0;
}
