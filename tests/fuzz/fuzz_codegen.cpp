// libFuzzer target: tests/fuzz/codegen_properties.h says what it checks; scripts/fuzz.sh --target codegen runs it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tests/fuzz/codegen_properties.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto bad = fx::fuzz::check_codegen_document(text)) {
    std::fprintf(stderr, "codegen property violated: %s\n", bad->c_str());
    std::abort();
  }
  return 0;
}
