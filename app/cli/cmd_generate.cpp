// fusion-cli generate: synthetic graphs for testing scale.
#include "app/cli/cli_io.h"
#include "app/cli/command.h"
#include "core/generate/transformer.h"
#include "core/graph/graph_io.h"

namespace fx::cli {
namespace {

std::optional<std::int64_t> parse_positive(const std::optional<std::string>& s, std::int64_t fallback,
                                           std::int64_t max_value) {
  if (!s) return fallback;
  try {
    std::size_t used = 0;
    const long long v = std::stoll(*s, &used);
    if (used != s->size() || v < 1 || v > max_value) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

int generate(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {}, {"--layers", "--hidden", "--seq", "--batch", "--heads", "--dtype", "-o"}, {{"--output", "-o"}});
  if (!args.ok() || args.positionals().size() != 1 || args.positionals()[0] != "transformer") {
    err << "fusion-cli generate: " << (args.ok() ? "the only generator is 'transformer'" : args.error()) << "\n";
    return kBadInput;
  }
  TransformerShape shape;
  struct {
    const char* option;
    std::int64_t* target;
    std::int64_t max_value;
  } ints[] = {{"--hidden", &shape.hidden, 1 << 16}, {"--seq", &shape.seq, 1 << 20},
              {"--batch", &shape.batch, 1 << 16}, {"--heads", &shape.heads, 1024}};
  auto layers = parse_positive(args.value("--layers"), shape.layers, 10000);
  if (!layers) {
    err << "fusion-cli generate: --layers takes a whole number from 1 to 10000\n";
    return kBadInput;
  }
  shape.layers = static_cast<int>(*layers);
  for (auto& opt : ints) {
    auto v = parse_positive(args.value(opt.option), *opt.target, opt.max_value);
    if (!v) {
      err << "fusion-cli generate: " << opt.option << " takes a whole number from 1 to " << opt.max_value << "\n";
      return kBadInput;
    }
    *opt.target = *v;
  }
  if (auto dt = args.value("--dtype")) {
    auto parsed = parse_dtype(*dt);
    if (!parsed || !is_floating(*parsed)) {
      err << "fusion-cli generate: --dtype is f32, f16 or bf16\n";
      return kBadInput;
    }
    shape.dtype = *parsed;
  }
  if (shape.hidden % shape.heads != 0) {
    err << "fusion-cli generate: --hidden (" << shape.hidden << ") must be a multiple of --heads (" << shape.heads
        << ")\n";
    return kBadInput;
  }
  auto g = build_graph(transformer_spec(shape));
  if (!g) return report_errors(err, "generated graph", format_diagnostics(g.errors(), "generated graph"));
  const std::string path = args.value("-o").value_or("-");
  auto w = write_output(path, save_graph(*g), out);
  if (!w) return report_errors(err, path, format_diagnostics(w.errors(), path));
  if (!is_std_stream(path)) err << "wrote " << path << ": " << g->num_nodes() << " nodes\n";
  return kOk;
}

Register generate_cmd({"generate", "write a synthetic graph (a GPT-style transformer stack)",
                       "usage: fusion-cli generate transformer [--layers N] [--hidden H] [--seq S] [--batch B]\n"
                       "                                       [--heads A] [--dtype f32|f16|bf16] [-o OUT]\n\n"
                       "Writes a GPT-style decoder stack (layernorm, Q/K/V projections, attention with softmax,\n"
                       "output projection, residual adds, MLP with GELU): 30 nodes per layer, so --layers 48\n"
                       "gives 1,440 nodes. Defaults: 2 layers, hidden 768, seq 1024, batch 1, 12 heads, f32.\n",
                       generate});

}  // namespace
}  // namespace fx::cli
