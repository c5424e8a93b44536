// Elementwise groups with a transpose that moves the innermost dimension. Index remapping alone would read
// (or write) with a stride of a whole row; here the output is cut into kTile x kTile tiles of two dims:
// `b`, the output's innermost, and `a`, the output dim that is innermost before the transpose. Phase 1 computes
// each transpose's value with consecutive threads along a (so its operands are read coalesced) into a
// shared-memory tile; phase 2 reads the tile across, with consecutive threads along b, does the elementwise
// work after the transpose and stores coalesced.
//
// Layouts (the executor times them and keeps the fastest, as for elementwise kernels): by default 4 warps per
// 64 x 64 tile, each thread moving kVec consecutive elements (one 16-byte access of the widest tensor) along
// the fast dim of each phase, as Triton's tiled pointwise kernels do; the others, 16 warps with one element
// per access, and 16 warps with kVec. 16-byte accesses with 4 warps move layout conversions at copy speed;
// larger fused transposes can prefer 16 warps or single elements, so the run times the three.
#include <algorithm>
#include <functional>
#include <set>

#include "kernels/codegen/elementwise_emitter.h"

namespace fx::gpu::codegen {
namespace {

constexpr int kTile = 64;           // output tile edge, elements
// Warps per tile: with one element per access more warps hide more latency; with 16-byte accesses each thread
// already has several loads in flight and 4 warps suffice. Other tile shapes and a persistent grid were no faster.
constexpr int kScalarWarps = 16;
constexpr int kVectorWarps = 4;
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
    if (node.op_id() == OpId::batchnorm && node.inputs[0].value != g.value_of(n)) return false;
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
    if (node.op_id() != OpId::transpose || node.type.shape != root) continue;
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

// How a tile's work is spread over a block: `warps` warps; each thread moves `vec` consecutive elements (one
// access) along the fast dim of each phase; a warp's lanes cover min(32, kTile / vec) vectors of a tile row
// and 32 / that many rows.
struct TileLayout {
  int warps = kScalarWarps;
  int vec = 1;
};

std::string describe(const TileLayout& l, std::int64_t widest) {
  return std::to_string(kTile) + "x" + std::to_string(kTile) + " tiles, " + std::to_string(l.warps) + " warps, " +
         (l.vec == 1 ? "1 element" : std::to_string(l.vec) + " elements") + " per access (" +
         std::to_string(l.vec * widest) + "-byte accesses)";
}

GeneratedKernel transpose_kernel(const Graph& g, const std::vector<NodeId>& nodes, const std::vector<ValueId>& outputs,
                                 const std::string& name, const Staging& st, const TileLayout& layout,
                                 const std::string& note) {
  const Shape root = g.value_type(outputs.front()).shape;
  const auto a_dim = static_cast<std::size_t>(st.a), b_dim = root.size() - 1;
  const std::int64_t A = root[a_dim], B = root[b_dim], outer = numel(root) / (A * B);
  const std::int64_t tiles_a = ceil_div(A, kTile), tiles_b = ceil_div(B, kTile), tiles = tiles_a * tiles_b * outer;
  const std::string idx = numel(root) * 2 < INT32_MAX ? "int" : "long long";
  const int vec = layout.vec, fast_lanes = std::min(32, kTile / vec), slow_lanes = 32 / fast_lanes;

  // The output element's coordinates: a, b, and the other dims from the tile's outer index o.
  Shape outer_shape;
  for (std::size_t d = 0; d < root.size(); ++d) {
    if (d != a_dim && d != b_dim) outer_shape.push_back(root[d]);
  }
  const auto oc = coords_of(outer_shape, "o");
  std::vector<std::string> coords(root.size());
  for (std::size_t d = 0, k = 0; d < root.size(); ++d) coords[d] = d == a_dim ? "a" : d == b_dim ? "b" : oc[k++];
  const std::string flat = flat_of(root, coords);

  const int depth = vec > 1 ? 5 : 4;
  ElementwiseEmitter em(g, nodes, root, 1, idx);
  // Phase 1: each staged transpose at the output element (a, b), threads consecutive along a.
  em.begin_phase(depth);
  std::vector<std::string> tiles_of, phase1_values;
  for (NodeId n : st.staged) {
    phase1_values.push_back(em.value(g.value_of(n), Ctx{root, "", coords, std::nullopt}));
    tiles_of.push_back(em.ids.fresh("tile_" + g.node(n).name));
  }
  Code phase1 = std::move(em.body());
  // Phase 2: the same element with threads consecutive along b; staged values come from the tiles.
  em.begin_phase(depth);
  const Ctx out_ctx{root, "i", coords, std::nullopt};
  em.staged_at = out_ctx.key();
  for (std::size_t s = 0; s < st.staged.size(); ++s) em.staged[g.value_of(st.staged[s])] = tiles_of[s] + "[bb][aa]";
  std::vector<std::string> results;
  for (ValueId o : outputs) results.push_back(em.value(o, out_ctx));

  GeneratedKernel k;
  k.name = name;
  k.kind = KernelKind::transpose_tiled;
  k.nodes = nodes;
  k.inputs = em.inputs;
  k.outputs = outputs;
  k.block = 32 * layout.warps;
  k.grid = std::clamp<std::int64_t>(tiles, 1, INT32_MAX);
  k.bytes_moved = bytes_of(g, k.inputs) + bytes_of(g, k.outputs);

  Code c = translation_unit();
  c.line(header_comment(g, nodes, "elementwise with transposes staged through shared memory, " + std::to_string(kTile) +
                                      "x" + std::to_string(kTile) + " tiles of the output " + shape_to_string(root) +
                                      " (reads and writes coalesced)"));
  if (!note.empty()) c.line("// " + note);
  c.line(kernel_signature(g, name, k.block, k.inputs, outputs, em.ids), " {");
  c.indent();
  if (vec > 1) {
    // The executor's buffers start at 256-byte boundaries. Told so, the compiler merges a thread's kVec
    // consecutive loads (and stores) of one tensor into one vector access where the index shows they line up.
    c.line("// Buffers start 256-byte aligned: a thread's kVec consecutive accesses to a tensor become one.");
    for (ValueId v : k.inputs) {
      const std::string p = in_ptr(em.ids, g, v);
      c.line(p + " = (const " + storage_type(g.value_type(v).dtype) + "*)__builtin_assume_aligned(" + p + ", 16);");
    }
    for (ValueId v : outputs) {
      const std::string p = out_ptr(em.ids, g, v);
      c.line(p + " = (" + storage_type(g.value_type(v).dtype) + "*)__builtin_assume_aligned(" + p + ", 16);");
    }
  }
  c.line("constexpr int kTile = " + std::to_string(kTile) + ";  // tile edge, elements");
  c.line("constexpr int kWarps = " + std::to_string(layout.warps) + ";");
  if (vec > 1) {
    c.line("constexpr int kVec = " + std::to_string(vec) + ";  // consecutive elements a thread moves along each phase's fast dim");
    c.line("constexpr int kFast = " + std::to_string(fast_lanes) + ", kSlow = " + std::to_string(slow_lanes) +
           ";  // a warp: kFast lanes along a tile row, kSlow rows");
  }
  c.line("// a: output dim " + std::to_string(a_dim) + ", the innermost before the transpose; b: output dim " +
         std::to_string(b_dim) + ", the innermost after it.");
  c.line("const " + idx + " A = " + number(A) + ", B = " + number(B) + ";");
  // Tile indices in the index type too: with 64-bit ones the compiler no longer sees that a thread's kVec
  // accesses line up, and keeps them scalar (NVRTC, CUDA 13).
  c.line("const " + idx + " tiles_a = " + number(tiles_a) + ", tiles_b = " + number(tiles_b) + ", tiles = " +
         number(tiles) + ";");
  for (std::size_t s = 0; s < st.staged.size(); ++s) {
    c.line("// " + tiles_of[s] + "[b][a]: " + describe_node(g, st.staged[s]) + "; the +1 column puts a column's");
    c.line("// elements in different banks, so phase 2 reads it without (or with few) bank conflicts.");
    c.line("__shared__ " + compute_type(g.node(st.staged[s]).type.dtype) + " " + tiles_of[s] + "[kTile][kTile + 1];");
  }
  c.line("const int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;");
  if (vec > 1) c.line("const int fast = (lane % kFast) * kVec, slow = warp * kSlow + lane / kFast;");
  c.line("for (" + idx + " t = blockIdx.x; t < tiles; t += gridDim.x) {");
  c.indent();
  c.line("const " + idx + " a0 = t % tiles_a * kTile, b0 = t / tiles_a % tiles_b * kTile;");
  if (outer > 1) c.line("const " + idx + " o = t / (tiles_a * tiles_b);  // index over the other dims");
  c.line("// Phase 1: threads consecutive along a, the transposes' operands' innermost dim: coalesced reads.");
  // slow: the loop over tile rows; fast: the tile column. With kVec > 1 a thread takes kVec columns from
  // `fast` on; A and B are multiples of kVec then, so one bounds check covers them all. `vector_head` runs
  // before the loop over a thread's kVec elements, `vector_tail` after it.
  auto loops = [&](const std::string& s, const std::string& f, const std::function<void()>& vector_head) {
    c.line("#pragma unroll");
    if (vec == 1) {
      c.line("for (int " + s + " = warp; " + s + " < kTile; " + s + " += kWarps) {");
      c.indent();
      c.line("#pragma unroll");
      c.line("for (int " + f + " = lane; " + f + " < kTile; " + f + " += 32) {");
      c.indent();
      c.line("const " + idx + " a = a0 + aa, b = b0 + bb;");
      c.line("if (a >= A || b >= B) continue;");
      return;
    }
    c.line("for (int " + s + " = slow; " + s + " < kTile; " + s + " += kWarps * kSlow) {");
    c.indent();
    c.line("#pragma unroll");
    c.line("for (int " + f + "0 = fast; " + f + "0 < kTile; " + f + "0 += kFast * kVec) {");
    c.indent();
    const std::string a_first = f == "aa" ? "aa0" : "aa", b_first = f == "bb" ? "bb0" : "bb";
    c.line("if (a0 + " + a_first + " >= A || b0 + " + b_first + " >= B) continue;");
    vector_head();
    c.line("#pragma unroll");
    c.line("for (int " + f + " = " + f + "0; " + f + " < " + f + "0 + kVec; ++" + f + ") {");
    c.indent();
    c.line("const " + idx + " a = a0 + aa, b = b0 + bb;");
  };
  auto close = [&](const std::function<void()>& vector_tail) {
    c.dedent();
    c.line("}");
    if (vec > 1) {
      vector_tail();
      c.dedent();
      c.line("}");
    }
    c.dedent();
    c.line("}");
  };
  loops("bb", "aa", [] {});
  c.append(phase1);
  for (std::size_t s = 0; s < st.staged.size(); ++s) c.line(tiles_of[s] + "[bb][aa] = " + phase1_values[s] + ";");
  close([] {});
  c.line("__syncthreads();");
  c.line("// Phase 2: threads consecutive along b, the output's innermost dim: coalesced writes.");
  // With kVec > 1 a thread's kVec results of each output are gathered and stored with one access (the
  // compiler does not merge stores separated by the f16/bf16 conversions on its own).
  std::vector<std::string> out_vectors(outputs.size());
  for (std::size_t o = 0; o < outputs.size(); ++o) out_vectors[o] = out_ptr(em.ids, g, outputs[o]) + "_v";
  auto vec_type = [&](ValueId v) { return "fx_vec<" + storage_type(g.value_type(v).dtype) + ", kVec>"; };
  std::vector<std::string> first = coords;
  first[a_dim] = "(a0 + aa)";
  first[b_dim] = "(b0 + bb0)";
  loops("aa", "bb", [&] {
    c.line("const " + idx + " first = " + flat_of(root, first) + ";  // the output element of bb0");
    for (std::size_t o = 0; o < outputs.size(); ++o) c.line(vec_type(outputs[o]) + " " + out_vectors[o] + ";");
  });
  c.line("const " + idx + " i = " + (vec > 1 ? std::string("first + (bb - bb0)") : flat) + ";  // the output element");
  c.append(em.body());
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const std::string value = to_storage(g.value_type(outputs[o]).dtype, results[o]);
    c.line(vec > 1 ? out_vectors[o] + ".v[bb - bb0] = " + value + ";"
                   : out_ptr(em.ids, g, outputs[o]) + "[i] = " + value + ";");
  }
  close([&] {
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      c.line("*reinterpret_cast<" + vec_type(outputs[o]) + "*>(" + out_ptr(em.ids, g, outputs[o]) + " + first) = " +
             out_vectors[o] + ";");
    }
  });
  c.line("__syncthreads();  // the next tile overwrites the shared tiles");
  c.dedent();
  c.line("}");
  c.dedent();
  c.line("}");
  k.source = std::move(c).take();
  return k;
}

}  // namespace

std::optional<GeneratedKernel> generate_transpose_tiled(const Graph& g, const std::vector<NodeId>& nodes,
                                                        const std::vector<ValueId>& outputs, const std::string& name) {
  const Shape root = g.value_type(outputs.front()).shape;
  const auto st = plan_staging(g, nodes, root);
  if (!st) return std::nullopt;
  // Vector accesses need both tiled dims to be multiples of kVec (no vector straddles an edge).
  const std::int64_t widest = widest_bytes(g, nodes, outputs);
  const std::int64_t A = root[static_cast<std::size_t>(st->a)], B = root.back();
  int vec = static_cast<int>(std::clamp<std::int64_t>(16 / widest, 1, 8));
  while (vec > 1 && (A % vec != 0 || B % vec != 0)) vec /= 2;
  const TileLayout scalar{kScalarWarps, 1};
  if (vec == 1) {
    GeneratedKernel k = transpose_kernel(g, nodes, outputs, name, *st, scalar, {});
    k.layout = describe(scalar, widest);
    return k;
  }
  const TileLayout vector{kVectorWarps, vec}, wide{kScalarWarps, vec};
  const std::string layout = describe(vector, widest);
  GeneratedKernel k = transpose_kernel(g, nodes, outputs, name, *st, vector,
                                       layout_note(layout, {describe(scalar, widest), describe(wide, widest)}));
  k.layout = layout;
  for (const TileLayout& other : {scalar, wide}) {
    GeneratedKernel alt = transpose_kernel(g, nodes, outputs, name, *st, other, {});
    k.alternatives.push_back({describe(other, widest), std::move(alt.source), alt.block, alt.grid});
  }
  return k;
}

}  // namespace fx::gpu::codegen
