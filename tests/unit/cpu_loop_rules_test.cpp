// The CPU loop nest's schedule rules (scheduler::apply_cpu_loop_rules): the
// register tile of a reduction and which of its block loops run in parallel.
#include <utility>

#include <gtest/gtest.h>

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

// The schedule of the only reduction in `x [rows, k] @ w [k, cols]`.
scheduler::KernelSchedule matmul_schedule(int64_t rows, int64_t k, int64_t cols, const std::string& name) {
  OnnxModelBuilder b(13);
  b.input("x", 1, {rows, k}).output("y");
  b.initializer_f("w", {k, cols}, std::vector<float>(static_cast<size_t>(k * cols), 0.5f));
  b.node("MatMul", {"x", "w"}, {"y"});
  const std::string path = testing::test_model_path("CpuLoopRules", name);
  b.save(path);
  const Graph g = driver::optimize_graph(driver::CompileOptions{}, onnx_frontend::import_model(path));
  scheduler::KernelSchedule ks;
  for (const Op& op : g.ops)
    if (op.reduction != Reduction::kNone) scheduler::apply_cpu_loop_rules(g, op, avx512_two_cores(), ks);
  return ks;
}

TEST(CpuLoopRules, VectorMatrixProductTakesOneEvenTilePerCore) {
  // MobileNetV2's classifier at batch 1: no row axis; its 1000 columns split
  // into one tile per core (500 each, no tail), both parallel.
  const scheduler::KernelSchedule ks = matmul_schedule(1, 1280, 1000, "gemv");
  EXPECT_EQ(ks.row_axis, -1);
  EXPECT_EQ(ks.tile_cols, 500);
  EXPECT_EQ(ks.parallel_depth, 2);
}

TEST(CpuLoopRules, VectorMatrixProductTakesWideColumnTilesAllInParallel) {
  // Columns that do not split evenly per core (1001), or whose share would
  // hold more accumulators than a quarter of the L1 (8192 / 2 = 16 KB): 16
  // vectors of columns (256) per tile; its loops (the unit row, the column
  // blocks) are all parallel, since 2 cores want 8 chunks.
  for (const auto& [cols, name] : {std::pair<int64_t, const char*>{1001, "gemv_odd"}, {8192, "gemv_wide"}}) {
    const scheduler::KernelSchedule ks = matmul_schedule(1, 256, cols, name);
    EXPECT_EQ(ks.row_axis, -1) << name;
    EXPECT_EQ(ks.tile_cols, 256) << name;
    EXPECT_EQ(ks.parallel_depth, 2) << name;
  }
}

TEST(CpuLoopRules, NarrowRowlessOutputTakesItsWholeWidth) {
  const scheduler::KernelSchedule ks = matmul_schedule(1, 512, 100, "narrow_gemv");
  EXPECT_EQ(ks.tile_cols, 100);
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

}  // namespace
}  // namespace tilegraph
