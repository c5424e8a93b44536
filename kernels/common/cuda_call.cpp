#include "kernels/common/cuda_call.h"

#include <filesystem>
#include <sstream>

namespace fx::gpu::detail {

void throw_call_error(const char* library, long long code, const char* code_name, std::string message,
                      const char* call, const char* file, int line) {
  std::ostringstream what;
  what << library << " error " << code << " (" << (code_name ? code_name : "?") << ")";
  if (!message.empty()) what << ": " << message;
  what << "\n  in " << call << "\n  at " << std::filesystem::path(file).filename().string() << ":" << line;
  throw GpuError(library, code, code_name ? code_name : "", call, file, line, what.str());
}

}  // namespace fx::gpu::detail
