#include "kernels/codegen/test_fault.h"

#include <cstdlib>
#include <stdexcept>

namespace fx::gpu::codegen {

std::string test_fault_target() {
  const char* value = std::getenv(kTestFaultVariable);
  return value ? value : "";
}

// Address 0x100 lies in the null page, which no CUDA allocation ever occupies; block 0's thread 0 alone stores,
// so there is one faulting access. No __trap() fallback: a trap could be reported before the store's fault and
// turn the realistic error (illegal address) into a launch failure. Should the store ever not fault, the GPU
// test sees a clean run where it expects exit code 4, and fails.
std::string with_test_fault(const std::string& source, const std::string& name) {
  const std::size_t at = source.find(" " + name + "(");
  const std::size_t body = at == std::string::npos ? at : source.find('{', at);
  if (body == std::string::npos) throw std::logic_error("with_test_fault: no kernel " + name + " in the source");
  const std::string fault =
      "\n  // FX_TEST_FAULT_KERNEL (test only): a store to an address no allocation has, to test the GPU-fault path.\n"
      "  if (blockIdx.x == 0 && threadIdx.x == 0) {\n"
      "    asm volatile(\"st.global.u32 [%0], %1;\" : : \"l\"(0x100ull), \"r\"(0xFA17u) : \"memory\");\n"
      "  }";
  return source.substr(0, body + 1) + fault + source.substr(body + 1);
}

std::optional<std::string> apply_test_fault(const std::vector<std::pair<std::string, GeneratedKernel*>>& kernels) {
  const std::string target = test_fault_target();
  if (target.empty()) return std::nullopt;
  std::string changed;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const auto& [group, kernel] = kernels[i];
    if (target == "first" ? i != 0 : group != target) continue;
    kernel->source = with_test_fault(kernel->source, kernel->name);
    changed += (changed.empty() ? "" : ", ") + kernel->name;
  }
  if (changed.empty()) {
    throw std::invalid_argument(std::string(kTestFaultVariable) + "=" + target +
                                " names no group with a generated kernel in the fused plan (a group id such as "
                                "g:mul, or 'first')");
  }
  return std::string(kTestFaultVariable) + "=" + target + " (test only): " + changed + " made to fault on purpose";
}

}  // namespace fx::gpu::codegen
