#include "codegen/lowering/int_gemm_task_grid.h"

#include <gtest/gtest.h>

namespace tilegraph::codegen {
namespace {

// Work in panel-tile units with packing counted as one column panel per task.
double ideal(int64_t batches, int64_t panels, int64_t col_panels, int cores) {
  return static_cast<double>(batches * panels * (col_panels + 1)) / cores;
}

TEST(IntGemmTaskGrid, ViTB16RowsOnTwoCoresAreBalanced) {
  // 197 rows = 25 panels of 8, at most 6 per block, 96 column panels: five
  // row blocks would run 3 + 2 on two cores.
  const IntGemmTaskGrid g = balanced_int_gemm_grid(1, 25, 6, 96, 0, 2);
  EXPECT_LE(g.row_panels, 6);
  EXPECT_GE(g.row_blocks * g.row_panels, 25);
  EXPECT_GE(g.chunks * g.chunk_panels, 96);
  EXPECT_LE(g.makespan, 1.08 * ideal(1, 25, 96, 2));
  EXPECT_LT(g.makespan, 0.9 * (3 * 5 * 97));  // five blocks of 5: one core ran 3 of them
}

TEST(IntGemmTaskGrid, FewRowsSplitColumns) {
  // One panel of rows: only column chunks can feed four cores.
  const IntGemmTaskGrid g = balanced_int_gemm_grid(1, 1, 6, 64, 0, 4);
  EXPECT_EQ(g.row_blocks, 1);
  EXPECT_GE(g.chunks, 4);
  EXPECT_LE(g.makespan, 1.1 * 16 + 1);
}

TEST(IntGemmTaskGrid, OneCoreTakesOneTaskPerRowBlock) {
  const IntGemmTaskGrid g = balanced_int_gemm_grid(2, 12, 6, 10, 0, 1);
  EXPECT_EQ(g.chunks, 1);
  EXPECT_EQ(g.row_blocks, 2);
  EXPECT_DOUBLE_EQ(g.makespan, 2 * 12 * 11);
}

TEST(IntGemmTaskGrid, BatchesAloneCanBalance) {
  // 12 heads x 1 block each on 2 cores: 6 + 6, nothing to split.
  const IntGemmTaskGrid g = balanced_int_gemm_grid(12, 4, 6, 8, 0, 2);
  EXPECT_EQ(g.row_blocks, 1);
  EXPECT_EQ(g.chunks, 1);
  EXPECT_DOUBLE_EQ(g.makespan, 6 * 4 * 9);
}

TEST(IntGemmTaskGrid, RuntimePackedBKeepsRowBlocksWhole) {
  // q @ k^T per head: 12 batches of 25 row panels x 7 column panels, B packed
  // at run time. Splitting rows would pack every B panel once per row block.
  const IntGemmTaskGrid g = balanced_int_gemm_grid(12, 25, 128, 7, 8, 2);
  EXPECT_EQ(g.row_blocks, 1);
  EXPECT_EQ(g.chunks, 1);
  EXPECT_DOUBLE_EQ(g.makespan, 6 * (25 * 8 + 8 * 7));
}

}  // namespace
}  // namespace tilegraph::codegen
