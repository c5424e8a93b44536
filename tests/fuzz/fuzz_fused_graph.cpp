// libFuzzer target over fused graph files: the graph loader, the "fusion" section (groups, decisions), the
// engine's candidates and auto-fuse, and the plan's save/load round trip (tests/fuzz/fused_graph_properties.h).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tests/fuzz/fused_graph_properties.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto bad = fx::fuzz::check_fused_document(text)) {
    std::fprintf(stderr, "fused-graph property violated: %s\n", bad->c_str());
    std::abort();
  }
  return 0;
}
