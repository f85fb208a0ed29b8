// GraphConnecting, SubGraphTiling, the schedule cache and block-kernel
// lowering on small models: what gets fused at which level, that the
// search's output is ranked and feasible, that re-tuning hits the cache, and
// that a block kernel prints for every dialect (golden CUDA text).
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "codegen/printing/c_printer.h"
#include "codegen/kernel_ir/emulate_threads.h"
#include "codegen/lowering/lower_block_kernel.h"
#include "codegen/kernel_ir/verify_kernel.h"
#include "driver/pipeline.h"
#include "compiler/ir/error.h"
#include "compiler/passes/inline_producer.h"
#include "frontends/onnx/import.h"
#include "scheduler/block_plan.h"
#include "scheduler/graph_connecting.h"
#include "tests/unit/golden_file.h"
#include "tests/unit/lowering_test_util.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph {
namespace {

using testing::OnnxModelBuilder;
using B = OnnxModelBuilder;
constexpr int kF32 = onnx::TensorProto::FLOAT;
constexpr int kI64 = onnx::TensorProto::INT64;

Graph optimized(const OnnxModelBuilder& b, const std::string& name) {
  const std::string path = testing::test_model_path("tile_graph_scheduler", name);
  b.save(path);
  return driver::optimize_graph(driver::CompileOptions{}, onnx_frontend::import_model(path));
}

// Two identical attention layers: MatMul -> Softmax -> MatMul, then a
// residual Add, twice.
Graph attention_graph() {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {1, 2, 16, 8}).output("y");
  b.initializer_f("wk", {1, 2, 8, 16}, std::vector<float>(256, 0.05f));
  for (int layer = 0; layer < 2; ++layer) {
    const std::string in = layer == 0 ? "x" : "h0", l = std::to_string(layer);
    b.node("MatMul", {in, "wk"}, {"s" + l});
    B::attr_int(b.node("Softmax", {"s" + l}, {"p" + l}), "axis", -1);
    b.node("MatMul", {"p" + l, in}, {"o" + l});
    b.node("Add", {"o" + l, in}, {layer == 0 ? "h0" : "y"});
  }
  return optimized(b, "attention");
}

int count_reductions(const Graph& g, const scheduler::KernelSchedule& k) {
  int n = 0;
  for (int op : k.ops) n += g.ops[op].reduction != Reduction::kNone;
  return n;
}

TEST(GraphConnecting, FusesAttentionIntoFewKernelsWithSeveralReductions) {
  const Graph g = attention_graph();
  const scheduler::ArchSpec h100 = scheduler::arch_by_name("H100");
  const scheduler::Schedule fused = scheduler::schedule_tile_graph(g, h100, {});
  scheduler::TileGraphOptions off;
  off.fusion = scheduler::FusionLevel::kNone;
  const scheduler::Schedule unfused = scheduler::schedule_tile_graph(g, h100, off);
  EXPECT_EQ(unfused.kernels.size(), g.ops.size());
  EXPECT_LT(fused.kernels.size(), unfused.kernels.size());
  int most_reductions = 0;
  int64_t fused_dram = 0, unfused_dram = 0;
  for (const auto& k : fused.kernels) {
    most_reductions = std::max(most_reductions, count_reductions(g, k));
    fused_dram += k.features.dram_bytes;
    EXPECT_EQ(k.kind, scheduler::KernelKind::kBlock);
    EXPECT_TRUE(k.estimate.feasible);
    for (const auto& e : k.edges) EXPECT_NE(e.level, scheduler::Connection::kDram);
  }
  for (const auto& k : unfused.kernels) unfused_dram += k.features.dram_bytes;
  // Softmax's max and sum reductions and a matmul share a kernel.
  EXPECT_GE(most_reductions, 3);
  EXPECT_LT(fused_dram, unfused_dram);
  // Kernels are in topological order: every input a kernel reads from
  // another kernel is produced by an earlier one.
  std::set<TensorId> produced;
  for (const auto& k : fused.kernels) {
    std::set<TensorId> own;
    for (int op : k.ops) own.insert(g.ops[op].output);
    for (int op : k.ops)
      for (TensorId in : g.ops[op].inputs)
        if (g.producer(in) >= 0 && !own.count(in)) EXPECT_TRUE(produced.count(in)) << g.tensor(in).name;
    produced.insert(g.ops[k.ops.back()].output);
  }
}

// MatMul -> Add bias -> Relu -> Softmax: elementwise chains (Add -> Relu,
// Softmax's Sub -> Exp) next to reductions.
Graph matmul_relu_softmax_graph() {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {32, 16}).output("y");
  b.initializer_f("w", {16, 32}, std::vector<float>(512, 0.05f));
  b.initializer_f("bias", {32}, std::vector<float>(32, 0.1f));
  b.node("MatMul", {"x", "w"}, {"s"});
  b.node("Add", {"s", "bias"}, {"t"});
  b.node("Relu", {"t"}, {"u"});
  B::attr_int(b.node("Softmax", {"u"}, {"y"}), "axis", -1);
  return optimized(b, "matmul_relu_softmax");
}

// --fusion-level register (the paper's "base" in its ablation): elementwise
// producers are still inlined, but no edge is kept in shared memory, so the
// graph ends up between one op per kernel and full tile-graph fusion.
TEST(GraphConnecting, RegisterLevelOnlyInlinesElementwiseProducers) {
  const Graph g = matmul_relu_softmax_graph();
  const scheduler::ArchSpec h100 = scheduler::arch_by_name("H100");
  scheduler::TileGraphOptions options;
  const size_t full = scheduler::schedule_tile_graph(g, h100, options).kernels.size();
  options.fusion = scheduler::FusionLevel::kRegister;
  const scheduler::Schedule reg = scheduler::schedule_tile_graph(g, h100, options);
  options.fusion = scheduler::FusionLevel::kNone;
  const size_t none = scheduler::schedule_tile_graph(g, h100, options).kernels.size();
  int edges = 0;
  for (const auto& k : reg.kernels) {
    for (const auto& e : k.edges) EXPECT_EQ(e.level, scheduler::Connection::kRegister);
    edges += static_cast<int>(k.edges.size());
    EXPECT_LE(count_reductions(g, k), 1);  // a reduction's output is never inlined
  }
  EXPECT_GT(edges, 0);
  EXPECT_LT(reg.kernels.size(), none);
  EXPECT_GT(reg.kernels.size(), full);
}

TEST(GraphConnecting, FusionLevelNamesRoundTrip) {
  for (auto level : {scheduler::FusionLevel::kNone, scheduler::FusionLevel::kRegister, scheduler::FusionLevel::kFull})
    EXPECT_EQ(scheduler::fusion_level_from_name(scheduler::fusion_level_name(level)), level);
  EXPECT_THROW(scheduler::fusion_level_from_name("shared"), UserError);
}

TEST(GraphConnecting, ElementwiseChainsAreRegisterLevel) {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {4, 64}).output("y");
  b.node("Exp", {"x"}, {"a"});
  b.node("Neg", {"a"}, {"c"});
  b.node("Relu", {"c"}, {"y"});
  const Graph g = optimized(b, "eltwise");
  for (const char* arch : {"H100", "host"}) {
    const scheduler::Schedule s = scheduler::schedule_tile_graph(g, scheduler::arch_by_name(arch), {});
    ASSERT_EQ(s.kernels.size(), 1u) << arch;
    for (const auto& e : s.kernels[0].edges) EXPECT_EQ(e.level, scheduler::Connection::kRegister);
    EXPECT_EQ(scheduler::phase_ops(g, s.kernels[0]).size(), 1u);
  }
}

TEST(SubGraphTiling, TopKIsRankedFeasibleAndDeterministic) {
  const Graph g = attention_graph();
  const scheduler::ArchSpec a100 = scheduler::arch_by_name("A100");
  scheduler::KernelSchedule k;
  k.ops = {0};  // the first matmul alone
  const scheduler::TilingResult r = scheduler::tile_subgraph(g, k, a100, 5);
  ASSERT_TRUE(r.feasible);
  ASSERT_LE(r.top.size(), 5u);
  ASSERT_GE(r.top.size(), 2u);
  for (size_t i = 0; i < r.top.size(); ++i) {
    EXPECT_TRUE(r.estimates[i].feasible);
    if (i) EXPECT_LE(r.estimates[i - 1].seconds, r.estimates[i].seconds);
    EXPECT_LE(r.top[i].threads, a100.max_threads_per_block);
  }
  const scheduler::TilingResult again = scheduler::tile_subgraph(g, k, a100, 5);
  for (size_t i = 0; i < r.top.size(); ++i) EXPECT_EQ(r.top[i].to_string(), again.top[i].to_string());
}

// A GPU and a CPU arch: the CPU's estimates also read the tile's inner
// extent (vector tails), which the cache must carry for a warm re-tune to
// fuse and rank as the cold one did.
TEST(ScheduleCache, SameSubgraphsShareKeysAndRetuningHitsTheCache) {
  const Graph g = attention_graph();
  for (const std::string arch_name : {"H100", "neoverse-n2"}) {
    SCOPED_TRACE(arch_name);
    const scheduler::ArchSpec arch = scheduler::arch_by_name(arch_name);
    scheduler::ScheduleCache cache;
    const scheduler::Schedule first = scheduler::schedule_tile_graph(g, arch, {}, &cache);
    EXPECT_GT(cache.hits, 0);  // the second layer reuses the first layer's searches
    const std::string path = testing::test_model_path("tile_graph_scheduler", "cache_" + arch_name) + ".json";
    cache.save(path);
    scheduler::ScheduleCache loaded;
    loaded.load(path);
    const scheduler::Schedule second = scheduler::schedule_tile_graph(g, arch, {}, &loaded);
    EXPECT_EQ(loaded.misses, 0);
    ASSERT_EQ(first.kernels.size(), second.kernels.size());
    for (size_t i = 0; i < first.kernels.size(); ++i) {
      EXPECT_EQ(first.kernels[i].ops, second.kernels[i].ops);
      EXPECT_EQ(first.kernels[i].config.to_string(), second.kernels[i].config.to_string());
      EXPECT_EQ(first.kernels[i].features.inner_extent, second.kernels[i].features.inner_extent);
      EXPECT_EQ(first.kernels[i].features.constant_bytes, second.kernels[i].features.constant_bytes);
      EXPECT_DOUBLE_EQ(first.kernels[i].estimate.seconds, second.kernels[i].estimate.seconds);
    }
  }
  // Another arch is another key.
  scheduler::KernelSchedule k;
  k.ops = {0};
  EXPECT_NE(scheduler::tiling_key(g, k, scheduler::arch_by_name("H100"), 20, 48),
            scheduler::tiling_key(g, k, scheduler::arch_by_name("V100"), 20, 48));
}

// NAFNet's LayerNorm2d over the channels of an NCHW map: mean and variance
// over C per pixel, then (x - mu) / sqrt(var + eps) * w + b.
Graph channel_layer_norm_graph() {
  OnnxModelBuilder b(13);
  b.input("x", kF32, {1, 8, 32, 32}).output("y");
  b.initializer_f("eps", {}, {1e-6f});
  b.initializer_f("two", {}, {2.0f});
  b.initializer_f("w", {1, 8, 1, 1}, std::vector<float>(8, 1.5f));
  b.initializer_f("bias", {1, 8, 1, 1}, std::vector<float>(8, 0.25f));
  B::attr_ints(b.node("ReduceMean", {"x"}, {"mu"}), "axes", {1});
  b.node("Sub", {"x", "mu"}, {"d"});
  b.node("Pow", {"d", "two"}, {"d2"});
  B::attr_ints(b.node("ReduceMean", {"d2"}, {"var"}), "axes", {1});
  b.node("Add", {"var", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"sd"});
  b.node("Div", {"d", "sd"}, {"n"});
  b.node("Mul", {"n", "w"}, {"nw"});
  b.node("Add", {"nw", "bias"}, {"y"});
  return optimized(b, "channel_layer_norm");
}

// A one-core CPU with the host's calibrated numbers (tilegraph calibrate
// --cores 1 on the machine where NAFNet_small's layer norms and full-size
// bert's and vit's kernels were profiled; its L1 reads 4x faster than its L2).
scheduler::ArchSpec one_core_host_spec() {
  scheduler::ArchSpec a;
  a.name = "test-host-1";
  a.target = "cpu";
  a.compute_units = a.cores = 1;
  a.vector_bytes = 64;
  a.shared_bytes_per_block = a.shared_bytes_per_unit = a.l2_bytes = 2 << 20;
  a.block_overhead_seconds = 3e-8;
  a.peak_fp32_flops = 95.5e9;
  a.levels = {
      {"dram", scheduler::LevelScope::kDevice, int64_t{16} << 30, 4.8e9, 64},
      {"l2", scheduler::LevelScope::kBlock, 2 << 20, 56.6e9, 64},
      {"l1", scheduler::LevelScope::kBlock, 48 << 10, 229e9, 64},
  };
  return a;
}

// Measured (--profile-topk, one core): the layer norm's kernels run faster
// in tiles of a few rows (2-8 of 32) than in one tile of the whole map,
// whose 32 KB input, output and statistics do not fit the L1 together, so
// the normalizing phase reads x again from the L2. The model ranks so too.
TEST(SubGraphTiling, CpuLayerNormPrefersRowTilesThatFitTheL1) {
  const Graph g = channel_layer_norm_graph();
  const scheduler::ArchSpec cpu = one_core_host_spec();
  const scheduler::Schedule s = scheduler::schedule_tile_graph(g, cpu, {});
  int checked = 0;
  for (const scheduler::KernelSchedule& k : s.kernels) {
    if (count_reductions(g, k) == 0 || g.tensor(g.ops[k.ops.back()].output).shape != Shape{1, 8, 32, 32}) continue;
    SCOPED_TRACE(g.ops[k.ops.back()].name);
    auto estimate = [&](std::vector<int64_t> tile) {
      const scheduler::BlockPlan plan = plan_block_kernel(g, k, scheduler::TileConfig{tile, 1, 0}, cpu);
      return scheduler::estimate_cost(plan.features, cpu);
    };
    const scheduler::CostEstimate whole = estimate({1, 8, 32, 32}), rows = estimate({1, 8, 8, 32});
    // The whole map's working set spills to the L2; 8 rows' (8 KB of x) does not.
    EXPECT_GT(whole.shared_seconds, rows.shared_seconds);
    EXPECT_LT(rows.seconds, whole.seconds);
    EXPECT_LT(k.config.tile[2], 32) << k.config.to_string();
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

// Softmax over the keys of full-size bert's attention scores: 12 heads x
// 128 queries x 128 keys, 768 KB of float.
Graph attention_softmax_graph() {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {1, 12, 128, 128}).output("y");
  B::attr_int(b.node("Softmax", {"x"}, {"y"}), "axis", -1);
  return optimized(b, "bert_softmax");
}

// n = (h - mean(h)) / sqrt(var(h) + eps) over the last axis, as torch
// exports a LayerNorm (without its scale and shift).
void add_normalization(OnnxModelBuilder& b, const std::string& h, const std::string& n) {
  b.initializer_f("eps", {}, {1e-12f});
  b.initializer_f("two", {}, {2.0f});
  B::attr_ints(b.node("ReduceMean", {h}, {"mu"}), "axes", {-1});
  b.node("Sub", {h, "mu"}, {"d"});
  b.node("Pow", {"d", "two"}, {"d2"});
  B::attr_ints(b.node("ReduceMean", {"d2"}, {"var"}), "axes", {-1});
  b.node("Add", {"var", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"sd"});
  b.node("Div", {"d", "sd"}, {n});
}

// bert's residual add and layer norm over the 768 features of each of 128
// tokens (384 KB of float).
Graph residual_layer_norm_graph() {
  OnnxModelBuilder b(13);
  b.input("x", kF32, {1, 128, 768}).input("r", kF32, {1, 128, 768}).output("y");
  b.initializer_f("w", {768}, std::vector<float>(768, 1.5f));
  b.initializer_f("bias", {768}, std::vector<float>(768, 0.25f));
  b.node("Add", {"x", "r"}, {"h"});
  add_normalization(b, "h", "n");
  b.node("Mul", {"n", "w"}, {"nw"});
  b.node("Add", {"nw", "bias"}, {"y"});
  return optimized(b, "residual_layer_norm");
}

// `k` holding every op of `g`, in order: one kernel of the whole graph,
// whatever the scheduler's fusion made of it.
scheduler::KernelSchedule with_all_ops(const Graph& g, scheduler::KernelSchedule k) {
  k.ops.clear();
  for (size_t i = 0; i < g.ops.size(); ++i) k.ops.push_back(static_cast<int>(i));
  return k;
}

// A channel-major [1, channels, tokens] map read token by token: transposed
// and added to a token-major [1, tokens, channels] tensor.
Graph token_major_add_graph(int64_t channels, int64_t tokens, const std::string& name) {
  OnnxModelBuilder b(13);
  b.input("x", kF32, {1, channels, tokens}).input("pos", kF32, {1, tokens, channels}).output("y");
  B::attr_ints(b.node("Transpose", {"x"}, {"t"}), "perm", {0, 2, 1});
  b.node("Add", {"t", "pos"}, {"y"});
  return optimized(b, name);
}

// Measured (--profile-topk, one core, full-size bert and vit): a softmax's
// or layer norm's kernel in one tile of all rows runs 1.1-1.5x slower than
// in tiles of a few rows. The whole tensor's working set (its inputs, the
// statistics, the output) spills the L1, so the later phases read the input
// from the L2 again, on top of the L2 traffic that brings it in and takes
// the output out; a few rows' working set stays in the L1, and the input
// crosses the L2 once. The model ranks so too, and picks a row tile.
void expect_row_tiles_beat_the_whole_tensor(const Graph& g) {
  const scheduler::ArchSpec cpu = one_core_host_spec();
  const scheduler::Schedule s = scheduler::schedule_tile_graph(g, cpu, {});
  int checked = 0;
  for (const scheduler::KernelSchedule& k : s.kernels) {
    const Shape root = g.tensor(g.ops[k.ops.back()].output).shape;
    // A bare max or sum streams once; a layer norm's statistics (mean, then
    // the variance of x - mean) read x twice, like a whole layer norm.
    if (count_reductions(g, k) == 0 || (root.back() == 1 && count_reductions(g, k) < 2)) continue;
    SCOPED_TRACE(g.ops[k.ops.back()].name);
    auto estimate = [&](std::vector<int64_t> tile) {
      const scheduler::BlockPlan plan = plan_block_kernel(g, k, scheduler::TileConfig{tile, 1, 0}, cpu);
      return scheduler::estimate_cost(plan.features, cpu);
    };
    std::vector<int64_t> rows = root;
    for (size_t d = 0; d + 2 < rows.size(); ++d) rows[d] = 1;
    rows[rows.size() - 2] = 2;
    const scheduler::CostEstimate whole = estimate(root), split = estimate(rows);
    EXPECT_GT(whole.shared_seconds, whole.dram_seconds);  // the re-read pass adds to the streams
    EXPECT_LT(split.shared_seconds * 2, whole.shared_seconds);  // mostly from the L1
    EXPECT_LT(split.seconds * 1.2, whole.seconds);
    EXPECT_LT(k.config.tile[root.size() - 2] * (root.size() > 3 ? k.config.tile[1] : 1),
              root[root.size() - 2] * (root.size() > 3 ? root[1] : 1))
        << k.config.to_string();
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

TEST(SubGraphTiling, CpuSoftmaxOfAWholeAttentionMapRanksBelowRowTiles) {
  expect_row_tiles_beat_the_whole_tensor(attention_softmax_graph());
}

TEST(SubGraphTiling, CpuLayerNormOfAllTokensRanksBelowRowTiles) {
  expect_row_tiles_beat_the_whole_tensor(residual_layer_norm_graph());
}

// Measured (--profile-topk, one core, Zen 3; full-size vit's patch-embedding
// add): a block kernel whose tile overhangs the output's innermost axis
// (1x50x256 of 50x384) runs 3.5-4x the time of tiles that divide it, where
// the padding alone says 1.33x: the last tile's guard and clamped indices
// sit in the vectorized loop, which runs a lane at a time. The model charges
// its compute and scratch traffic per lane, and never ranks such a tile
// first when one that divides the axis exists.
TEST(SubGraphTiling, CpuBlockTilesThatOverhangTheInnermostAxisRunALaneAtATime) {
  const Graph g = residual_layer_norm_graph();
  const scheduler::ArchSpec cpu = one_core_host_spec();
  const scheduler::Schedule s = scheduler::schedule_tile_graph(g, cpu, {});
  // The whole layer norm in one block kernel (the model may split off the
  // normalization), and each block kernel of the schedule whose root spans
  // the 768 features.
  scheduler::KernelSchedule fused = with_all_ops(g, s.kernels.front());
  fused.kind = scheduler::KernelKind::kBlock;
  fused.edges.clear();
  std::vector<scheduler::KernelSchedule> kernels = {fused};
  for (const scheduler::KernelSchedule& k : s.kernels)
    if (count_reductions(g, k) > 0 && k.kind == scheduler::KernelKind::kBlock &&
        g.tensor(g.ops[k.ops.back()].output).shape.back() == 768)
      kernels.push_back(k);
  int checked = 0;
  for (const scheduler::KernelSchedule& k : kernels) {
    SCOPED_TRACE(g.ops[k.ops.back()].name);
    auto plan = [&](std::vector<int64_t> tile, const scheduler::ArchSpec& arch) {
      return plan_block_kernel(g, k, scheduler::TileConfig{tile, 1, 0}, arch).features;
    };
    const scheduler::KernelFeatures whole_rows = plan({1, 2, 768}, cpu), overhang = plan({1, 2, 512}, cpu);
    EXPECT_FALSE(whole_rows.scalar_inner);
    EXPECT_TRUE(overhang.scalar_inner);
    EXPECT_FALSE(plan({1, 2, 256}, cpu).scalar_inner);  // 256 divides 768
    // 64-byte vectors: 16 lanes per element a vector would have done.
    const scheduler::CostEstimate a = scheduler::estimate_cost(whole_rows, cpu),
                                  b = scheduler::estimate_cost(overhang, cpu);
    EXPECT_GT(b.compute_seconds, 10 * a.compute_seconds);
    EXPECT_GT(b.seconds, 4 * a.seconds);
    // A GPU's threads run the guard as a predicate: no change there.
    EXPECT_FALSE(plan({1, 2, 512}, scheduler::arch_by_name("H100")).scalar_inner);
    ++checked;
  }
  EXPECT_GE(checked, 1);
  // The scheduler's own 768-wide kernels take tiles that divide the axis.
  for (size_t i = 1; i < kernels.size(); ++i)
    EXPECT_EQ(768 % kernels[i].config.tile.back(), 0) << kernels[i].config.to_string();
}

// bert's embedding: 128 token ids gather rows of a [vocab, 768] table, and
// the layer norm follows in the same kernel. The table's footprint is loose
// (any row), so its traffic is bounded by the loads themselves: 128 rows of
// 768 contiguous floats, 384 KB, for any tile. Priced a transaction per
// float, 16x that, at DRAM's rate, the term hid every other difference
// between the tiles, and the model took the fewest, largest ones: 64 rows of
// full-size bert's, measured 1.17x the time of 4-row tiles (Zen 3, one core).
TEST(SubGraphTiling, CpuGatheredRowsCostTheirBytesNotATransactionPerElement) {
  OnnxModelBuilder b(13);
  b.input("ids", kI64, {1, 128}).input("pos", kF32, {1, 128, 768}).output("y");
  std::vector<float> table(1024 * 768);
  for (size_t i = 0; i < table.size(); ++i) table[i] = float(i % 97) / 97.0f;  // not a splat
  b.initializer_f("table", {1024, 768}, table);
  B::attr_int(b.node("Gather", {"table", "ids"}, {"words"}), "axis", 0);
  b.node("Add", {"words", "pos"}, {"h"});
  add_normalization(b, "h", "y");
  const Graph g = optimized(b, "embedding_layer_norm");
  const scheduler::ArchSpec cpu = one_core_host_spec();
  const scheduler::Schedule s = scheduler::schedule_tile_graph(g, cpu, {});
  // The layer norm's kernel with the gather and add as its first phase, as
  // in full-size bert (where the token-type embedding's add comes along).
  scheduler::KernelSchedule fused;
  for (const scheduler::KernelSchedule& k : s.kernels)
    if (k.kind == scheduler::KernelKind::kBlock) fused = k;
  ASSERT_FALSE(fused.ops.empty());
  fused = with_all_ops(g, fused);
  const int64_t gathered = 128 * 768 * 4;
  std::vector<double> scratch_seconds;
  for (const int64_t rows : {2, 64}) {
    SCOPED_TRACE(str_cat(rows, " rows"));
    const scheduler::KernelFeatures f =
        plan_block_kernel(g, fused, scheduler::TileConfig{{1, rows, 768}, 1, 0}, cpu).features;
    EXPECT_GE(f.constant_bytes, gathered);
    EXPECT_LE(f.constant_bytes, gathered * 5 / 4);
    // The tile's working set holds the rows it loads, not the table.
    EXPECT_LE(f.tile_footprint_bytes, 5 * rows * 768 * 4);  // its rows of the table, of pos, of y, the statistics
    scratch_seconds.push_back(scheduler::estimate_cost(f, cpu).shared_seconds);
  }
  // Two rows' working set stays in the L1, 64 rows' spills to the L2, as for
  // the layer norm without the gather (CpuLayerNormOfAllTokensRanksBelowRowTiles);
  // with the table counted, both went to DRAM's rate alike.
  EXPECT_LT(scratch_seconds[0] * 2, scratch_seconds[1]);
}

// vit's patch embedding leaves a channel-major [384, 49] map that the
// next kernel reads token by token: a 1 x 1 x 128 tile loads one float from
// each of 128 lines. The next token's tile loads the same lines (16 tokens
// share each), which on one core are still in the L1: what the L2 delivers
// is about the map once, not a line per float (1.2 MB, which ranked these
// tiles, measured fastest, behind 50 x 64 ones). A GPU's blocks run on other
// SMs and keep paying their lines.
TEST(SubGraphTiling, CpuNeighbourTilesSharingLinesReadThemFromTheL1) {
  const Graph g = token_major_add_graph(384, 49, "token_major");
  const scheduler::KernelSchedule k =
      with_all_ops(g, scheduler::schedule_tile_graph(g, one_core_host_spec(), {}).kernels.back());
  const scheduler::TileConfig column{{1, 1, 128}, 1, 0};
  scheduler::ArchSpec cpu = one_core_host_spec();
  const int64_t map_lines = 384 * 4 * 64;  // 49 floats of a channel: 4 lines
  const int64_t pos_and_lines = map_lines + 49 * 384 * 4;
  const scheduler::KernelFeatures shared = plan_block_kernel(g, k, column, cpu).features;
  EXPECT_GE(shared.l2_bytes, 49 * 384 * 4 * 2);  // the map and pos at least once
  EXPECT_LE(shared.l2_bytes, pos_and_lines * 5 / 4);
  // Three blocks of 128 lines (24 KB) pass between neighbours: in a 16 KB
  // L1 they are gone, and each block pays its 128 lines.
  cpu.l1_bytes = 16 << 10;
  const scheduler::KernelFeatures evicted = plan_block_kernel(g, k, column, cpu).features;
  EXPECT_GE(evicted.l2_bytes, 49 * 3 * 128 * 64);
  scheduler::ArchSpec gpu = scheduler::arch_by_name("H100");
  EXPECT_GE(plan_block_kernel(g, k, column, gpu).features.l2_bytes, 49 * 3 * 128 * 32);
}

// bert's layer norm in one kernel: every element of x - mean waits for the
// mean, the normalization for the variance, so a tile waits for both sums
// of 768 points (KernelFeatures::gated_reduction_points). The kernel of the
// residual add and the mean alone (swin's layer_norm_mean kernels) ends
// with the mean's scaling, a phase as narrow as the sum: it waits for none.
TEST(SubGraphTiling, CpuTilesCountTheReductionsALaterWiderPhaseReads) {
  const Graph g = residual_layer_norm_graph();
  scheduler::KernelSchedule k =
      with_all_ops(g, scheduler::schedule_tile_graph(g, one_core_host_spec(), {}).kernels.back());
  k.kind = scheduler::KernelKind::kBlock;
  k.edges.clear();
  const scheduler::ArchSpec cpu = one_core_host_spec();
  EXPECT_EQ(plan_block_kernel(g, k, scheduler::TileConfig{{1, 1, 768}, 1, 0}, cpu).features.gated_reduction_points,
            2 * 768);
  // The add, the sum and the mean's scaling.
  size_t sum = 0;
  while (g.ops[sum].reduction == Reduction::kNone) ++sum;
  k.ops.resize(sum + 2);
  ASSERT_EQ(g.tensor(g.ops[k.ops.back()].output).shape, (Shape{1, 128, 1}));
  EXPECT_EQ(plan_block_kernel(g, k, scheduler::TileConfig{{1, 1, 1}, 1, 0}, cpu).features.gated_reduction_points, 0);
}

// The same pattern over a 2 MB map, twice what the L2 keeps whole: a
// 1 x 1 x 128 tile's 128 lines (8 KB) are read again by the next token's
// tile 64 tiles later, with 0.6 MB in between. That misses the L1 but not
// the L2: from beyond the L2 comes about the map once, not 8 KB per tile
// (32 MB, 16x). Priced per tile, swin's reverse roll (one-token tiles read
// their rows through a four-way Select whose box spans most of the tensor)
// cost 6.6 MB for the 1.8 MB it moves, and the model took whole-tensor
// tiles, 1.45x slower than one-token ones. An L2 smaller than what passes
// between the neighbours pays per tile.
TEST(SubGraphTiling, CpuNeighbourTilesSharingLinesBeyondTheL1ReadThemFromTheL2) {
  const Graph g = token_major_add_graph(8192, 64, "token_major_2mb");
  const scheduler::KernelSchedule k =
      with_all_ops(g, scheduler::schedule_tile_graph(g, one_core_host_spec(), {}).kernels.back());
  const scheduler::TileConfig column{{1, 1, 128}, 1, 0};
  const int64_t map = 8192 * 64 * 4, tiles = 64 * 64, per_tile_lines = 128 * 64;
  scheduler::ArchSpec cpu = one_core_host_spec();  // 2 MB of L2
  const scheduler::KernelFeatures swept = plan_block_kernel(g, k, column, cpu).features;
  EXPECT_GE(swept.dram_bytes, 3 * map);  // x, pos and y once
  EXPECT_LE(swept.dram_bytes, 3 * map * 5 / 4);
  EXPECT_GE(swept.l2_bytes, tiles * per_tile_lines);  // the L1 misses them all
  cpu.levels[1].capacity_bytes = 256 << 10;
  cpu.l2_bytes = cpu.shared_bytes_per_block = cpu.shared_bytes_per_unit = 256 << 10;
  EXPECT_GE(plan_block_kernel(g, k, column, cpu).features.dram_bytes, tiles * per_tile_lines);
}

// A tile that does not divide the tensor: swin's layer-norm means over 784
// tokens in two tiles of 512 rows. The block that stands for all of them is
// the first, full one; the second, of 272 rows, priced both at 0.42 MB of
// the 0.60 MB input, and the tiles ranked first (measured 2.2x the whole
// tensor's one tile).
TEST(SubGraphTiling, APartialLastTileDoesNotPriceTheOthers) {
  OnnxModelBuilder b(13);
  b.input("x", kF32, {1, 784, 192}).output("y");
  B::attr_ints(b.node("ReduceMean", {"x"}, {"y"}), "axes", {2});
  const Graph g = optimized(b, "partial_tiles");
  const scheduler::KernelSchedule k =
      with_all_ops(g, scheduler::schedule_tile_graph(g, one_core_host_spec(), {}).kernels.back());
  const int64_t input = 784 * 192 * 4;
  for (int64_t rows : {512, 300}) {  // two blocks, three blocks
    const scheduler::KernelFeatures f = plan_block_kernel(g, k, {{1, rows, 1}, 1, 0}, one_core_host_spec()).features;
    EXPECT_GE(f.dram_bytes, input) << rows;
    EXPECT_GE(f.l2_bytes, input) << rows;
  }
}

// MobileNetV2's classifier at batch 1: x[1, 1280] @ W[1280, 1000], 5.1 MB
// of weights, which the host's L3 would hold but which come from DRAM (the
// rest of the model passed through the caches since the last inference).
TEST(SubGraphTiling, CpuClassifierWeightsAreReadAtDramsRate) {
  OnnxModelBuilder b(13);
  b.input("x", kF32, {1, 1280}).output("y");
  b.initializer_f("w", {1280, 1000}, std::vector<float>(1280 * 1000, 0.5f));
  b.node("MatMul", {"x", "w"}, {"y"});
  const Graph g = optimized(b, "classifier_gemv");
  scheduler::ArchSpec cpu = one_core_host_spec();
  cpu.levels.insert(cpu.levels.begin() + 1, {"l3", scheduler::LevelScope::kDevice, 32 << 20, 30e9, 64});
  const scheduler::Schedule s = scheduler::schedule_tile_graph(g, cpu, {});
  ASSERT_EQ(s.kernels.size(), 1u);
  const scheduler::KernelSchedule& k = s.kernels[0];
  const int64_t weights = 1280 * 1000 * 4;
  EXPECT_EQ(k.features.constant_bytes, weights) << k.config.to_string();
  EXPECT_GE(k.features.dram_bytes, weights + (1280 + 1000) * 4);
  // At least the weights' time at DRAM's 4.8 GB/s, not the L3's 30.
  EXPECT_GE(k.estimate.dram_seconds, double(weights) / 4.8e9);
  EXPECT_GE(k.estimate.seconds, k.estimate.dram_seconds);
}

TEST(InlineProducer, ReplacesEverySlotReadingTheProducer) {
  // Mul(x, x) reads one tensor through two slots.
  OnnxModelBuilder b(17);
  b.input("x", kF32, {8}).output("y");
  b.node("Exp", {"x"}, {"e"});
  b.node("Mul", {"e", "e"}, {"y"});
  Graph g = optimized(b, "square");
  ASSERT_EQ(g.ops.size(), 2u);
  Op consumer = g.ops[1];
  ASSERT_TRUE(passes::inline_producer(consumer, g.ops[0]));
  for (TensorId in : consumer.inputs) EXPECT_NE(in, g.ops[0].output);
  EXPECT_EQ(consumer.inputs.size(), 1u);
}

// A softmax row kernel for H100, lowered and printed as CUDA: the golden
// text catches unintended changes to block lowering or the CUDA printer
// (tests/unit/golden_file.h).
TEST(BlockKernel, SoftmaxPrintsAsGoldenCuda) {
  OnnxModelBuilder b(17);
  b.input("x", kF32, {4, 40}).output("y");
  B::attr_int(b.node("Softmax", {"x"}, {"y"}), "axis", -1);
  const Graph g = optimized(b, "softmax");
  const scheduler::ArchSpec h100 = scheduler::arch_by_name("H100");
  const scheduler::Schedule s = scheduler::schedule_tile_graph(g, h100, {});
  ASSERT_EQ(s.kernels.size(), 1u);
  scheduler::KernelSchedule k = s.kernels[0];
  k.config.tile = {2, 40};
  k.config.threads = 32;
  const codegen::Kernel kernel = codegen::lower_block_kernel(g, k, scheduler::plan_block_kernel(g, k, k.config, h100));
  codegen::verify(kernel);
  EXPECT_EQ(kernel.grid, 2);
  EXPECT_EQ(kernel.threads, 32);
  const std::string cuda = codegen::print_kernel(kernel, codegen::cuda_dialect());
  EXPECT_NE(cuda.find("__syncthreads();"), std::string::npos);
  EXPECT_NE(cuda.find("blockIdx.x"), std::string::npos);
  // The emulation runs threads as loops; accumulators become per-thread arrays.
  const std::string emulated = codegen::print_kernel(codegen::expand_thread_locals(kernel), codegen::cpu_dialect());
  EXPECT_EQ(emulated.find("__syncthreads"), std::string::npos);
  EXPECT_NE(emulated.find("tg_block_scratch"), std::string::npos);
  EXPECT_NE(emulated.find("for (int64_t tid = 0; tid < INT64_C(32); ++tid)"), std::string::npos);
  EXPECT_TRUE(testing::matches_golden("softmax_block_kernel.cu.txt", cuda));
}

}  // namespace
}  // namespace tilegraph
