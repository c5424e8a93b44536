#include "kernels/tuning/timed_choice.h"

#include <algorithm>
#include <optional>

namespace fx::gpu {
namespace {

// The kept choice, if its JSON has the form to_json writes and fits n candidates.
std::optional<TimedChoice> parse_kept(const TuningEntry& entry, std::size_t n) {
  const nlohmann::json& c = entry.choice;
  const auto index = c.find("index");
  const auto ms = c.find("ms");
  const auto detail = c.find("detail");
  if (index == c.end() || !index->is_number_unsigned() || index->get<std::size_t>() >= n) return std::nullopt;
  if (ms == c.end() || !ms->is_array() || !(ms->empty() || ms->size() == n)) return std::nullopt;
  if (detail == c.end() || !detail->is_object()) return std::nullopt;
  TimedChoice kept{index->get<std::size_t>(), {}, *detail, entry.tuned_at};
  for (const nlohmann::json& v : *ms) {
    if (!v.is_number()) return std::nullopt;
    kept.ms.push_back(v.get<double>());
  }
  return kept;
}

}  // namespace

std::size_t fastest(std::span<const double> ms) {
  return ms.empty() ? 0 : static_cast<std::size_t>(std::min_element(ms.begin(), ms.end()) - ms.begin());
}

nlohmann::json to_json(const TimedChoice& c) {
  // A detail left null (a TimedChoice built with `{}`) is kept as the empty object it means.
  return {{"index", c.index}, {"ms", c.ms}, {"detail", c.detail.is_null() ? nlohmann::json::object() : c.detail}};
}

TimedChoice choose(const ChoiceSource& source, const TuningKey& key, std::size_t n,
                   const std::function<TimedChoice()>& time, const std::function<bool(const TimedChoice&)>& usable) {
  if (source.cache && !source.retune) {
    if (const auto entry = source.cache->find(key)) {
      const auto kept = parse_kept(*entry, n);
      if (kept && (!usable || usable(*kept))) return *kept;
      source.cache->warn(source.cache->entry_path(key).string() + " is not a " + key.kind + " choice among " +
                         std::to_string(n) + " candidates; timed again");
    }
  }
  TimedChoice timed = time();
  timed.tuned_at.clear();
  if (source.cache) source.cache->store(key, to_json(timed));
  return timed;
}

}  // namespace fx::gpu
