// libFuzzer target: tests/fuzz/plan_properties.h says what it checks; scripts/fuzz.sh --target plan runs it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tests/fuzz/plan_properties.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto bad = fx::fuzz::check_plan_document(text)) {
    std::fprintf(stderr, "plan property violated: %s\n", bad->c_str());
    std::abort();
  }
  return 0;
}
