// Elementwise groups with a transpose that moves the innermost dimension. Index remapping alone would read
// (or write) with a stride of a whole row; here the output is cut into kTile x kTile tiles of two dims:
// `b`, the output's innermost, and `a`, the output dim that is innermost before the transpose. Phase 1 computes
// each transpose's value with consecutive threads along a (so its operands are read coalesced) into a
// shared-memory tile; phase 2 reads the tile across, with consecutive threads along b, does the elementwise
// work after the transpose and stores coalesced.
#include <algorithm>
#include <set>

#include "kernels/codegen/elementwise_emitter.h"

namespace fx::gpu::codegen {
namespace {

constexpr int kTile = 64;           // output tile edge, elements
constexpr int kThreadsX = 32;       // one warp along the tile's fast dimension
// Warps per block: each thread handles kTile / kThreadsY rows. 16 warps (4 rows each) ran the 8192^2 f32
// relu(transpose(x*w)+1) 1% faster than 8 on an H100 (0.2769 vs 0.2794 ms); 128x128, 32x32 and rectangular
// tiles, 16-byte accesses and a persistent grid were all slower or no better (tools/microbench/transpose_tiles.cu).
constexpr int kThreadsY = 16;
constexpr int kMinEdge = 16;        // smaller dims gain nothing from a tile
constexpr std::int64_t kSharedBudget = 40 * 1024;  // static shared memory kept under the 48 KiB limit

// The output dim that a transpose makes of its input's innermost dim, or -1 when the innermost stays put.
int moved_innermost(const Node& node) {
  const auto perm = node.attrs.get_ints("perm");
  const std::size_t rank = perm.size();
  for (std::size_t d = 0; d + 1 < rank; ++d) {
    if (static_cast<std::size_t>(*normalize_axis(perm[d], rank)) == rank - 1) return static_cast<int>(d);
  }
  return -1;
}

// True when every use of `n` inside the kernel reads it at the output element itself: only same-shape
// elementwise ops lie between it and the kernel's outputs, so phase 2 can take it from the tile.
bool read_only_at_root(const Graph& g, NodeId n, const std::set<NodeId>& in, const Shape& root) {
  for (NodeId c : g.consumers(g.value_of(n))) {
    if (!in.count(c)) continue;
    const Node& node = g.node(c);
    if (node.op_class() != OpClass::elementwise || node.type.shape != root) return false;
    if (node.op == "batchnorm" && node.inputs[0].value != g.value_of(n)) return false;
    if (!read_only_at_root(g, c, in, root)) return false;
  }
  return true;
}

struct Staging {
  int a = -1;                  // the tiled dim that is innermost before the transposes
  std::vector<NodeId> staged;  // transposes computed in phase 1, read from shared memory in phase 2
};

std::optional<Staging> plan_staging(const Graph& g, const std::vector<NodeId>& nodes, const Shape& root) {
  if (root.size() < 2 || root.back() < kMinEdge) return std::nullopt;
  const std::set<NodeId> in(nodes.begin(), nodes.end());
  Staging st;
  std::int64_t shared = 0;
  for (NodeId n : nodes) {
    const Node& node = g.node(n);
    if (node.op != "transpose" || node.type.shape != root) continue;
    const int a = moved_innermost(node);
    if (a < 0 || root[static_cast<std::size_t>(a)] < kMinEdge || (st.a >= 0 && a != st.a)) continue;
    if (!read_only_at_root(g, n, in, root)) continue;
    const std::int64_t bytes = kTile * (kTile + 1) * (compute_type(node.type.dtype) == "long long" ? 8 : 4);
    if (shared + bytes > kSharedBudget) continue;
    shared += bytes;
    st.a = a;
    st.staged.push_back(n);
  }
  if (st.staged.empty()) return std::nullopt;
  return st;
}

std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return (x + y - 1) / y; }

}  // namespace

std::optional<GeneratedKernel> generate_transpose_tiled(const Graph& g, const std::vector<NodeId>& nodes,
                                                        const std::vector<ValueId>& outputs, const std::string& name) {
  const Shape root = g.value_type(outputs.front()).shape;
  const auto st = plan_staging(g, nodes, root);
  if (!st) return std::nullopt;
  const auto a_dim = static_cast<std::size_t>(st->a), b_dim = root.size() - 1;
  const std::int64_t A = root[a_dim], B = root[b_dim], outer = numel(root) / (A * B);
  const std::int64_t tiles_a = ceil_div(A, kTile), tiles_b = ceil_div(B, kTile), tiles = tiles_a * tiles_b * outer;
  const std::string idx = numel(root) * 2 < INT32_MAX ? "int" : "long long";

  // The output element's coordinates: a, b, and the other dims from the tile's outer index o.
  Shape outer_shape;
  for (std::size_t d = 0; d < root.size(); ++d) {
    if (d != a_dim && d != b_dim) outer_shape.push_back(root[d]);
  }
  const auto oc = coords_of(outer_shape, "o");
  std::vector<std::string> coords(root.size());
  for (std::size_t d = 0, k = 0; d < root.size(); ++d) coords[d] = d == a_dim ? "a" : d == b_dim ? "b" : oc[k++];
  const std::string flat = flat_of(root, coords);

  ElementwiseEmitter em(g, nodes, root, 1, idx);
  // Phase 1: each staged transpose at the output element (a, b), threads consecutive along a.
  em.begin_phase(4);
  std::vector<std::string> tiles_of, phase1_values;
  for (NodeId n : st->staged) {
    phase1_values.push_back(em.value(g.value_of(n), Ctx{root, "", coords, std::nullopt}));
    tiles_of.push_back(em.ids.fresh("tile_" + g.node(n).name));
  }
  Code phase1 = std::move(em.body());
  // Phase 2: the same element with threads consecutive along b; staged values come from the tiles.
  em.begin_phase(4);
  const Ctx out_ctx{root, "i", coords, std::nullopt};
  em.staged_at = out_ctx.key();
  for (std::size_t s = 0; s < st->staged.size(); ++s) em.staged[g.value_of(st->staged[s])] = tiles_of[s] + "[bb][aa]";
  std::vector<std::string> results;
  for (ValueId o : outputs) results.push_back(em.value(o, out_ctx));

  GeneratedKernel k;
  k.name = name;
  k.kind = KernelKind::transpose_tiled;
  k.nodes = nodes;
  k.inputs = em.inputs;
  k.outputs = outputs;
  k.block = kThreadsX * kThreadsY;
  k.grid = std::clamp<std::int64_t>(tiles, 1, INT32_MAX);
  k.bytes_moved = bytes_of(g, k.inputs) + bytes_of(g, k.outputs);

  Code c;
  c.line(header_comment(g, nodes, "elementwise with transposes staged through shared memory, " + std::to_string(kTile) +
                                      "x" + std::to_string(kTile) + " tiles of the output " + shape_to_string(root) +
                                      " (reads and writes coalesced)"));
  c.line(kernel_signature(g, name, k.block, k.inputs, outputs, em.ids) + " {");
  c.indent();
  c.line("constexpr int kTile = " + std::to_string(kTile) + ";  // tile edge, elements");
  c.line("constexpr int kRows = " + std::to_string(kThreadsY) + ";  // warps per block; a thread covers kTile / kRows rows");
  c.line("// a: output dim " + std::to_string(a_dim) + ", the innermost before the transpose; b: output dim " +
         std::to_string(b_dim) + ", the innermost after it.");
  c.line("const " + idx + " A = " + number(A) + ", B = " + number(B) + ";");
  c.line("const long long tiles_a = " + number(tiles_a) + ", tiles_b = " + number(tiles_b) + ", tiles = " +
         number(tiles) + ";");
  for (std::size_t s = 0; s < st->staged.size(); ++s) {
    c.line("// " + tiles_of[s] + "[b][a]: " + describe_node(g, st->staged[s]) + "; the +1 column puts a column's");
    c.line("// elements in 32 different banks, so phase 2 reads it without bank conflicts.");
    c.line("__shared__ " + compute_type(g.node(st->staged[s]).type.dtype) + " " + tiles_of[s] + "[kTile][kTile + 1];");
  }
  c.line("const int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;");
  c.line("for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {");
  c.indent();
  c.line("const " + idx + " a0 = (" + idx + ")(t % tiles_a) * kTile, b0 = (" + idx + ")((t / tiles_a) % tiles_b) * kTile;");
  if (outer > 1) c.line("const long long o = t / (tiles_a * tiles_b);  // index over the other dims");
  c.line("// Phase 1: threads consecutive along a, the transposes' operands' innermost dim: coalesced reads.");
  auto loops = [&](const char* slow, const char* fast) {
    c.line("#pragma unroll");
    c.line(std::string("for (int ") + slow + " = warp; " + slow + " < kTile; " + slow + " += kRows) {");
    c.indent();
    c.line("#pragma unroll");
    c.line(std::string("for (int ") + fast + " = lane; " + fast + " < kTile; " + fast + " += 32) {");
    c.indent();
    c.line("const " + idx + " a = a0 + aa, b = b0 + bb;");
    c.line("if (a >= A || b >= B) continue;");
  };
  auto close = [&]() {
    c.dedent();
    c.line("}");
    c.dedent();
    c.line("}");
  };
  loops("bb", "aa");
  c.append(phase1);
  for (std::size_t s = 0; s < st->staged.size(); ++s) c.line(tiles_of[s] + "[bb][aa] = " + phase1_values[s] + ";");
  close();
  c.line("__syncthreads();");
  c.line("// Phase 2: threads consecutive along b, the output's innermost dim: coalesced writes.");
  loops("aa", "bb");
  c.line("const " + idx + " i = " + flat + ";  // the output element");
  c.append(em.body());
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    c.line(out_ptr(em.ids, g, outputs[o]) + "[i] = " + to_storage(g.value_type(outputs[o]).dtype, results[o]) + ";");
  }
  close();
  c.line("__syncthreads();  // the next tile overwrites the shared tiles");
  c.dedent();
  c.line("}");
  c.dedent();
  c.line("}");
  k.source = device_preamble() + "\n" + c.str();
  return k;
}

}  // namespace fx::gpu::codegen
