// The float GEMM's cache blocking (scheduler/float_gemm_blocking.h): kc from
// the L1 where a B panel overflows it, whole slices of the first non-unit reduce axis per block, evenly
// spread, and the row block's size from the L2.
#include "scheduler/float_gemm_blocking.h"

#include <gtest/gtest.h>

namespace tilegraph::scheduler {
namespace {

Gemm gemm_with_k(std::vector<int64_t> k_extents) {
  Gemm m;
  m.element = DType::kF32;
  m.k_extents = std::move(k_extents);
  m.k = 1;
  for (int64_t e : m.k_extents) m.k *= e;
  return m;
}

ArchSpec caches(int64_t l1, int64_t l2) {
  ArchSpec a;
  a.l1_bytes = l1;
  a.l2_bytes = l2;
  return a;
}

TEST(FloatGemmBlocking, A3x3ConvOver256ChannelsSplitsChannelsToFitHalfTheL1) {
  // avx512 (8 x 32), 48 KB L1: a B block of at most 24 KB = 192 k values;
  // 9 window positions per channel: at most 21 channels, so 13 blocks,
  // evened out to 20 channels (180 k values) each, the last 16.
  const FloatGemmBlocking b = float_gemm_blocking(gemm_with_k({256, 3, 3}), 8, 32, caches(48 << 10, 2 << 20));
  EXPECT_EQ(b.k_axis, 0);
  EXPECT_EQ(b.axis_step, 20);
  EXPECT_EQ(b.kc, 180);
  EXPECT_EQ(b.k_blocks, 13);
  EXPECT_LE(b.kc * 32 * 4, 24 << 10);
  // A panels (2304 x 8 floats) and C tiles (8 x 32) of a row block in 1 MiB.
  EXPECT_EQ(b.max_row_panels, (1 << 20) / ((2304 * 8 + 256) * 4));
}

TEST(FloatGemmBlocking, KWithinTheBlockIsOneBlockAsBefore) {
  const FloatGemmBlocking b = float_gemm_blocking(gemm_with_k({16, 3, 3}), 8, 32, caches(48 << 10, 2 << 20));
  EXPECT_EQ(b.k_blocks, 1);
  EXPECT_EQ(b.kc, 144);
  EXPECT_EQ(b.axis_step, 16);
  EXPECT_EQ(b.max_row_panels, (1 << 20) / (144 * 8 * 4));  // no C tiles wait for later blocks
}

TEST(FloatGemmBlocking, APanelThatFitsTheL1StaysWhole) {
  // K = 256 at NR 32: a 32 KB B panel in a 48 KB L1: one block. K = 512
  // (64 KB) overflows it: 3 blocks within 24 KB (192 k values), of 171, 171, 170.
  const FloatGemmBlocking whole = float_gemm_blocking(gemm_with_k({256}), 8, 32, caches(48 << 10, 2 << 20));
  EXPECT_EQ(whole.k_blocks, 1);
  EXPECT_EQ(whole.kc, 256);
  const FloatGemmBlocking split = float_gemm_blocking(gemm_with_k({512}), 8, 32, caches(48 << 10, 2 << 20));
  EXPECT_EQ(split.k_blocks, 3);
  EXPECT_EQ(split.kc, 171);
}

TEST(FloatGemmBlocking, AMatMulSplitsKEvenlyWithATail) {
  // scalar (4 x 8), 1 KB L1: at most 16 k values; K = 101: 7 blocks of 15, the last 11.
  const FloatGemmBlocking b = float_gemm_blocking(gemm_with_k({101}), 4, 8, caches(1024, 1 << 20));
  EXPECT_EQ(b.kc, 15);
  EXPECT_EQ(b.k_blocks, 7);
  EXPECT_EQ(101 - 6 * b.kc, 11);
}

TEST(FloatGemmBlocking, LeadingUnitAxesAreSkipped) {
  const FloatGemmBlocking b = float_gemm_blocking(gemm_with_k({1, 1, 100}), 4, 8, caches(1024, 1 << 20));
  EXPECT_EQ(b.k_axis, 2);
  EXPECT_EQ(b.kc, 15);  // 100 = 7 blocks: 6 of 15, one of 10
  EXPECT_EQ(b.k_blocks, 7);
}

TEST(FloatGemmBlocking, AWindowLargerThanTheBlockTakesOneChannelPerBlock) {
  // 5 channels of an 11 x 11 window against 16 k values: one channel (121) per block.
  const FloatGemmBlocking b = float_gemm_blocking(gemm_with_k({5, 11, 11}), 4, 8, caches(1024, 1 << 20));
  EXPECT_EQ(b.axis_step, 1);
  EXPECT_EQ(b.kc, 121);
  EXPECT_EQ(b.k_blocks, 5);
}

TEST(FloatGemmBlocking, UnknownCachesFallBackToDefaults) {
  // No L1 size: 32 KB (16 KB of B: 128 k values at NR 32); no L2: 2 MiB.
  const FloatGemmBlocking b = float_gemm_blocking(gemm_with_k({1000}), 8, 32, caches(0, 0));
  EXPECT_EQ(b.k_blocks, 8);
  EXPECT_EQ(b.kc, 125);
  EXPECT_EQ(b.max_row_panels, (1 << 20) / ((8000 + 256) * 4));
}

TEST(FloatGemmBlocking, ATinyL1StillMakesProgress) {
  const FloatGemmBlocking b = float_gemm_blocking(gemm_with_k({7}), 8, 32, caches(16, 1 << 20));
  EXPECT_EQ(b.kc, 1);
  EXPECT_EQ(b.k_blocks, 7);
  EXPECT_GE(b.max_row_panels, 1);
}

// A conv of `filters` output channels: M = out_shape[1] (the row axis).
Gemm conv_gemm(int64_t filters, std::vector<int64_t> k_extents) {
  Gemm m = gemm_with_k(std::move(k_extents));
  m.out_shape = {1, filters, 14, 14};
  m.row_axes = {1};
  m.col_axes = {0, 2, 3};
  return m;
}

TEST(FloatGemmBlocking, ConvFiltersOverflowingTheRowBlockPutTheKBlocksOutside) {
  // ResNet-50's 3x3 convs over 256 channels, 256 filters: 32 A panels of
  // 2304 x 8 floats against 14 per row block (k inside). k outer, a row
  // block holds one k block of its A panels (180 x 8 floats each) in half
  // the 1 MiB budget and the C tiles (8 x 32 floats) in the other half.
  const FloatGemmBlocking b =
      float_gemm_blocking(conv_gemm(256, {256, 3, 3}), 8, 32, caches(48 << 10, 2 << 20), {true, false});
  EXPECT_TRUE(b.k_outer);
  EXPECT_EQ(b.kc, 180);
  EXPECT_EQ(b.k_blocks, 13);
  EXPECT_EQ(b.max_row_panels, (512 << 10) / (1440 * 4));  // 91: all 32 panels in one block
  EXPECT_EQ(b.max_c_tiles, (512 << 10) / (256 * 4));
}

TEST(FloatGemmBlocking, KStaysInsideWhereAllFiltersFitTheRowBlock) {
  // A row block holds 14 A panels of 2304 x 8 floats: 128 filters (16
  // panels) overflow it, k outer; 64 filters (8 panels) fit, k inside.
  const ArchSpec arch = caches(48 << 10, 2 << 20);
  EXPECT_TRUE(float_gemm_blocking(conv_gemm(128, {256, 3, 3}), 8, 32, arch, {true, false}).k_outer);
  const FloatGemmBlocking fits = float_gemm_blocking(conv_gemm(64, {256, 3, 3}), 8, 32, arch, {true, false});
  EXPECT_FALSE(fits.k_outer);
  EXPECT_EQ(fits.max_row_panels, (1 << 20) / ((2304 * 8 + 256) * 4));
  EXPECT_EQ(fits.max_c_tiles, 0);
}

TEST(FloatGemmBlocking, KOuterOnlyForPackedFiltersAndRunTimeColumns) {
  const ArchSpec arch = caches(48 << 10, 2 << 20);
  const Gemm m = conv_gemm(256, {256, 3, 3});
  // B packed at compile time (x @ W): reading it is free, nothing to save.
  EXPECT_FALSE(float_gemm_blocking(m, 8, 32, arch, {false, true}).k_outer);
  // A packed at run time: the row block packs all of K anyway.
  EXPECT_FALSE(float_gemm_blocking(m, 8, 32, arch, {false, false}).k_outer);
  // One k block: nothing to put outside.
  EXPECT_FALSE(float_gemm_blocking(conv_gemm(4096, {256}), 8, 32, arch, {true, false}).k_outer);
}

// x @ W with W [k, n] packed at compile time: M = out_shape[0].
Gemm matmul_gemm(int64_t rows, int64_t k, int64_t cols) {
  Gemm m = gemm_with_k({k});
  m.out_shape = {rows, cols};
  m.row_axes = {0};
  m.col_axes = {1};
  return m;
}

TEST(FloatGemmBlocking, WeightsThatOverflowTheL2LetTheRowBlockFillIt) {
  const ArchSpec arch = caches(48 << 10, 2 << 20);
  // bert-base's FFN output: 128 x 3072 @ 3072 x 768 (9.4 MB of B). A panel
  // of 3072 x 8 floats and its C tile (8 x 32): 10 of them in half the L2,
  // 21 in all of it, so all 16 row panels stream B once.
  const int64_t per_panel = (3072 * 8 + 256) * 4;
  const FloatGemmBlocking streamed = float_gemm_blocking(matmul_gemm(128, 3072, 768), 8, 32, arch, {false, true});
  EXPECT_EQ(streamed.k_blocks, 16);
  EXPECT_EQ(streamed.max_row_panels, (2 << 20) / per_panel);
  EXPECT_EQ(streamed.max_row_panels, 21);
  // 3072 x 160 (1.9 MB of B) fits the L2: half of it, as before.
  EXPECT_EQ(float_gemm_blocking(matmul_gemm(128, 3072, 160), 8, 32, arch, {false, true}).max_row_panels,
            (1 << 20) / per_panel);
  // Both operands run-time, rows that fit half the L2: half, k inside.
  const FloatGemmBlocking activations = float_gemm_blocking(matmul_gemm(64, 3072, 768), 8, 32, arch, {false, false});
  EXPECT_FALSE(activations.k_outer);
  EXPECT_EQ(activations.max_row_panels, (1 << 20) / per_panel);
}

TEST(FloatGemmBlocking, StreamedWeightsWithRowsBeyondTheRowBlockPackAPerKBlock) {
  ArchSpec arch = caches(48 << 10, 2 << 20);
  arch.l3_bytes = 4 << 20;  // all of A (2.4 MB) beyond half of it
  // ViT-B/16's FFN output: 197 x 3072 @ 3072 x 768. 25 row panels of 3072 x 8
  // floats against 21 in the L2: k outer, A packed one k block (192 x 8
  // floats) at a time, so one row block holds all 25 and streams B once.
  const FloatGemmBlocking b = float_gemm_blocking(matmul_gemm(197, 3072, 768), 8, 32, arch, {false, true});
  EXPECT_TRUE(b.k_outer);
  EXPECT_TRUE(b.a_per_k_block);
  EXPECT_EQ(b.kc, 192);
  EXPECT_EQ(b.max_row_panels, (1 << 20) / (192 * 8 * 4));
  EXPECT_GE(b.max_row_panels, 25);
  EXPECT_EQ(b.max_c_tiles, (1 << 20) / (8 * 32 * 4));
  // bert-base's (128 rows: 16 panels) fit the row block: k inside, as before.
  const FloatGemmBlocking bert = float_gemm_blocking(matmul_gemm(128, 3072, 768), 8, 32, arch, {false, true});
  EXPECT_FALSE(bert.k_outer);
  EXPECT_FALSE(bert.a_per_k_block);
  // Weights that fit the L2 (3072 x 160): k inside.
  EXPECT_FALSE(float_gemm_blocking(matmul_gemm(197, 3072, 160), 8, 32, arch, {false, true}).k_outer);
  // A conv's several reduce axes keep whole-K A panels (pack_a's tables).
  EXPECT_FALSE(float_gemm_blocking(conv_gemm(197, {512, 3, 3}), 8, 32, arch, {false, true}).a_per_k_block);
}

// The same GEMM where all of A's panels (25 x 3072 x 8 floats, 2.4 MB) fit
// half an 8 MB L3: k outer over one row block of every row panel, A packed
// whole (once per task run) rather than again per k block and column group.
TEST(FloatGemmBlocking, StreamedWeightsPackAWholeWhereItFitsHalfTheL3) {
  ArchSpec arch = caches(48 << 10, 2 << 20);
  arch.l3_bytes = 8 << 20;
  const FloatGemmBlocking b = float_gemm_blocking(matmul_gemm(197, 3072, 768), 8, 32, arch, {false, true});
  EXPECT_TRUE(b.k_outer);
  EXPECT_FALSE(b.a_per_k_block);
  EXPECT_EQ(b.kc, 192);
  EXPECT_EQ(b.max_row_panels, 25);
  EXPECT_EQ(b.max_c_tiles, (1 << 20) / (8 * 32 * 4));
  // Just past half the L3 (2.4 MB against half of a 4.7 MB L3): per k block.
  arch.l3_bytes = 4700 << 10;
  EXPECT_TRUE(float_gemm_blocking(matmul_gemm(197, 3072, 768), 8, 32, arch, {false, true}).a_per_k_block);
  // All of A within half the L3 but one k block of it (175 panels of 192 x 8
  // floats, 1.05 MB) beyond the row block's half of the L2 budget: per k block.
  arch.l3_bytes = 64 << 20;
  EXPECT_TRUE(float_gemm_blocking(matmul_gemm(1400, 3072, 768), 8, 32, arch, {false, true}).a_per_k_block);
  // Both operands activations: per k block whatever the L3 (B is packed per
  // k block there too).
  EXPECT_TRUE(float_gemm_blocking(matmul_gemm(197, 3072, 768), 8, 32, arch, {false, false}).a_per_k_block);
}

// Both operands activations, K long (Restormer's channel attention: q @ k^T
// over 256 x 256 pixels, 96 x 65536 @ 65536 x 96): a row panel's A over all
// of K (2 MB) overflows half the L2, so row blocks of whole-K panels would
// each pack every B panel again. k outer with A per k block instead: one
// row block of 12 panels, each k block of A and of B packed once.
TEST(FloatGemmBlocking, ActivationsWithALongKPackAPerKBlock) {
  const ArchSpec arch = caches(48 << 10, 2 << 20);
  const FloatGemmBlocking b = float_gemm_blocking(matmul_gemm(96, 65536, 96), 8, 32, arch, {false, false});
  EXPECT_TRUE(b.k_outer);
  EXPECT_TRUE(b.a_per_k_block);
  EXPECT_EQ(b.kc, 192);  // a 192 x 32 B block: half the 48 KB L1
  EXPECT_EQ(b.k_blocks, 342);
  EXPECT_EQ(b.max_row_panels, (512 << 10) / (192 * 8 * 4));  // 85: all 12 panels in one block
  EXPECT_EQ(b.max_c_tiles, (512 << 10) / (8 * 32 * 4));
  // 197 x 3072 @ 3072 x 768 as activations: 25 whole-K panels against 10.
  EXPECT_TRUE(float_gemm_blocking(matmul_gemm(197, 3072, 768), 8, 32, arch, {false, false}).a_per_k_block);
  // K within one block (attention's q @ k^T over 64 channels): k inside.
  EXPECT_FALSE(float_gemm_blocking(matmul_gemm(197, 64, 197), 8, 32, arch, {false, false}).k_outer);
  // A conv's several reduce axes keep whole-K A panels.
  EXPECT_FALSE(float_gemm_blocking(conv_gemm(4096, {512, 3, 3}), 8, 32, arch, {false, false}).a_per_k_block);
}

// Column groups (B packed at run time over all of K): panels of K x 32
// floats within an eighth of a 1 MB L2 (128 KB) or half of the 32 KB L1,
// whichever is larger, at most 8. K = 16 (2 KB panels) and 64 (8 KB): 8;
// K = 256 (32 KB, one k block): 4. With a 64 KB L2 half the L1 (16 KB)
// bounds them: K = 64: 2, K = 256: 1. Packed weights as B, or K in blocks:
// no groups.
TEST(FloatGemmBlocking, RunTimeColumnPanelsGroupWithinTheCaches) {
  const ArchSpec arch = caches(32 << 10, 1 << 20);
  EXPECT_EQ(float_gemm_blocking(conv_gemm(96, {16}), 8, 32, arch, {true, false}).b_group, 8);
  EXPECT_EQ(float_gemm_blocking(conv_gemm(96, {64}), 8, 32, arch, {true, false}).b_group, 8);
  EXPECT_EQ(float_gemm_blocking(conv_gemm(96, {256}), 8, 32, arch, {true, false}).b_group, 4);
  const ArchSpec small_l2 = caches(32 << 10, 64 << 10);
  EXPECT_EQ(float_gemm_blocking(conv_gemm(96, {64}), 8, 32, small_l2, {true, false}).b_group, 2);
  EXPECT_EQ(float_gemm_blocking(conv_gemm(96, {256}), 8, 32, small_l2, {true, false}).b_group, 1);
  EXPECT_EQ(float_gemm_blocking(conv_gemm(96, {16}), 8, 32, arch, {false, true}).b_group, 1);
  const FloatGemmBlocking blocked = float_gemm_blocking(conv_gemm(96, {256, 3, 3}), 8, 32, arch, {true, false});
  EXPECT_GT(blocked.k_blocks, 1);
  EXPECT_EQ(blocked.b_group, 1);
}

}  // namespace
}  // namespace tilegraph::scheduler
