// The C ABI of fusion_harness.h over fx::gpu::Executor: errors become a thread-local message, never an
// exception across the boundary.
#include "bench/harness/fusion_harness.h"

#include <cuda_runtime_api.h>

#include <cctype>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/plan_source.h"
#include "core/cost/device_description.h"
#include "kernels/common/cuda_call.h"
#include "kernels/common/gpu_error.h"
#include "kernels/executor/executor.h"
#include "kernels/nvrtc/nvrtc_compiler.h"

#define FX_HARNESS_API extern "C" __attribute__((visibility("default")))

struct fx_harness {
  fx::cli::LoadedPlans plans;
  std::unique_ptr<fx::gpu::Executor> executor;
  std::vector<fx::OutputCheck> checks;
  bool prepared = false;
  std::string description;  // fx_harness_describe's last answer
};

namespace {

thread_local std::string last_error;

// Runs f, turning any exception into last_error (prefixed with the call's name) and `failed`.
template <class F, class R>
R guarded(const char* call, R failed, F&& f) {
  last_error.clear();
  try {
    return f();
  } catch (const fx::gpu::CompileError& e) {
    last_error = std::string(call) + ": " + e.what() + "\n--- source ---\n" + e.source();
  } catch (const std::exception& e) {
    try {
      last_error = std::string(call) + ": " + e.what();
    } catch (...) {
      last_error.clear();  // no memory for the message: the failure still shows in the return value
    }
  } catch (...) {
    last_error = std::string(call) + ": an unknown exception";
  }
  while (!last_error.empty() && std::isspace(static_cast<unsigned char>(last_error.back()))) last_error.pop_back();
  return failed;
}

struct OpenOptions {
  std::optional<std::string> device;
  bool auto_fuse = false;
  fx::gpu::RunOptions run;
};

OpenOptions read_options(const char* text) {
  OpenOptions o;
  if (!text || !*text) return o;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(std::string("options are not JSON: ") + e.what());
  }
  if (!j.is_object()) throw std::invalid_argument("options must be a JSON object");
  static const std::set<std::string> strings = {"device"}, bools = {"auto", "cold_l2", "autotune"},
                                      numbers = {"warmup_ms", "repeat_ms", "rest_ms", "tuning_rest_ms"},
                                      counts = {"layout", "seed"};
  for (const auto& [key, value] : j.items()) {
    const bool ok = strings.count(key)  ? value.is_string()
                    : bools.count(key)  ? value.is_boolean()
                    : numbers.count(key) ? value.is_number()
                    : counts.count(key)  ? value.is_number_unsigned()
                                         : throw std::invalid_argument("unknown option '" + key + "'");
    if (!ok) throw std::invalid_argument("option '" + key + "' has the wrong type (" + value.dump() + ")");
    if (key == "device") o.device = value.get<std::string>();
    if (key == "auto") o.auto_fuse = value.get<bool>();
    if (key == "warmup_ms") o.run.timing.warmup_ms = value.get<double>();
    if (key == "repeat_ms") o.run.timing.repeat_ms = value.get<double>();
    if (key == "rest_ms") o.run.timing.rest_ms = value.get<double>();
    if (key == "tuning_rest_ms") o.run.timing.tuning_rest_ms = value.get<double>();
    if (key == "cold_l2") o.run.timing.cold_l2 = value.get<bool>();
    if (key == "autotune") o.run.autotune = value.get<bool>();
    if (key == "seed") o.run.seed = value.get<std::uint64_t>();
    if (key == "layout") {
      const auto k = value.get<std::uint64_t>();
      if (k < 1 || k > 64) throw std::invalid_argument("layout counts from 1 (to 64)");
      o.run.force_layout = static_cast<int>(k) - 1;
      o.run.autotune = false;
    }
  }
  for (double ms : {o.run.timing.warmup_ms, o.run.timing.repeat_ms, o.run.timing.rest_ms, o.run.timing.tuning_rest_ms}) {
    if (!(ms >= 0 && ms <= 60'000)) {
      throw std::invalid_argument("warmup_ms, repeat_ms, rest_ms and tuning_rest_ms take 0 to 60000 ms");
    }
  }
  return o;
}

nlohmann::ordered_json value_json(const fx::Graph& g, fx::ValueId v) {
  const fx::TensorType& t = g.value_type(v);
  return {{"name", g.value_name(v)}, {"dtype", std::string(fx::dtype_name(t.dtype))}, {"shape", t.shape},
          {"bytes", t.bytes()}};
}

fx_harness* open_harness(const char* graph_file, const char* options_json) {
  if (!graph_file) throw std::invalid_argument("no graph file");
  OpenOptions o = read_options(options_json);
  // The reference check needs the whole graph on the host; a harness checks against its own reference.
  o.run.reference = fx::gpu::RunOptions::Reference::off;
  o.run.timing.read_clocks = false;
  // The graph's errors come first, with or without a device: planning needs only the preset.
  std::optional<fx::gpu::NoDeviceError> no_device;
  std::string gpu_name;
  try {
    gpu_name = fx::gpu::query_device(0).name;
  } catch (const fx::gpu::NoDeviceError& e) {
    no_device = e;
  }
  auto device = fx::resolve_device(o.device.value_or(fx::cli::default_device_for(gpu_name)));
  if (!device) throw std::invalid_argument(fx::format_diagnostics(device.errors()));
  std::ostringstream diagnostics;
  auto plans = fx::cli::load_plans({graph_file, std::nullopt, o.auto_fuse, false}, *device, diagnostics);
  if (!plans) throw std::invalid_argument(diagnostics.str());
  if (no_device) throw *no_device;
  auto h = std::make_unique<fx_harness>();
  h->plans = std::move(*plans);
  h->executor = std::make_unique<fx::gpu::Executor>(h->plans.engine->graph(), h->plans.unfused, h->plans.fused,
                                                    o.run);
  return h.release();
}

void check_handle(const fx_harness* h) {
  if (!h) throw std::invalid_argument("a null handle");
}

// The C arrays of names and device pointers as a map; `what` ("input", "output") names them in the errors.
std::map<std::string, void*> named_pointers(int count, const char* const* names, void* const* pointers,
                                            const std::string& what) {
  if (count < 0 || (count > 0 && (!names || !pointers))) throw std::invalid_argument("no " + what + "s given");
  std::map<std::string, void*> out;
  for (int i = 0; i < count; ++i) {
    if (!names[i]) throw std::invalid_argument(what + " " + std::to_string(i) + " has no name");
    if (!out.emplace(names[i], pointers[i]).second) {
      throw std::invalid_argument(what + " '" + names[i] + "' given twice");
    }
  }
  return out;
}

}  // namespace

FX_HARNESS_API const char* fx_harness_last_error(void) { return last_error.c_str(); }

FX_HARNESS_API fx_harness* fx_harness_open(const char* graph_file, const char* options_json) {
  return guarded("fx_harness_open", static_cast<fx_harness*>(nullptr),
                 [&] { return open_harness(graph_file, options_json); });
}

FX_HARNESS_API int fx_harness_prepare(fx_harness* h, int count, const char* const* names,
                                      void* const* device_pointers) {
  return guarded("fx_harness_prepare", -1, [&] {
    check_handle(h);
    std::map<std::string, const void*> inputs;
    for (const auto& [name, ptr] : named_pointers(count, names, device_pointers, "input")) inputs.emplace(name, ptr);
    h->prepared = false;
    h->checks.clear();
    h->checks = h->executor->prepare_with_inputs(inputs);
    h->prepared = true;
    for (const auto& c : h->checks) {
      if (!c.passed) {
        char numbers[96];
        std::snprintf(numbers, sizeof numbers, "rel. error %.3g, limit %.3g, %lld NaN", c.rel_error, c.threshold,
                      static_cast<long long>(c.nan_count));
        last_error = "fx_harness_prepare: the fused plan's " + c.name + " differs from the unfused plan's (" +
                     numbers + ")";
        return 1;
      }
    }
    return 0;
  });
}

namespace {
// The C ABI's plan number (0 unfused, 1 fused) as the executor's PlanId.
fx::gpu::PlanId plan_id(int plan) {
  if (plan < 0 || plan > 1) throw std::out_of_range("no plan " + std::to_string(plan) + " (0 unfused, 1 fused)");
  return static_cast<fx::gpu::PlanId>(plan);
}
}  // namespace

FX_HARNESS_API const char* fx_harness_describe(fx_harness* h) {
  return guarded("fx_harness_describe", static_cast<const char*>(nullptr), [&] {
    check_handle(h);
    const fx::Graph& g = h->plans.engine->graph();
    nlohmann::ordered_json j;
    j["format"] = "fusion-explorer/harness";
    j["graph"] = g.name();
    j["plans_from"] = h->plans.how;
    j["inputs"] = nlohmann::ordered_json::array();
    for (fx::ValueId v = 0; v < static_cast<fx::ValueId>(g.inputs().size()); ++v) j["inputs"].push_back(value_json(g, v));
    j["outputs"] = nlohmann::ordered_json::array();
    for (fx::ValueId v : g.outputs()) j["outputs"].push_back(value_json(g, v));
    j["prepared"] = h->prepared;
    for (fx::gpu::PlanId p : fx::gpu::kPlanIds) {
      auto& steps = j["plans"][std::string(fx::gpu::plan_name(p))];
      steps = nlohmann::ordered_json::array();
      for (const auto& k : h->executor->plan_kernels(p)) {
        steps.push_back({{"name", k.name}, {"group", k.group}, {"kind", k.kind}, {"library", k.library},
                         {"path", k.path}, {"bytes", k.bytes}});
      }
    }
    j["checks"] = nlohmann::ordered_json::array();
    for (const auto& c : h->checks) {
      j["checks"].push_back({{"name", c.name}, {"dtype", c.dtype}, {"rel_error", c.rel_error},
                             {"threshold", c.threshold}, {"nan_count", c.nan_count}, {"passed", c.passed}});
    }
    h->description = j.dump();
    return h->description.c_str();
  });
}

FX_HARNESS_API void* fx_harness_stream(fx_harness* h) {
  return guarded("fx_harness_stream", static_cast<void*>(nullptr), [&] {
    check_handle(h);
    return h->executor->stream();
  });
}

FX_HARNESS_API int fx_harness_enqueue(fx_harness* h, int plan) {
  return guarded("fx_harness_enqueue", -1, [&] {
    check_handle(h);
    if (!h->prepared) throw std::logic_error("call fx_harness_prepare first");
    h->executor->enqueue(plan_id(plan));
    return 0;
  });
}

FX_HARNESS_API int fx_harness_copy_value(fx_harness* h, int plan, const char* name, void* device_destination,
                                         size_t bytes) {
  return guarded("fx_harness_copy_value", -1, [&] {
    check_handle(h);
    if (!h->prepared) throw std::logic_error("call fx_harness_prepare first");
    if (!name || !device_destination) throw std::invalid_argument("no value name or destination");
    const fx::Graph& g = h->plans.engine->graph();
    const auto v = g.find_value(name);
    if (!v) throw std::invalid_argument("graph " + g.name() + " has no value '" + name + "'");
    const auto size = static_cast<size_t>(g.value_type(*v).bytes());
    if (bytes != size) {
      throw std::invalid_argument(std::string("'") + name + "' holds " + std::to_string(size) + " bytes, not " +
                                  std::to_string(bytes));
    }
    void* src = h->executor->buffer(plan_id(plan), name);
    auto stream = static_cast<cudaStream_t>(h->executor->stream());
    FX_CUDA_CALL(cudaMemcpyAsync(device_destination, src, size, cudaMemcpyDeviceToDevice, stream));
    FX_CUDA_CALL(cudaStreamSynchronize(stream));
    return 0;
  });
}

FX_HARNESS_API int fx_harness_bind_outputs(fx_harness* h, int plan, int count, const char* const* names,
                                           void* const* device_pointers) {
  return guarded("fx_harness_bind_outputs", -1, [&] {
    check_handle(h);
    if (!h->prepared) throw std::logic_error("call fx_harness_prepare first");
    const std::map<std::string, void*> outputs = named_pointers(count, names, device_pointers, "output");
    // The plan's launches already enqueued read the old buffers' addresses at enqueue time: nothing to wait for.
    h->executor->bind_outputs(plan_id(plan), outputs);
    return 0;
  });
}

FX_HARNESS_API void fx_harness_close(fx_harness* h) {
  guarded("fx_harness_close", 0, [&] {
    delete h;
    return 0;
  });
}
