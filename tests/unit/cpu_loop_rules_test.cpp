// The CPU loop nest's schedule rules (scheduler::apply_cpu_loop_rules): the
// register tile of a reduction and which of its block loops run in parallel.
#include <utility>

#include <gtest/gtest.h>

#include "codegen/lowering/lower_cpu_kernel.h"
#include "driver/pipeline.h"
#include "frontends/onnx/import.h"
#include "scheduler/arch_spec.h"
#include "scheduler/schedule.h"
#include "tests/unit/lowering_test_util.h"

namespace tilegraph {
namespace {

using testing::OnnxModelBuilder;

// An AVX-512 CPU of two cores (32 vector registers of 64 bytes, 48 KB of L1).
scheduler::ArchSpec avx512_two_cores() {
  scheduler::ArchSpec arch = scheduler::host_arch();
  arch.l1_bytes = 48 << 10;
  arch.vector_bytes = 64;
  arch.registers_per_unit = 32 * 64 / 4;
  arch.cores = arch.compute_units = 2;
  return arch;
}

// The graph of `x [rows, k] @ w [k, cols]`.
Graph matmul_graph(int64_t rows, int64_t k, int64_t cols, const std::string& name) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {rows, k}).output("y");
  b.initializer_f("w", {k, cols}, std::vector<float>(static_cast<size_t>(k * cols), 0.5f));
  b.node("MatMul", {"x", "w"}, {"y"});
  const std::string path = testing::test_model_path("CpuLoopRules", name);
  b.save(path);
  return driver::optimize_graph(driver::CompileOptions{}, onnx_frontend::import_model(path));
}

// The schedule of the only reduction in `x [rows, k] @ w [k, cols]` (its op in ks.ops).
scheduler::KernelSchedule matmul_schedule(const Graph& g) {
  scheduler::KernelSchedule ks;
  for (size_t i = 0; i < g.ops.size(); ++i)
    if (g.ops[i].reduction != Reduction::kNone) {
      ks.ops = {static_cast<int>(i)};
      scheduler::apply_cpu_loop_rules(g, g.ops[i], avx512_two_cores(), ks);
    }
  return ks;
}

scheduler::KernelSchedule matmul_schedule(int64_t rows, int64_t k, int64_t cols, const std::string& name) {
  return matmul_schedule(matmul_graph(rows, k, cols, name));
}

void loops_named(const codegen::Kernel& k, const codegen::Stmt& s, const std::string& name,
                 std::vector<codegen::Stmt>* found) {
  if (!s) return;
  if (s->kind == codegen::StmtKind::kFor && k.var_names[static_cast<size_t>(s->var)] == name) found->push_back(s);
  for (const codegen::Stmt& c : s->body) loops_named(k, c, name, found);
}

int mins_in(const codegen::Stmt& s) {
  int n = 0;
  if (!s) return 0;
  for (const Expr& e : {s->value, s->index})
    if (e) visit(e, [&](const Expr& x) { n += x->kind == ExprKind::kBinary && x->binary_op == BinaryOp::kMin; });
  for (const codegen::Stmt& c : s->body) n += mins_in(c);
  return n;
}

TEST(CpuLoopRules, VectorMatrixProductTakesWideColumnTilesAllInParallel) {
  // MobileNetV2's classifier at batch 1: no row axis, so 4 vectors of
  // columns (64) per tile; its loops (the unit row, 16 column blocks) are
  // all parallel (2 cores want 8 chunks: the unit row alone gives 1).
  const scheduler::KernelSchedule ks = matmul_schedule(1, 1280, 1000, "gemv");
  EXPECT_EQ(ks.row_axis, -1);
  EXPECT_EQ(ks.tile_cols, 64);
  EXPECT_EQ(ks.parallel_depth, 2);
}

// The last column block of a ragged vector-matrix product (300 columns in
// tiles of 64) updates its 44 columns only, at exact coordinates: no
// clamped index (a gather per load) in its loop; the full blocks keep 64.
TEST(CpuLoopRules, RaggedColumnTailUpdatesOnlyItsColumns) {
  const Graph g = matmul_graph(1, 64, 300, "gemv_tail");
  const scheduler::KernelSchedule ks = matmul_schedule(g);
  ASSERT_EQ(ks.tile_cols, 64);
  const codegen::Kernel k = codegen::lower_cpu_kernel(g, ks);
  std::vector<codegen::Stmt> tiles;
  loops_named(k, k.body, "jj", &tiles);
  std::vector<int64_t> extents;
  for (const codegen::Stmt& t : tiles) {
    int64_t e = 0;
    ASSERT_TRUE(is_const_int(t->extent, &e));
    extents.push_back(e);
    if (e == 44) EXPECT_EQ(mins_in(t), 0) << "the tail's loads are not clamped";
  }
  // init, the full blocks' update, the tail's update, the write-back
  EXPECT_EQ(extents, (std::vector<int64_t>{64, 64, 44, 64}));
}

TEST(CpuLoopRules, NarrowRowlessOutputTakesItsWholeWidth) {
  const scheduler::KernelSchedule ks = matmul_schedule(1, 1024, 48, "narrow_gemv");
  EXPECT_EQ(ks.tile_cols, 48);
  EXPECT_EQ(ks.parallel_depth, 2);
}

TEST(CpuLoopRules, MatrixProductKeepsTwoVectorsByEightRows) {
  // Rows share the tile: 8 rows x 2 vectors; the row blocks (8) are enough
  // chunks for 2 cores, so the column blocks stay serial.
  const scheduler::KernelSchedule ks = matmul_schedule(64, 256, 1000, "gemm");
  EXPECT_EQ(ks.row_axis, 0);
  EXPECT_EQ(ks.tile_rows, 8);
  EXPECT_EQ(ks.tile_cols, 32);
  EXPECT_EQ(ks.parallel_depth, 1);
}

// The graph of a chain of `ops` (Transpose: perm; reductions: axes,
// keepdims) on one input of `shape`, optimized as the compiler does.
Graph one_input_graph(const std::vector<int64_t>& shape, const std::vector<std::string>& ops,
                      const std::vector<std::vector<int64_t>>& perms_or_axes, const std::string& name) {
  OnnxModelBuilder b(13);
  b.input("x", 1, shape).output("y");
  std::string in = "x";
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string out = i + 1 == ops.size() ? "y" : "t" + std::to_string(i);
    onnx::NodeProto& n = b.node(ops[i], {in}, {out});
    if (ops[i] == "Transpose") {
      OnnxModelBuilder::attr_ints(n, "perm", perms_or_axes[i]);
    } else {
      OnnxModelBuilder::attr_ints(n, "axes", perms_or_axes[i]);
      OnnxModelBuilder::attr_int(n, "keepdims", 1);
    }
    in = out;
  }
  const std::string path = testing::test_model_path("CpuLoopRules", name);
  b.save(path);
  return driver::optimize_graph(driver::CompileOptions{}, onnx_frontend::import_model(path));
}

// A keepdims mean over channels read through a Transpose (Restormer's layer
// norm: [1, C, HW] as [1, HW, C], mean over C: out [1, HW, 1]): the tile runs
// along the pixels (axis 1), whose loads are contiguous, with the reduce loop
// over the channels outside the vector loop.
TEST(CpuLoopRules, KeepdimsMeanOverStridedChannelsTilesThePixels) {
  const Graph g = one_input_graph({1, 96, 256}, {"Transpose", "ReduceMean"}, {{0, 2, 1}, {2}}, "keepdims_strided");
  const scheduler::KernelSchedule ks = matmul_schedule(g);
  const Op& op = g.ops[static_cast<size_t>(ks.ops.at(0))];
  ASSERT_EQ(g.tensor(op.output).shape, (Shape{1, 256, 1}));
  EXPECT_EQ(scheduler::reduction_col_axis(g, op), 1);
  EXPECT_EQ(ks.row_axis, -1);
  EXPECT_EQ(ks.tile_cols, 64);
  const codegen::Kernel k = codegen::lower_cpu_kernel(g, ks);
  std::vector<codegen::Stmt> tiles, reduce;
  loops_named(k, k.body, "jj", &tiles);
  loops_named(k, k.body, "r0", &reduce);
  ASSERT_FALSE(tiles.empty());
  for (const codegen::Stmt& t : tiles) EXPECT_EQ(t->loop, codegen::LoopKind::kVectorized);
  ASSERT_EQ(reduce.size(), 1u);
  EXPECT_EQ(reduce[0]->loop, codegen::LoopKind::kSerial) << "the channels' loop is outside the vector loop";
}

// Read along its reduce axis in memory (a mean over the last axis, or over
// NCHW channels whose trailing pixel axes are 1, as a 1x1 conv on a pooled
// map reads its [C_out, C_in, 1, 1] weights), each element reduces in its own
// vector loop: the keepdims column stays the last axis.
TEST(CpuLoopRules, KeepdimsMeanAlongMemoryKeepsTheLastAxis) {
  const Graph rows = one_input_graph({1, 256, 96}, {"ReduceMean"}, {{2}}, "keepdims_rows");
  const scheduler::KernelSchedule ks = matmul_schedule(rows);
  EXPECT_EQ(scheduler::reduction_col_axis(rows, rows.ops[static_cast<size_t>(ks.ops.at(0))]), 2);
  EXPECT_EQ(ks.tile_cols, 1);
  const Graph pooled = one_input_graph({1, 128, 1, 1}, {"ReduceMax"}, {{1}}, "keepdims_pooled");
  const scheduler::KernelSchedule pks = matmul_schedule(pooled);
  EXPECT_EQ(scheduler::reduction_col_axis(pooled, pooled.ops[static_cast<size_t>(pks.ops.at(0))]), 3);
}

}  // namespace
}  // namespace tilegraph
