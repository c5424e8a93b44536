// The generator's text (golden snippets) and an NVRTC compile of every sample's kernels, unfused and
// auto-fused, for sm_90: no GPU needed (NVRTC compiles without a device).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "core/fusion/engine.h"
#include "core/fusion/kernel_names.h"
#include "core/graph/graph_io.h"
#include "kernels/codegen/codegen.h"
#include "kernels/nvrtc/nvrtc_compiler.h"

namespace fx::gpu {
namespace {

Graph load(const std::string& name) {
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + name);
  EXPECT_TRUE(g.ok()) << name;
  return std::move(g).value();
}

// The fused plan's kernels, concatenated source.
std::string fused_source(const std::string& sample) {
  FusionEngine engine(load(sample), DeviceDescription::h100_sxm());
  engine.auto_fuse();
  std::string all;
  for (int i = 0; i < static_cast<int>(engine.plan().groups().size()); ++i) {
    const Group& group = engine.plan().groups()[static_cast<std::size_t>(i)];
    std::vector<NodeId> nodes = group.nodes;
    nodes.insert(nodes.end(), group.recomputed.begin(), group.recomputed.end());
    if (group.eliminated() || !unsupported_reason(engine.graph(), nodes).empty()) continue;
    const std::string name = generated_kernel_name(engine.plan(), i);
    for (const auto& k : generate_group(engine.graph(), nodes, group.io.outputs, name).kernels) all += k.source;
  }
  return all;
}

TEST(Codegen, ElementwiseChainIsOneVectorisedLoopWithOneLocalPerNode) {
  const std::string src = fused_source("relu_mul_add.json");
  EXPECT_NE(src.find("const fx_vec<float, 4> x_v = *reinterpret_cast<const fx_vec<float, 4>*>(in_x + base);"), std::string::npos) << src;
  EXPECT_NE(src.find("const float mul = (x * w);  // mul = mul(x, w)"), std::string::npos) << src;
  EXPECT_NE(src.find("const float y = fx_relu(add);"), std::string::npos) << src;
  EXPECT_NE(src.find("*reinterpret_cast<fx_vec<float, 4>*>(out_y + base) = out_y_v;"), std::string::npos) << src;
}

// The executor times these layouts against each other (RunOptions::autotune): same entry point, parameters and
// results; twice the blocks when each thread moves half the bytes.
TEST(Codegen, ElementwiseKernelsOfferAnEightByteLayoutToTime) {
  auto chain = [](const std::string& dtype, const std::string& cols) {
    auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "chain",
      "inputs": [{"name": "x", "shape": [64, )" + cols + R"(], "dtype": ")" + dtype + R"("}],
      "nodes": [{"name": "e", "op": "exp", "inputs": ["x"]}, {"name": "y", "op": "relu", "inputs": ["e"]}],
      "outputs": ["y"]})");
    EXPECT_TRUE(g.ok());
    const std::vector<NodeId> all = {0, 1};
    auto code = generate_group(*g, all, "fx_k");
    EXPECT_EQ(code.kernels.size(), 1u);
    return code.kernels.front();
  };
  const GeneratedKernel f32 = chain("f32", "1024");
  EXPECT_EQ(f32.layout, "4 elements per thread (16-byte accesses)");
  ASSERT_EQ(f32.alternatives.size(), 1u);
  const KernelLayout& alt = f32.alternatives.front();
  EXPECT_EQ(alt.description, "2 elements per thread (8-byte accesses)");
  EXPECT_EQ(alt.block, f32.block);
  EXPECT_EQ(alt.grid, 2 * f32.grid);
  EXPECT_EQ(f32.grid * f32.block * 4, 64 * 1024);
  EXPECT_NE(alt.source.find("const fx_vec<float, 2> x_v = *reinterpret_cast<const fx_vec<float, 2>*>(in_x + base);"),
            std::string::npos) << alt.source;
  EXPECT_NE(alt.source.find("extern \"C\" __global__ void __launch_bounds__(256) " + f32.name + "("), std::string::npos);
  EXPECT_NE(f32.source.find("// Layout: 4 elements per thread (16-byte accesses). A run also times this kernel with 2 "
                            "elements per thread (8-byte accesses) and keeps the faster"),
            std::string::npos) << f32.source;

  const GeneratedKernel bf16 = chain("bf16", "1024");  // 16 bytes are 8 elements, 8 bytes 4
  EXPECT_EQ(bf16.layout, "8 elements per thread (16-byte accesses)");
  ASSERT_EQ(bf16.alternatives.size(), 1u);
  EXPECT_EQ(bf16.alternatives.front().description, "4 elements per thread (8-byte accesses)");

  const GeneratedKernel odd = chain("f32", "1021");  // no vector access fits a row of 1021: nothing to time
  EXPECT_EQ(odd.layout, "1 element per thread");
  EXPECT_TRUE(odd.alternatives.empty());
  const GeneratedKernel pairs = chain("f32", "1022");  // 2 elements fit, 4 do not: one layout
  EXPECT_EQ(pairs.layout, "2 elements per thread (8-byte accesses)");
  EXPECT_TRUE(pairs.alternatives.empty());
}

// A kernel large enough to fill the device many times over is also timed with 512 threads per block.
TEST(Codegen, LargeElementwiseKernelsAlsoOfferWideBlocks) {
  auto kernel = [](const std::string& shape) {
    auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "chain",
      "inputs": [{"name": "x", "shape": )" + shape + R"(, "dtype": "f32"}],
      "nodes": [{"name": "e", "op": "exp", "inputs": ["x"]}, {"name": "y", "op": "relu", "inputs": ["e"]}],
      "outputs": ["y"]})");
    EXPECT_TRUE(g.ok());
    const std::vector<NodeId> all = {0, 1};
    return generate_group(*g, all, "fx_k").kernels.front();
  };
  const GeneratedKernel big = kernel("[2048, 2048]");  // 2M threads of 2 elements: 4096 blocks of 512
  ASSERT_EQ(big.alternatives.size(), 2u);
  const KernelLayout& wide = big.alternatives[1];
  EXPECT_EQ(wide.description, "2 elements per thread (8-byte accesses), 512 threads per block");
  EXPECT_EQ(wide.block, 512);
  EXPECT_EQ(wide.grid * wide.block * 2, 2048 * 2048);
  EXPECT_NE(wide.source.find("__launch_bounds__(512) " + big.name + "("), std::string::npos) << wide.source;
  EXPECT_NE(wide.source.find("(int)gridDim.x * blockDim.x * 2"), std::string::npos) << wide.source;
  EXPECT_NE(big.source.find("// Layout: 4 elements per thread (16-byte accesses). A run also times this kernel with 2 "
                            "elements per thread (8-byte accesses) and with 2 elements per thread (8-byte accesses), "
                            "512 threads per block and keeps the fastest"),
            std::string::npos) << big.source;
  EXPECT_EQ(kernel("[2048, 2047]").alternatives.size(), 1u);  // just under: 1 element per thread, wide only
  EXPECT_EQ(kernel("[2048, 2047]").alternatives[0].block, 512);
  EXPECT_EQ(kernel("[1024, 2048]").alternatives.size(), 1u);  // half the size: the 256-thread layouts only
}

TEST(Codegen, SoftmaxKeepsTheRowInRegistersAndReducesTwice) {
  const std::string src = fused_source("softmax_decomposed.json");
  EXPECT_NE(src.find("constexpr int kChunks = 4;"), std::string::npos) << src;
  EXPECT_NE(src.find("fx_block_reduce(mx_acc, fx_max_op(), fx_scratch_f)"), std::string::npos) << src;
  EXPECT_NE(src.find("fx_block_reduce(s_acc, fx_sum_op(), fx_scratch_f)"), std::string::npos) << src;
  EXPECT_NE(src.find("e[k] = expf(sub[k]);"), std::string::npos) << src;
  // One read of x and one write of y: a single kernel with one input and one output pointer.
  EXPECT_EQ(src.find("extern \"C\""), src.rfind("extern \"C\"")) << src;
}

TEST(Codegen, TransposeIsStagedThroughASharedTileWithCoalescedReadsAndWrites) {
  const std::string tr = fused_source("transpose_chain.json");
  // One kernel: phase 1 reads x and w along their rows (a thread's 4 consecutive a, one 16-byte access each
  // once the compiler knows the buffers' alignment), phase 2 writes y along its rows, 4 results a store.
  EXPECT_EQ(tr.find("extern \"C\""), tr.rfind("extern \"C\"")) << tr;
  EXPECT_NE(tr.find("__launch_bounds__(128)"), std::string::npos) << tr;
  EXPECT_NE(tr.find("in_x = (const float*)__builtin_assume_aligned(in_x, 16);"), std::string::npos) << tr;
  EXPECT_NE(tr.find("__shared__ float tile_tr[kTile][kTile + 1];"), std::string::npos) << tr;
  EXPECT_NE(tr.find("const int fast = (lane % kFast) * kVec, slow = warp * kSlow + lane / kFast;"), std::string::npos) << tr;
  EXPECT_NE(tr.find("for (int aa = aa0; aa < aa0 + kVec; ++aa) {"), std::string::npos) << tr;
  EXPECT_NE(tr.find("const float x = in_x[(b * 8192 + a)];"), std::string::npos) << tr;
  EXPECT_NE(tr.find("tile_tr[bb][aa] = tr;"), std::string::npos) << tr;
  EXPECT_NE(tr.find("const int first = ((a0 + aa) * 8192 + (b0 + bb0));"), std::string::npos) << tr;
  EXPECT_NE(tr.find("const float add = (tile_tr[bb][aa] + 1.0f);"), std::string::npos) << tr;
  EXPECT_NE(tr.find("out_y_v.v[bb - bb0] = y;"), std::string::npos) << tr;
  EXPECT_NE(tr.find("*reinterpret_cast<fx_vec<float, kVec>*>(out_y + first) = out_y_v;"), std::string::npos) << tr;
}

// The other layouts, timed against it: 16 warps with one element per access, and 16 warps with 4.
TEST(Codegen, TransposeHasAOneElementLayoutToo) {
  const Graph g = load("transpose_chain.json");
  std::vector<NodeId> all;
  for (NodeId n = 0; n < g.num_nodes(); ++n) all.push_back(n);
  const auto k = generate_group(g, all, "fx_k").kernels;
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].layout, "64x64 tiles, 4 warps, 4 elements per access (16-byte accesses)");
  EXPECT_EQ(k[0].block, 128);
  ASSERT_EQ(k[0].alternatives.size(), 2u);
  const KernelLayout& wide = k[0].alternatives[1];
  EXPECT_EQ(wide.description, "64x64 tiles, 16 warps, 4 elements per access (16-byte accesses)");
  EXPECT_EQ(wide.block, 512);
  EXPECT_NE(wide.source.find("constexpr int kWarps = 16;"), std::string::npos) << wide.source;
  EXPECT_NE(wide.source.find("constexpr int kVec = 4;"), std::string::npos) << wide.source;
  const KernelLayout& alt = k[0].alternatives[0];
  EXPECT_EQ(alt.description, "64x64 tiles, 16 warps, 1 element per access (4-byte accesses)");
  EXPECT_EQ(alt.block, 512);
  EXPECT_EQ(alt.grid, k[0].grid);
  const std::string& tr = alt.source;
  EXPECT_EQ(tr.find("__builtin_assume_aligned"), std::string::npos) << tr;
  EXPECT_NE(tr.find("for (int aa = lane; aa < kTile; aa += 32) {"), std::string::npos) << tr;
  EXPECT_NE(tr.find("const float x = in_x[(b * 8192 + a)];"), std::string::npos) << tr;
  EXPECT_NE(tr.find("for (int bb = lane; bb < kTile; bb += 32) {"), std::string::npos) << tr;
  EXPECT_NE(tr.find("const int i = (a * 8192 + b);  // the output element"), std::string::npos) << tr;
  EXPECT_NE(tr.find("out_y[i] = y;"), std::string::npos) << tr;
}

Graph inline_graph(const std::string& inputs, const std::string& nodes) {
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "t", "inputs": [)" + inputs +
                      R"(], "nodes": [)" + nodes + R"(], "outputs": ["y"]})");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : format_diagnostics(g.errors()));
  return std::move(g).value();
}

std::vector<GeneratedKernel> whole_graph_kernels(const Graph& g) {
  std::vector<NodeId> all;
  for (NodeId n = 0; n < g.num_nodes(); ++n) all.push_back(n);
  return generate_group(g, all, "fx_k").kernels;
}

TEST(Codegen, BatchedTransposeTilesTheLastTwoDimsAndLoopsOverTheBatch) {
  const Graph g = inline_graph(R"({"name": "x", "shape": [3, 70, 45], "dtype": "bf16"})",
                               R"({"name": "t", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [0, 2, 1]}},
                                  {"name": "y", "op": "exp", "inputs": ["t"]})");
  const auto k = whole_graph_kernels(g);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].kind, KernelKind::transpose_tiled);
  EXPECT_EQ(k[0].grid, 3 * 1 * 2);  // tiles: 45 -> 1 along a, 70 -> 2 along b, 3 batches
  const std::string& src = k[0].source;
  // 70 and 45 are not multiples of a vector: one element per access, the only layout.
  EXPECT_EQ(k[0].layout, "64x64 tiles, 16 warps, 1 element per access (2-byte accesses)");
  EXPECT_TRUE(k[0].alternatives.empty());
  EXPECT_NE(src.find("const int o = t / (tiles_a * tiles_b);"), std::string::npos) << src;
  EXPECT_NE(src.find("fx_bf16_to_f32(in_x[((o) * 3150 + b * 45 + a)])"), std::string::npos) << src;
  EXPECT_NE(src.find("const int i = ((o) * 3150 + a * 70 + b);"), std::string::npos) << src;
  EXPECT_NE(src.find("__shared__ float tile_t[kTile][kTile + 1];"), std::string::npos) << src;
}

TEST(Codegen, TransposeKeepingTheInnermostDimStaysAnIndexRemapping) {
  const Graph g = inline_graph(R"({"name": "x", "shape": [64, 32, 128], "dtype": "f32"})",
                               R"({"name": "t", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [1, 0, 2]}},
                                  {"name": "y", "op": "neg", "inputs": ["t"]})");
  const auto k = whole_graph_kernels(g);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].kind, KernelKind::elementwise);
  EXPECT_EQ(k[0].source.find("__shared__"), std::string::npos) << k[0].source;
}

TEST(Codegen, RemappedReadsKeepVectorStoresAndReshapesKeepVectorLoads) {
  // Head split [B,S,H,D] -> [B,H,S,D]: four elements per thread, the permuted operand read element by element.
  const Graph split = inline_graph(R"({"name": "x", "shape": [2, 16, 3, 8], "dtype": "f32"})",
                                   R"({"name": "y", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [0, 2, 1, 3]}})");
  const auto k = whole_graph_kernels(split);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_NE(k[0].source.find("4 elements per thread"), std::string::npos) << k[0].source;
  EXPECT_NE(k[0].source.find("*reinterpret_cast<fx_vec<float, 4>*>(out_y + base)"), std::string::npos) << k[0].source;
  EXPECT_NE(k[0].source.find("const float x = in_x[("), std::string::npos) << k[0].source;
  // A reshape keeps the flat index, so its operand is one vector load; x^3 is a product, not powf.
  const Graph gelu = inline_graph(R"({"name": "x", "shape": [64, 32], "dtype": "f32"})",
                                  R"({"name": "r", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [2048]}},
                                     {"name": "y", "op": "pow", "inputs": ["r", 3]})");
  const auto g = whole_graph_kernels(gelu);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_NE(g[0].source.find("*reinterpret_cast<const fx_vec<float, 4>*>(in_x + base)"), std::string::npos) << g[0].source;
  EXPECT_NE(g[0].source.find("(r * r * r)"), std::string::npos) << g[0].source;
  EXPECT_EQ(g[0].source.find("powf("), std::string::npos) << g[0].source;
}

TEST(Codegen, APureRowReductionReadsItsStreamOnceWithMoreThreads) {
  // sum(x * x) over rows of 4096 stores one value per row: 512 threads of two vector accesses, loads
  // evict-first. A softmax over the same rows stores every element: 256 threads of four, plain loads.
  const std::string sum = fused_source("sum_of_squares.json");
  EXPECT_NE(sum.find("__launch_bounds__(512)"), std::string::npos) << sum;
  EXPECT_NE(sum.find("constexpr int kChunks = 2;"), std::string::npos) << sum;
  EXPECT_NE(sum.find("raw = fx_load_once(reinterpret_cast<const fx_vec<float, kVec>*>(in_x + row * R + col));"),
            std::string::npos) << sum;
  const std::string softmax = fused_source("softmax.json");
  EXPECT_NE(softmax.find("__launch_bounds__(256)"), std::string::npos) << softmax;
  EXPECT_EQ(softmax.find("raw = fx_load_once("), std::string::npos) << softmax;
}

// The executor times a row kernel's layouts against each other: half and twice the threads per row, each
// covering the row exactly with the same entry point, kept in registers, no warp idle.
TEST(Codegen, RowKernelsOfferHalfAndTwiceTheThreadsToTime) {
  const Graph ln = load("layernorm.json");  // rows of 4096 f32: 256 threads of 4 vector accesses
  const auto k = whole_graph_kernels(ln);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].kind, KernelKind::row_reduction);
  EXPECT_EQ(k[0].layout, "256 threads per row, 4 vector accesses each (16 elements per thread)");
  EXPECT_NE(k[0].source.find("// Layout: 256 threads per row, 4 vector accesses each (16 elements per thread). A run "
                             "also times this kernel with 128 threads per row, 8 vector accesses each (32 elements "
                             "per thread) and with 512 threads per row, 2 vector accesses each (8 elements per "
                             "thread) and keeps the fastest"),
            std::string::npos) << k[0].source;
  ASSERT_EQ(k[0].alternatives.size(), 2u);
  const KernelLayout& fewer = k[0].alternatives[0];
  EXPECT_EQ(fewer.block, 128);
  EXPECT_EQ(fewer.grid, k[0].grid);
  EXPECT_NE(fewer.source.find("__launch_bounds__(128) " + k[0].name + "("), std::string::npos) << fewer.source;
  EXPECT_NE(fewer.source.find("constexpr int kChunks = 8;"), std::string::npos) << fewer.source;
  EXPECT_NE(fewer.source.find("the row is covered exactly"), std::string::npos) << fewer.source;
  EXPECT_EQ(fewer.source.find("// Layout:"), std::string::npos) << fewer.source;
  const KernelLayout& more = k[0].alternatives[1];
  EXPECT_EQ(more.description, "512 threads per row, 2 vector accesses each (8 elements per thread)");
  EXPECT_EQ(more.block, 512);
  EXPECT_NE(more.source.find("constexpr int kChunks = 2;"), std::string::npos) << more.source;

  // A pure reduction starts at 512 threads: 256 x 4 and 1024 x 1 are its others.
  const auto sum = whole_graph_kernels(load("sum_of_squares.json"));
  ASSERT_EQ(sum.size(), 1u);
  ASSERT_EQ(sum[0].alternatives.size(), 2u);
  EXPECT_EQ(sum[0].alternatives[0].description, "256 threads per row, 4 vector accesses each (16 elements per thread)");
  EXPECT_EQ(sum[0].alternatives[1].description, "1024 threads per row, 1 vector access each (4 elements per thread)");

  // Rows of 96 f32 (24 vectors): one warp, one access each; neither fewer warps nor an idle one to offer.
  const Graph small = inline_graph(R"({"name": "x", "shape": [8, 96], "dtype": "f32"})",
                                   R"({"name": "y", "op": "softmax", "inputs": ["x"]})");
  const auto one = whole_graph_kernels(small);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].layout, "32 threads per row, 1 vector access each (4 elements per thread)");
  EXPECT_TRUE(one[0].alternatives.empty());
  EXPECT_EQ(one[0].source.find("// Layout:"), std::string::npos) << one[0].source;
}

TEST(Codegen, OperandsBroadcastOverOuterDimsAreKeptInL2) {
  // A mask [S, S] added to scores [B, H, S, S], then softmax: the row kernel reads the mask with fx_load_keep
  // (L2 evict_last) and the scores, its row, with fx_load_row (L1 and L2 evict_last, Triton's hints for a row
  // it stores back). The same graph without the softmax is one elementwise kernel: mask kept, scores plain.
  const std::string inputs = R"({"name": "s", "shape": [2, 3, 16, 32], "dtype": "f32"},
                                {"name": "mask", "shape": [16, 32], "dtype": "f32"})";
  const Graph softmax = inline_graph(inputs, R"({"name": "m", "op": "add", "inputs": ["s", "mask"]},
                                                {"name": "y", "op": "softmax", "inputs": ["m"]})");
  const auto row = whole_graph_kernels(softmax);
  ASSERT_EQ(row.size(), 1u);
  EXPECT_EQ(row[0].kind, KernelKind::row_reduction);
  EXPECT_NE(row[0].source.find("raw = fx_load_keep(reinterpret_cast<const fx_vec<float, kVec>*>(in_mask + mask_row + col));"),
            std::string::npos) << row[0].source;
  EXPECT_NE(row[0].source.find("raw = fx_load_row(reinterpret_cast<const fx_vec<float, kVec>*>(in_s + row * R + col));"),
            std::string::npos) << row[0].source;
  const Graph add = inline_graph(inputs, R"({"name": "y", "op": "add", "inputs": ["s", "mask"]})");
  const auto ew = whole_graph_kernels(add);
  ASSERT_EQ(ew.size(), 1u);
  EXPECT_NE(ew[0].source.find("= fx_load_keep(reinterpret_cast<const fx_vec<float, 4>*>(in_mask + "), std::string::npos)
      << ew[0].source;
  EXPECT_NE(ew[0].source.find("= *reinterpret_cast<const fx_vec<float, 4>*>(in_s + base);"), std::string::npos)
      << ew[0].source;
}

TEST(Codegen, ComparisonScalarsTakeTheTensorsType) {
  const Graph g = inline_graph(R"({"name": "x", "shape": [256], "dtype": "f32"})",
                               R"({"name": "mask", "op": "gt", "inputs": ["x", 0.5]},
                                  {"name": "y", "op": "where", "inputs": ["mask", "x", 0.25]})");
  const auto k = whole_graph_kernels(g);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_NE(k[0].source.find("(x > 0.5f)"), std::string::npos) << k[0].source;
  EXPECT_NE(k[0].source.find("(mask ? x : 0.25f)"), std::string::npos) << k[0].source;
}

// sigmoid and silu with 16-bit results take the hardware exp2 and reciprocal (preamble: fx_sigmoid_fast); f32
// results keep the precise expf and division.
TEST(Codegen, SixteenBitSigmoidAndSiluUseTheFastForms) {
  const std::string swiglu = fused_source("swiglu_bf16.json");
  EXPECT_NE(swiglu.find("= fx_round_bf16(fx_silu_fast(g));"), std::string::npos) << swiglu;
  const Graph f16 = inline_graph(R"({"name": "x", "shape": [256], "dtype": "f16"})",
                                 R"({"name": "y", "op": "sigmoid", "inputs": ["x"]})");
  const auto k16 = whole_graph_kernels(f16);
  ASSERT_EQ(k16.size(), 1u);
  EXPECT_NE(k16[0].source.find("fx_round_f16(fx_sigmoid_fast(x))"), std::string::npos) << k16[0].source;
  const std::string f32 = fused_source("sigmoid_chain.json");
  EXPECT_NE(f32.find("= fx_sigmoid(scale);"), std::string::npos) << f32;
  EXPECT_EQ(f32.find("fx_sigmoid_fast(scale)"), std::string::npos) << f32;
}

TEST(Codegen, CastsRound) {
  const std::string cast = fused_source("cast_chain.json");
  EXPECT_NE(cast.find("fx_round_f16((float)(relu))"), std::string::npos) << cast;
}

TEST(Codegen, DropoutDrawsFromPhiloxByElementIndex) {
  const std::string src = fused_source("dropout_chain.json");
  EXPECT_NE(src.find("fx_dropout(mul, 1677722u, 1.11111116f, 0ULL, (unsigned long long)(i))"), std::string::npos) << src;
}

TEST(Codegen, GroupOutputsAndInputs) {
  const Graph g = load("exp_two_consumers.json");
  std::vector<NodeId> all;
  for (NodeId n = 0; n < g.num_nodes(); ++n) all.push_back(n);
  EXPECT_EQ(group_outputs(g, all).size(), g.outputs().size());
  EXPECT_EQ(group_inputs(g, all).size(), g.inputs().size());
  const GroupCode code = generate_group(g, all, "fx_g_a");
  ASSERT_EQ(code.kernels.size(), 1u);
  EXPECT_EQ(code.kernels[0].name, "fx_g_a");
}

TEST(Codegen, RefusesCustomAndContraction) {
  const Graph g = load("mlp_relu_f32.json");
  const std::vector<NodeId> mm = {*g.find_node("mm")};
  EXPECT_NE(unsupported_reason(g, mm).find("cuBLASLt"), std::string::npos);
  EXPECT_THROW(generate_group(g, mm, "fx_k"), std::invalid_argument);
  // An attention group says which kernel runs it instead.
  const Graph gpt = load("gpt2_block.json");
  std::vector<NodeId> chain;
  for (const char* n : {"scores", "scaled", "masked", "probs", "ctx"}) chain.push_back(*gpt.find_node(n));
  EXPECT_NE(unsupported_reason(gpt, chain).find("one call of the TF32 flash attention kernel"), std::string::npos)
      << unsupported_reason(gpt, chain);
}

// Every sample, both plans: every generated kernel compiles for sm_90, in each of its layouts.
TEST(CodegenNvrtc, EverySampleCompilesForSm90) {
  NvrtcCompiler compiler{std::filesystem::path{}};  // no disk cache: compile for real
  int kernels = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(FX_SOURCE_DIR) + "/sample_graphs")) {
    if (entry.path().extension() != ".json") continue;
    const Graph g = load(entry.path().filename().string());
    FusionEngine engine(g, DeviceDescription::h100_sxm());
    const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
    engine.auto_fuse();
    for (const Plan* plan : {&unfused, &engine.plan()}) {
      for (int i = 0; i < static_cast<int>(plan->groups().size()); ++i) {
        const Group& group = plan->groups()[static_cast<std::size_t>(i)];
        std::vector<NodeId> nodes = group.nodes;
        nodes.insert(nodes.end(), group.recomputed.begin(), group.recomputed.end());
        if (group.eliminated() || !unsupported_reason(engine.graph(), nodes).empty()) continue;
        const std::string name = generated_kernel_name(*plan, i);
        for (const auto& k : generate_group(engine.graph(), nodes, group.io.outputs, name).kernels) {
          std::vector<const std::string*> sources = {&k.source};  // and every layout the executor may time
          for (const KernelLayout& alt : k.alternatives) sources.push_back(&alt.source);
          for (const std::string* source : sources) {
            try {
              const Cubin cubin = compiler.compile(*source, k.name, "sm_90");
              EXPECT_GT(cubin->size(), 1000u) << k.name;
              ++kernels;
            } catch (const CompileError& e) {
              ADD_FAILURE() << entry.path() << " " << k.name << ":\n" << e.log() << "\n" << *source;
            }
          }
        }
      }
    }
  }
  EXPECT_GT(kernels, 50);
}

// The conversions around a channels-last convolution: [N, C, H*W] <-> [N, H*W, C] as the tiled transpose,
// named after the group and the convolution, compiling for sm_90; nonsense sizes refused.
TEST(CodegenNvrtc, LayoutConversionIsATiledTransposeThatCompiles) {
  const GeneratedKernel to_nhwc = generate_layout_transpose(DType::f32, 32, 64, 56 * 56, "fx_g_conv_x_to_nhwc");
  EXPECT_EQ(to_nhwc.name, "fx_g_conv_x_to_nhwc");
  EXPECT_EQ(to_nhwc.kind, KernelKind::transpose_tiled);
  EXPECT_EQ(to_nhwc.bytes_moved, 2 * 32 * 64 * 56 * 56 * 4);
  EXPECT_EQ(to_nhwc.grid, 32 * 1 * 49);  // 64-wide tiles: 64 channels -> 1, 3136 positions -> 49, per image
  const GeneratedKernel to_nchw = generate_layout_transpose(DType::bf16, 2, 25, 8, "fx_g_c_y_to_nchw");
  EXPECT_EQ(to_nchw.kind, KernelKind::elementwise) << "an 8-wide innermost dim gains nothing from a tile";
  EXPECT_NE(to_nchw.source.find("fx_bf16"), std::string::npos);
  NvrtcCompiler compiler{std::filesystem::path{}};
  for (const GeneratedKernel* k : {&to_nhwc, &to_nchw}) {
    EXPECT_GT(compiler.compile(k->source, k->name, "sm_90")->size(), 1000u) << k->name;
  }
  EXPECT_THROW(generate_layout_transpose(DType::f32, 0, 4, 4, "bad"), std::invalid_argument);
}

// max_pool2d: its own kernel (a window op is never fused), one thread per output element over its window,
// padding as -inf; f32 and bf16 compile for sm_90.
TEST(CodegenNvrtc, MaxPool2dIsAWindowKernelThatCompiles) {
  NvrtcCompiler compiler{std::filesystem::path{}};
  for (const char* dtype : {"f32", "bf16"}) {
    auto g = load_graph(std::string(R"({"format": "fusion-explorer/graph", "version": 1, "name": "pool",
        "inputs": [{"name": "x", "shape": [32, 64, 112, 112], "dtype": ")") + dtype + R"("}],
        "nodes": [{"name": "p", "op": "max_pool2d", "inputs": ["x"], "attrs": {"kernel_size": 3, "stride": 2, "padding": 1}}],
        "outputs": ["p"]})");
    ASSERT_TRUE(g.ok()) << format_diagnostics(g.errors());
    const std::vector<NodeId> one = {0};
    EXPECT_TRUE(unsupported_reason(*g, one).empty());
    const GroupCode code = generate_group(*g, one, "fx_g_p");
    ASSERT_EQ(code.kernels.size(), 1u);
    const GeneratedKernel& k = code.kernels[0];
    EXPECT_EQ(k.kind, KernelKind::window_pool);
    EXPECT_EQ(kernel_kind_name(k.kind), "window_pool");
    EXPECT_EQ(k.name, "fx_g_p");
    EXPECT_EQ(k.grid, (32 * 64 * 56 * 56 + 255) / 256);
    const std::int64_t size = std::string(dtype) == "f32" ? 4 : 2;
    EXPECT_EQ(k.bytes_moved, 32 * 64 * (112 * 112 + 56 * 56) * size);
    EXPECT_NE(k.source.find("p * 2 - 1 + r * 1"), std::string::npos) << k.source;
    EXPECT_NE(k.source.find("-__int_as_float(0x7f800000)"), std::string::npos) << "padding is -inf";
    EXPECT_NE(k.source.find("fx_max(m, "), std::string::npos) << "fx_max keeps a NaN";
    EXPECT_GT(compiler.compile(k.source, k.name, "sm_90")->size(), 1000u) << k.source;
  }
}

// Its channels-last variant (the executor runs it on values kept NHWC): the same entry point, values and launch,
// a warp's threads on neighbouring channels of one output position ([N, H, W, C] indexing); f32 and bf16
// compile. A kernel without one is refused by name.
TEST(CodegenNvrtc, MaxPool2dHasAChannelsLastVariantThatCompiles) {
  NvrtcCompiler compiler{std::filesystem::path{}};
  for (const char* dtype : {"f32", "bf16"}) {
    auto g = load_graph(std::string(R"({"format": "fusion-explorer/graph", "version": 1, "name": "pool",
        "inputs": [{"name": "x", "shape": [32, 64, 112, 112], "dtype": ")") + dtype + R"("}],
        "nodes": [{"name": "p", "op": "max_pool2d", "inputs": ["x"], "attrs": {"kernel_size": 3, "stride": 2, "padding": 1}},
                  {"name": "r", "op": "relu", "inputs": ["p"]}],
        "outputs": ["r"]})");
    ASSERT_TRUE(g.ok()) << format_diagnostics(g.errors());
    const GeneratedKernel nchw = generate_group(*g, std::vector<NodeId>{0}, "fx_k").kernels.at(0);
    ASSERT_TRUE(has_channels_last_variant(*g, nchw.kind, nchw.nodes));
    const GeneratedKernel k = generate_channels_last_variant(*g, nchw);
    EXPECT_EQ(k.name, nchw.name);
    EXPECT_EQ(k.kind, KernelKind::window_pool);
    EXPECT_EQ(k.inputs, nchw.inputs);
    EXPECT_EQ(k.outputs, nchw.outputs);
    EXPECT_EQ(k.nodes, nchw.nodes);
    EXPECT_EQ(k.grid, nchw.grid);
    EXPECT_EQ(k.block, nchw.block);
    EXPECT_EQ(k.bytes_moved, nchw.bytes_moved);
    EXPECT_NE(k.layout, nchw.layout);
    EXPECT_NE(k.source.find("const int ch = (int)(i % C)"), std::string::npos) << k.source;
    EXPECT_NE(k.source.find("image * H * W * C + ch"), std::string::npos) << k.source;
    EXPECT_NE(k.source.find("((long long)h * W + w) * C]"), std::string::npos) << k.source;
    EXPECT_EQ(nchw.source.find(" * C]"), std::string::npos) << "the NCHW kernel is unchanged";
    EXPECT_GT(compiler.compile(k.source, k.name, "sm_90")->size(), 1000u) << k.source;
    const GeneratedKernel relu = generate_group(*g, std::vector<NodeId>{1}, "fx_k").kernels.at(0);
    EXPECT_FALSE(has_channels_last_variant(*g, relu.kind, relu.nodes));
    EXPECT_THROW(generate_channels_last_variant(*g, relu), std::invalid_argument);
  }
}

// Counts the lines of `ptx` holding `what`.
int ptx_count(const std::string& ptx, const std::string& what) {
  int n = 0;
  for (std::size_t at = ptx.find(what); at != std::string::npos; at = ptx.find(what, at + 1)) ++n;
  return n;
}

// The default layout's point: every global load and store of the conversions is one 16-byte access (f32: 4
// elements; bf16: 8), in both directions, and the one-element layout stays scalar. Checked in the PTX NVRTC
// makes of the generated source, so a change of the source (or of NVRTC) that loses the vectors fails here.
TEST(CodegenNvrtc, TransposeLayoutsMoveSixteenBytesPerAccess) {
  const NvrtcCompiler compiler{std::filesystem::path{}};
  const GeneratedKernel to_nhwc = generate_layout_transpose(DType::f32, 32, 64, 56 * 56, "conv_x_to_nhwc");
  const GeneratedKernel to_nchw = generate_layout_transpose(DType::f32, 32, 56 * 56, 64, "conv_y_to_nchw");
  const GeneratedKernel half = generate_layout_transpose(DType::bf16, 8, 256, 512, "h_to_nhwc");
  for (const GeneratedKernel* k : {&to_nhwc, &to_nchw, &half}) {
    SCOPED_TRACE(k->name);
    ASSERT_EQ(k->alternatives.size(), 2u);
    const std::string vec = compiler.ptx(k->source, k->name, "sm_90");
    const std::string wide = compiler.ptx(k->alternatives[1].source, k->name, "sm_90");
    EXPECT_EQ(ptx_count(wide, "ld.global"), ptx_count(wide, "ld.global" + (k == &half ? std::string(".v4.u32") : ".v4.f32")));
    const std::string scalar = compiler.ptx(k->alternatives[0].source, k->name, "sm_90");
    const std::string type = k == &half ? ".v4.u32" : ".v4.f32";
    EXPECT_GT(ptx_count(vec, "ld.global" + type), 0) << vec;
    EXPECT_EQ(ptx_count(vec, "ld.global"), ptx_count(vec, "ld.global" + type)) << vec;
    EXPECT_GT(ptx_count(vec, "st.global" + type), 0) << vec;
    EXPECT_EQ(ptx_count(vec, "st.global"), ptx_count(vec, "st.global" + type)) << vec;
    EXPECT_EQ(ptx_count(scalar, ".v4."), 0) << scalar;
    EXPECT_GT(ptx_count(scalar, "ld.global"), 0) << scalar;
  }
}

// The rearrangement of a stem convolution's x for its space-to-depth form: one thread per output pixel, the
// padding channels and the positions outside x zero; f32, f16 and bf16 compile for sm_90; sizes that cannot
// hold the blocks are refused.
TEST(CodegenNvrtc, SpaceToDepthRearrangementCompiles) {
  const SpaceToDepthShape stem{32, 3, 224, 224, 2, 3, 3, 115, 115, 16};
  NvrtcCompiler compiler{std::filesystem::path{}};
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    const GeneratedKernel k = generate_space_to_depth(t, stem, "fx_g_conv_x_space_to_depth");
    EXPECT_EQ(k.name, "fx_g_conv_x_space_to_depth");
    EXPECT_EQ(k.grid, (32 * 115 * 115 + 255) / 256);
    EXPECT_EQ(k.bytes_moved, (32 * 3 * 224 * 224 + 32 * 115 * 115 * 16) * dtype_size(t));
    EXPECT_NE(k.layout.find("2x2 blocks of 3 channels as 12 (padded to 16) channels"), std::string::npos) << k.layout;
    EXPECT_NE(k.source.find("plane < C && h >= 0 && h < H && w >= 0 && w < W"), std::string::npos) << k.source;
    EXPECT_GT(compiler.compile(k.source, k.name, "sm_90")->size(), 1000u) << dtype_name(t);
    // A pixel's 16 channels leave as 16-byte stores: four for f32, two for f16 and bf16.
    const std::string ptx = compiler.ptx(k.source, k.name, "sm_90");
    EXPECT_EQ(ptx_count(ptx, "st.global.v4.u32"), t == DType::f32 ? 4 : 2) << ptx;
    EXPECT_EQ(ptx_count(ptx, "st.global"), ptx_count(ptx, "st.global.v4.u32")) << ptx;
  }
  // Six f32 channels fill no 16-byte store: element by element.
  const GeneratedKernel narrow = generate_space_to_depth(DType::f32, {1, 1, 8, 8, 2, 0, 0, 4, 4, 6}, "narrow");
  const std::string ptx = compiler.ptx(narrow.source, narrow.name, "sm_90");
  EXPECT_EQ(ptx_count(ptx, ".v4."), 0) << ptx;
  EXPECT_EQ(ptx_count(ptx, "st.global"), 6) << ptx;
  EXPECT_THROW(generate_space_to_depth(DType::f32, {1, 3, 8, 8, 2, 0, 0, 4, 4, 8}, "few"), std::invalid_argument);
  EXPECT_THROW(generate_space_to_depth(DType::f32, {0, 3, 8, 8, 2, 0, 0, 4, 4, 16}, "empty"), std::invalid_argument);
}

TEST(CodegenNvrtc, CompileErrorCarriesLogAndSource) {
  NvrtcCompiler compiler{std::filesystem::path{}};
  try {
    compiler.compile("extern \"C\" __global__ void broken() { undefined_name(); }", "broken", "sm_90");
    FAIL() << "expected a compile error";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("undefined_name"), std::string::npos) << e.log();
    EXPECT_NE(e.source().find("broken"), std::string::npos);
  }
}

TEST(CodegenNvrtc, DiskCacheIsReused) {
  const auto dir = std::filesystem::temp_directory_path() / ("fx-nvrtc-test-" + std::to_string(::getpid()));
  const std::string src = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; }";
  {
    NvrtcCompiler a(dir);
    a.compile(src, "k", "sm_90");
    EXPECT_EQ(a.stats().compiled, 1);
    a.compile(src, "k", "sm_90");
    EXPECT_EQ(a.stats().memory_hits, 1);
  }
  NvrtcCompiler b(dir);
  b.compile(src, "k", "sm_90");
  EXPECT_EQ(b.stats().disk_hits, 1);
  EXPECT_EQ(b.stats().compiled, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fx::gpu
