#include "kernels/tuning/tuning_cache.h"

#include <cstdlib>
#include <ctime>

#include "core/graph/content_hash.h"
#include "core/graph/diagnostic.h"
#include "core/graph/graph_io.h"

namespace fx::gpu {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "fusion-explorer/tuning";
// 2: the tuning passes keep every choice in one form (timed_choice.h: index, ms, detail).
constexpr int kVersion = 2;
// An entry is a few hundred bytes; anything far larger is not one of ours.
constexpr std::size_t kMaxEntryBytes = 1 << 20;

bool plain_kind(const std::string& kind) {
  if (kind.empty()) return false;
  for (char c : kind)
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  return true;
}

std::string first_message(const Diagnostics& errors) { return errors.empty() ? "" : errors.front().to_string(); }

}  // namespace

nlohmann::json TuningEnvironment::to_json() const {
  return {{"device", device},
          {"uuid", uuid},
          {"compute_capability", compute_capability},
          {"memory_bytes", memory_bytes},
          {"software", software}};
}

fs::path TuningCache::default_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "fusion-explorer" / "tuning";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache" / "fusion-explorer" / "tuning";
  return {};
}

TuningCache::TuningCache(fs::path dir, TuningEnvironment environment) : environment_(environment.to_json()) {
  // One folder per environment: a new driver or library starts an empty folder instead of rewriting entries.
  if (!dir.empty()) dir_ = std::move(dir) / hex64(fnv1a64(environment_.dump()));
}

fs::path TuningCache::entry_path(const TuningKey& key) const {
  return dir_ / (key.kind + "-" + hex64(fnv1a64(key.problem)) + ".json");
}

std::optional<TuningEntry> TuningCache::find(const TuningKey& key) {
  if (!enabled() || !plain_kind(key.kind)) return std::nullopt;
  const fs::path path = entry_path(key);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  auto text = read_text_file(path, kMaxEntryBytes);
  if (!text) {
    warnings_.push_back("tuning cache: " + path.string() + ": " + first_message(text.errors()) + " (ignored)");
    return std::nullopt;
  }
  const nlohmann::json entry = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  // Fields compared as JSON values: a field of another type is a difference, never an exception.
  auto field = [&entry](const char* name) {
    static const nlohmann::json missing;
    if (!entry.is_object()) return missing;
    auto it = entry.find(name);
    return it == entry.end() ? missing : *it;
  };
  if (field("format") != kFormat || !field("choice").is_object() || !field("tuned_at").is_string() ||
      !field("problem").is_string() || !field("environment").is_object()) {
    warnings_.push_back("tuning cache: " + path.string() + " is damaged (not a tuning entry); ignored, tuned again");
    return std::nullopt;
  }
  // Another version, or a hash collision of two environments or problems: not this entry, tuned again.
  if (field("version") != kVersion || field("environment") != environment_ || field("kind") != key.kind ||
      field("problem") != key.problem) {
    return std::nullopt;
  }
  return TuningEntry{entry["choice"], entry["tuned_at"].get<std::string>()};
}

bool TuningCache::store(const TuningKey& key, const nlohmann::json& choice) {
  if (!enabled() || write_failed_ || !plain_kind(key.kind)) return false;
  const nlohmann::json entry = {{"format", kFormat},         {"version", kVersion},        {"environment", environment_},
                                {"kind", key.kind},          {"problem", key.problem},     {"choice", choice},
                                {"tuned_at", utc_timestamp()}};
  std::error_code ec;
  fs::create_directories(dir_, ec);
  std::string why = ec ? ec.message() : std::string();
  if (!ec) {
    auto written = write_text_file_atomic(entry_path(key), entry.dump(1) + "\n");
    if (!written) why = first_message(written.errors());
  }
  if (why.empty()) return true;
  // Said once: every later store would fail the same way.
  write_failed_ = true;
  warnings_.push_back("tuning cache: cannot write " + dir_.string() + " (" + why +
                      "); this run's choices are not cached");
  return false;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

}  // namespace fx::gpu
