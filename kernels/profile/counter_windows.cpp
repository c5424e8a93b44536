#include "kernels/profile/counter_windows.h"

#include <map>

namespace fx::gpu {

CounterWindows plan_counter_windows(std::span<const std::optional<std::string>> identities) {
  CounterWindows w;
  std::map<std::string, std::size_t> first;  // identity -> the step measured for it
  for (std::size_t s = 0; s < identities.size(); ++s) {
    const std::optional<std::string>& id = identities[s];
    auto found = id ? first.find(*id) : first.end();
    if (found == first.end()) {
      if (id) first.emplace(*id, s);
      w.source.push_back(s);
      w.window.push_back(w.measured.size());
      w.measured.push_back(s);
    } else {
      w.source.push_back(found->second);
      w.window.push_back(w.window[found->second]);
    }
  }
  std::vector<int> per_window(w.measured.size(), 0);
  for (std::size_t k : w.window) ++per_window[k];
  for (std::size_t k : w.window) w.sharing.push_back(per_window[k]);
  return w;
}

}  // namespace fx::gpu
