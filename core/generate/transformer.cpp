#include "core/generate/transformer.h"

#include <cmath>

namespace fx {
namespace {

struct Emitter {
  GraphSpec& spec;
  DType dtype;

  void input(const std::string& name, Shape shape, Role role) {
    spec.inputs.push_back({name, {std::move(shape), dtype}, role});
  }
  const std::string& node(const std::string& name, const std::string& op,
                          std::vector<std::variant<std::string, double>> inputs, Attrs attrs = {}) {
    NodeSpec n;
    n.name = name;
    n.op = op;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    spec.nodes.push_back(std::move(n));
    return spec.nodes.back().name;
  }
};

Attrs attrs_of(std::initializer_list<std::pair<const char*, AttrValue>> list) {
  Attrs a;
  for (const auto& [k, v] : list) a.set(k, v);
  return a;
}

}  // namespace

GraphSpec transformer_spec(const TransformerShape& s) {
  GraphSpec spec;
  spec.name = "transformer_" + std::to_string(s.layers) + "L";
  spec.description = "Generated GPT-style decoder stack: " + std::to_string(s.layers) + " layers, hidden " +
                     std::to_string(s.hidden) + ", sequence " + std::to_string(s.seq) + ", batch " +
                     std::to_string(s.batch) + ", " + std::to_string(s.heads) + " heads.";
  Emitter e{spec, s.dtype};
  const std::int64_t b = s.batch, t = s.seq, h = s.hidden, nh = s.heads, hd = s.hidden / s.heads;
  const std::int64_t ff = s.hidden * s.mlp_ratio;
  e.input("x", {b, t, h}, Role::activation);
  e.input("causal_mask", {t, t}, Role::constant);
  std::string x = "x";
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "l" + std::to_string(l) + ".";
    for (const char* w : {"ln1_g", "ln1_b", "ln2_g", "ln2_b", "bq", "bk", "bv", "bo", "b2"}) {
      e.input(p + w, {h}, Role::weight);
    }
    e.input(p + "b1", {ff}, Role::weight);
    for (const char* w : {"wq", "wk", "wv", "wo"}) e.input(p + w, {h, h}, Role::weight);
    e.input(p + "w1", {h, ff}, Role::weight);
    e.input(p + "w2", {ff, h}, Role::weight);

    const std::string ln1 = e.node(p + "ln1", "layernorm", {x, p + "ln1_g", p + "ln1_b"});
    std::string heads[3];
    const char* names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; ++i) {
      const std::string n = names[i];
      e.node(p + n + "_mm", "matmul", {ln1, p + "w" + n});
      e.node(p + n + "_bias", "add", {p + n + "_mm", p + "b" + n});
      e.node(p + n + "_split", "reshape", {p + n + "_bias"}, attrs_of({{"shape", std::vector<std::int64_t>{b, t, nh, hd}}}));
      heads[i] = e.node(p + n + "_heads", "transpose", {p + n + "_split"},
                        attrs_of({{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}}));
    }
    e.node(p + "scores", "matmul", {heads[0], heads[1]}, attrs_of({{"transpose_b", true}}));
    e.node(p + "scaled", "mul", {p + "scores", scale});
    e.node(p + "masked", "add", {p + "scaled", "causal_mask"});
    e.node(p + "probs", "softmax", {p + "masked"});
    e.node(p + "attn", "matmul", {p + "probs", heads[2]});
    e.node(p + "merge", "transpose", {p + "attn"}, attrs_of({{"perm", std::vector<std::int64_t>{0, 2, 1, 3}}}));
    e.node(p + "merged", "reshape", {p + "merge"}, attrs_of({{"shape", std::vector<std::int64_t>{b, t, h}}}));
    e.node(p + "o_mm", "matmul", {p + "merged", p + "wo"});
    e.node(p + "o_bias", "add", {p + "o_mm", p + "bo"});
    const std::string r1 = e.node(p + "resid1", "add", {x, p + "o_bias"});
    const std::string ln2 = e.node(p + "ln2", "layernorm", {r1, p + "ln2_g", p + "ln2_b"});
    e.node(p + "fc1", "matmul", {ln2, p + "w1"});
    e.node(p + "fc1_bias", "add", {p + "fc1", p + "b1"});
    e.node(p + "gelu", "gelu_tanh", {p + "fc1_bias"});
    e.node(p + "fc2", "matmul", {p + "gelu", p + "w2"});
    e.node(p + "fc2_bias", "add", {p + "fc2", p + "b2"});
    x = e.node(p + "resid2", "add", {r1, p + "fc2_bias"});
  }
  spec.outputs.push_back(x);
  return spec;
}

}  // namespace fx
