// Which of a run's two plans: the unfused one (one kernel per node, as eager PyTorch runs) or the fused one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fx::gpu {

enum class PlanId : std::uint8_t { unfused = 0, fused = 1 };

// Both plans, in the order a run verifies and times them.
inline constexpr std::array<PlanId, 2> kPlanIds = {PlanId::unfused, PlanId::fused};

constexpr std::size_t plan_index(PlanId p) { return static_cast<std::size_t>(p); }
constexpr std::string_view plan_name(PlanId p) { return p == PlanId::unfused ? "unfused" : "fused"; }

}  // namespace fx::gpu
