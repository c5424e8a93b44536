// The error type of kernels/: safe to include anywhere (no vendor headers).
#pragma once

#include <stdexcept>
#include <string>

namespace fx::gpu {

class GpuError : public std::runtime_error {
 public:
  GpuError(std::string library, long long code, std::string code_name, std::string call, std::string file, int line,
           const std::string& what)
      : std::runtime_error(what),
        library_(std::move(library)),
        code_(code),
        code_name_(std::move(code_name)),
        call_(std::move(call)),
        file_(std::move(file)),
        line_(line) {}

  const std::string& library() const { return library_; }
  long long code() const { return code_; }
  const std::string& code_name() const { return code_name_; }
  const std::string& call() const { return call_; }
  const std::string& file() const { return file_; }
  int line() const { return line_; }

 private:
  std::string library_;
  long long code_;
  std::string code_name_;
  std::string call_;
  std::string file_;
  int line_;
};

// Thrown when no usable CUDA device exists (no driver, or no GPU): the CLI maps it to exit code 3.
class NoDeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fx::gpu
