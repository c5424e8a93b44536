// Errors reported as values: what went wrong and where (a JSON pointer, and line:column for syntax errors).
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace fx {

struct Diagnostic {
  std::string pointer;  // JSON pointer of the offending value, e.g. "/nodes/3/inputs/1"; "" for the document
  std::string message;
  int line = 0;  // 1-based, 0 when unknown
  int column = 0;

  std::string to_string() const;
};

using Diagnostics = std::vector<Diagnostic>;

std::string format_diagnostics(const Diagnostics& diagnostics, const std::string& file = {});

// Appended when a stage stopped before later checks could run, so a list of errors never reads as complete
// when it is not: "more problems may follow: <what was not checked> is checked once these are fixed".
inline Diagnostics with_more_may_follow(Diagnostics errors, const std::string& not_checked) {
  errors.push_back({"", "more problems may follow: " + not_checked + " once the errors above are fixed"});
  return errors;
}

// An object key as one JSON pointer token: '~' becomes "~0" and '/' becomes "~1" (RFC 6901).
std::string pointer_token(const std::string& key);

// A value or the diagnostics that explain why there is none (std::expected arrives with C++23).
template <typename T>
class Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(Diagnostics errors) : state_(std::move(errors)) {}  // NOLINT(google-explicit-constructor)
  Expected(Diagnostic error) : state_(Diagnostics{std::move(error)}) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Diagnostics& errors() const { return std::get<1>(state_); }

 private:
  std::variant<T, Diagnostics> state_;
};

}  // namespace fx
