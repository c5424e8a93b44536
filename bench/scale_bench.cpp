// The shapes the red-team review found quadratic, at the sizes it reported (1x) and ten times those (10x):
// a group's `recomputed` list of one repeated name, code generation for a concat of many operands, and
// auto-fuse of one input read by many nodes. Near-linear means the 10x row takes about ten times the 1x row
// (docs/reliability.md has the table and how to run it).
#include <benchmark/benchmark.h>

#include <string>

#include "core/cost/device_description.h"
#include "core/fusion/engine.h"
#include "core/graph/graph_io.h"
#include "kernels/codegen/codegen.h"

namespace {

std::string repeated_recomputed(int entries) {
  std::string names;
  names.reserve(static_cast<std::size_t>(entries) * 4);
  for (int i = 0; i < entries; ++i) names += i ? ",\"e\"" : "\"e\"";
  return R"({"format": "fusion-explorer/graph", "version": 1, "name": "r",
    "inputs": [{"name": "x", "shape": [64], "dtype": "f32"}],
    "nodes": [{"name": "e", "op": "exp", "inputs": ["x"]}, {"name": "y", "op": "relu", "inputs": ["e"]}],
    "outputs": ["y"], "fusion": {"groups": [{"nodes": ["e"]}, {"nodes": ["y"], "recomputed": [)" + names + "]}]}}";
}

// One node reading `operands` inputs (a concat), or `operands` nodes reading one input (a fan-out).
fx::Graph wide(int operands, bool fan_out) {
  fx::GraphSpec spec;
  spec.name = fan_out ? "fan_out" : "concat";
  if (fan_out) {
    spec.inputs.push_back({"x", {{1024}, fx::DType::f32}, fx::Role::activation});
    for (int i = 0; i < operands; ++i) {
      fx::NodeSpec n;
      n.name = "r" + std::to_string(i);
      n.op = "exp";
      n.inputs = {std::string("x")};
      spec.outputs.push_back(n.name);
      spec.nodes.push_back(std::move(n));
    }
  } else {
    fx::NodeSpec c;
    c.name = "c";
    c.op = "concat";
    c.attrs.set("axis", std::int64_t{1});
    for (int i = 0; i < operands; ++i) {
      spec.inputs.push_back({"x" + std::to_string(i), {{4, 1}, fx::DType::f32}, fx::Role::activation});
      c.inputs.emplace_back(spec.inputs.back().name);
    }
    spec.nodes.push_back(std::move(c));
    spec.outputs = {"c"};
  }
  return fx::build_graph(spec).value();
}

void BM_LoadRepeatedRecomputed(benchmark::State& state) {
  const std::string text = repeated_recomputed(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto e = fx::FusionEngine::load_fused_graph(text, fx::DeviceDescription::h100_sxm());
    benchmark::DoNotOptimize(e.ok());
  }
  state.counters["entries"] = static_cast<double>(state.range(0));
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
}

void BM_CodegenConcat(benchmark::State& state) {
  const fx::Graph g = wide(static_cast<int>(state.range(0)), false);
  std::size_t bytes = 0;
  for (auto _ : state) {
    const fx::gpu::GroupCode code = fx::gpu::generate_group(g, std::vector<fx::NodeId>{0}, "fx_k");
    bytes = code.kernels.at(0).source.size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["operands"] = static_cast<double>(state.range(0));
  state.counters["source_MB"] = static_cast<double>(bytes) / 1e6;
}

void BM_AutoFuseFanOut(benchmark::State& state) {
  const fx::Graph g = wide(static_cast<int>(state.range(0)), true);
  int kernels = 0;
  for (auto _ : state) {
    fx::FusionEngine engine(g, fx::DeviceDescription::h100_sxm());
    engine.auto_fuse();
    kernels = engine.plan().kernel_count();
    benchmark::DoNotOptimize(kernels);
  }
  state.counters["readers"] = static_cast<double>(state.range(0));
  state.counters["kernels"] = kernels;
}

}  // namespace

BENCHMARK(BM_LoadRepeatedRecomputed)->Arg(200'000)->Arg(2'000'000)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_CodegenConcat)->Arg(20'000)->Arg(200'000)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_AutoFuseFanOut)->Arg(32'000)->Arg(320'000)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_MAIN();
