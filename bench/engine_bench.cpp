// Analysis and auto-fuse of a generated GPT-style transformer (30 nodes per layer): the budget is
// 200 ms for 10,000 nodes on the 2-core CPU machine (Release build).
#include <benchmark/benchmark.h>

#include "core/cost/device_description.h"
#include "core/fusion/engine.h"
#include "core/generate/transformer.h"

namespace {

fx::Graph transformer(int layers) {
  fx::TransformerShape shape;
  shape.layers = layers;
  return fx::build_graph(fx::transformer_spec(shape)).value();
}

void BM_AutoFuseTransformer(benchmark::State& state) {
  const fx::Graph g = transformer(static_cast<int>(state.range(0)));
  int kernels = 0;
  for (auto _ : state) {
    fx::FusionEngine engine(g, fx::DeviceDescription::h200());
    engine.auto_fuse();
    kernels = engine.plan().kernel_count();
    benchmark::DoNotOptimize(kernels);
  }
  state.counters["nodes"] = g.num_nodes();
  state.counters["kernels"] = kernels;
}

void BM_CandidatesTransformer(benchmark::State& state) {
  const fx::Graph g = transformer(static_cast<int>(state.range(0)));
  const fx::FusionEngine engine(g, fx::DeviceDescription::h200());
  std::size_t count = 0;
  for (auto _ : state) {
    count = engine.candidates().size();
    benchmark::DoNotOptimize(count);
  }
  state.counters["nodes"] = g.num_nodes();
  state.counters["candidates"] = static_cast<double>(count);
}

// Loading a fused graph file: parse, rebuild the graph, check every group's legality, restore the plan.
void BM_LoadFusedTransformer(benchmark::State& state) {
  const fx::Graph g = transformer(static_cast<int>(state.range(0)));
  fx::FusionEngine engine(g, fx::DeviceDescription::h200());
  engine.auto_fuse();
  const std::string text = engine.save_fused_graph();
  int kernels = 0;
  for (auto _ : state) {
    auto loaded = fx::FusionEngine::load_fused_graph(text, fx::DeviceDescription::h200());
    kernels = loaded.ok() ? loaded->plan().kernel_count() : -1;
    benchmark::DoNotOptimize(kernels);
  }
  state.counters["nodes"] = g.num_nodes();
  state.counters["kernels"] = kernels;
}

// 333 layers x 30 nodes = 9,990 nodes (plus inputs); 83 layers about 2,500: the ratio shows near-linear growth.
BENCHMARK(BM_AutoFuseTransformer)->Arg(83)->Arg(333)->Unit(benchmark::kMillisecond);
// 3,300 layers = 99,000 nodes: the large-graph target (docs/gui.md), a few runs only.
BENCHMARK(BM_AutoFuseTransformer)->Arg(3300)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_CandidatesTransformer)->Arg(333)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoadFusedTransformer)->Arg(333)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
