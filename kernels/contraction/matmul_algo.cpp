// What a cuBLASLt algorithm configuration is, apart from how one is chosen or launched: its identity (AlgoKey,
// for telling the search's candidates apart), its text in the reports (describe_algo) and its JSON form in the
// tuning cache. Internal to Matmul (matmul_plan.h).
#include <iterator>
#include <string>

#include "kernels/contraction/matmul_plan.h"

namespace fx::gpu::matmul_detail {
namespace {

// cuBLASLt's tile, stage and cluster-shape ids as its enums name them (cublasLt.h), for the reports; ids past
// the tables print as numbers.
constexpr const char* kTileNames[] = {
    "undefined", "8x8",     "8x16",    "16x8",    "8x32",    "16x16",   "32x8",    "8x64",    "16x32",
    "32x16",     "64x8",    "32x32",   "32x64",   "64x32",   "32x128",  "64x64",   "128x32",  "64x128",
    "128x64",    "64x256",  "128x128", "256x64",  "64x512",  "128x256", "256x128", "512x64",  "64x96",
    "96x64",     "96x128",  "128x160", "160x128", "192x128", "128x192", "128x96",  "32x256",  "256x32"};
static_assert(CUBLASLT_MATMUL_TILE_64x256 == 19 && CUBLASLT_MATMUL_TILE_256x32 == 35 &&
              std::size(kTileNames) == CUBLASLT_MATMUL_TILE_256x32 + 1);
constexpr const char* kStageNames[] = {
    "undefined", "16x1",  "16x2",  "16x3",   "16x4",   "16x5",   "16x6",   "32x1",    "32x2",    "32x3",
    "32x4",      "32x5",  "32x6",  "64x1",   "64x2",   "64x3",   "64x4",   "64x5",    "64x6",    "128x1",
    "128x2",     "128x3", "128x4", "128x5",  "128x6",  "32x10",  "8x4",    "16x10",   "8x5",     "id 29",
    "id 30",     "8x3",   "8xAUTO", "16xAUTO", "32xAUTO", "64xAUTO", "128xAUTO", "256xAUTO", "768xAUTO"};
static_assert(CUBLASLT_MATMUL_STAGES_8x3 == 31 && CUBLASLT_MATMUL_STAGES_768xAUTO == 38 &&
              std::size(kStageNames) == CUBLASLT_MATMUL_STAGES_END);
constexpr const char* kClusterNames[] = {
    "auto",  "id 1",  "1x1x1", "2x1x1", "4x1x1", "1x2x1", "2x2x1", "4x2x1",  "1x4x1",  "2x4x1",  "4x4x1",
    "8x1x1", "1x8x1", "8x2x1", "2x8x1", "16x1x1", "1x16x1", "3x1x1", "5x1x1", "6x1x1", "7x1x1", "9x1x1"};
static_assert(CUBLASLT_CLUSTER_SHAPE_1x1x1 == 2 && CUBLASLT_CLUSTER_SHAPE_9x1x1 == 21 &&
              std::size(kClusterNames) == CUBLASLT_CLUSTER_SHAPE_9x1x1 + 1);

template <class T>
T algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  std::size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof value, &written);
  return value;
}

}  // namespace

AlgoKey::AlgoKey(const cublasLtMatmulAlgo_t& a)
    : id(algo_config<std::int32_t>(a, CUBLASLT_ALGO_CONFIG_ID)),
      splitk(algo_config<std::int32_t>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)),
      tile(algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_TILE_ID)),
      stages(algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID)),
      reduction(algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME)),
      swizzle(algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)),
      custom(algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION)),
      inner(algo_config<std::uint16_t>(a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID)),
      cluster(algo_config<std::uint16_t>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)) {}

// "algorithm 43, tile 128x64, stages 32xAUTO, cluster auto" (and the split-K, swizzle and option when set).
std::string describe_algo(const cublasLtMatmulAlgo_t& algo) {
  const AlgoKey k(algo);
  auto name = [](const auto& names, std::uint32_t i) {
    return i < std::size(names) ? std::string(names[i]) : "id " + std::to_string(i);
  };
  std::string text = "algorithm " + std::to_string(k.id) + ", tile " + name(kTileNames, k.tile) + ", stages " +
                     name(kStageNames, k.stages) + ", cluster " + name(kClusterNames, k.cluster);
  if (k.splitk > 1) text += ", split-K " + std::to_string(k.splitk);
  if (k.swizzle) text += ", swizzle " + std::to_string(k.swizzle);
  if (k.custom) text += ", option " + std::to_string(k.custom);
  return text;
}

nlohmann::json algo_json(const cublasLtMatmulAlgo_t& algo) {
  nlohmann::json words = nlohmann::json::array();
  for (std::uint64_t word : algo.data) words.push_back(word);
  return words;
}

std::optional<cublasLtMatmulAlgo_t> algo_from_json(const nlohmann::json& words) {
  cublasLtMatmulAlgo_t algo{};
  if (!words.is_array() || words.size() != std::size(algo.data)) return std::nullopt;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (!words[i].is_number_unsigned()) return std::nullopt;
    algo.data[i] = words[i].get<std::uint64_t>();
  }
  return algo;
}

}  // namespace fx::gpu::matmul_detail
