#include "scheduler/float_gemm_blocking.h"

#include <algorithm>

#include "compiler/ir/int_math.h"

namespace tilegraph::scheduler {

namespace {

// Packed panels start on 64-byte lines: 16 floats (as the lowering pads them).
int64_t padded_floats(int64_t n) { return ceil_div(n, 16) * 16; }

constexpr int64_t kFloatBytes = 4;

// Column panels packed together at most: 8 runs of NR floats (1 KB per
// stream with NR = 32). MobileNetV2's 112 x 112 1x1 convs measured the same
// in groups of 4 and 8.
constexpr int64_t kMaxColumnGroup = 8;

}  // namespace

FloatGemmBlocking float_gemm_blocking(const Gemm& m, int mr, int nr, const ArchSpec& arch, PackedOperands packed) {
  FloatGemmBlocking b;
  const int64_t k = std::max<int64_t>(m.k, 1);
  b.kc = k;
  // The first reduce axis that is not a unit one; the axes before it have
  // one index, those after it go whole into every block.
  const int axes = static_cast<int>(m.k_extents.size());
  while (b.k_axis + 1 < axes && m.k_extents[static_cast<size_t>(b.k_axis)] == 1) ++b.k_axis;
  const int64_t extent = axes > 0 ? m.k_extents[static_cast<size_t>(b.k_axis)] : 1;
  b.axis_step = extent;
  int64_t inner = 1;
  for (int a = b.k_axis + 1; a < axes; ++a) inner *= m.k_extents[static_cast<size_t>(a)];

  // kc: where a whole B panel (K x NR) overflows the L1 (32 KB when the
  // arch does not say), blocks of it within half the L1. A panel that fits
  // stays there as it is (ResNet-50's K = 256 1x1 convs, a 32 KB panel
  // against a 48 KB L1, ran 8% slower in blocks: the C tiles' round trips).
  const int64_t l1 = arch.l1_bytes > 0 ? arch.l1_bytes : (32 << 10);
  const int64_t kc_max = std::max<int64_t>(l1 / 2 / (nr * kFloatBytes), 1);
  if (k * nr * kFloatBytes > l1 && extent > 1) {
    const int64_t most_slices = std::max<int64_t>(kc_max / std::max<int64_t>(inner, 1), 1);
    b.k_blocks = ceil_div(extent, most_slices);
    b.axis_step = ceil_div(extent, b.k_blocks);  // even blocks: a tail only where they cannot be
    b.k_blocks = ceil_div(extent, b.axis_step);
    b.kc = b.axis_step * inner;
  }

  // mc: a row block's A panels (and, with k blocks, its C tiles) within half
  // the L2 (1 MiB when the arch does not say). Where B is packed at compile
  // time (weights) and all of it overflows the L2, every row block streams
  // all of B again from L3 or DRAM: there the row block may fill the whole
  // L2 (bert-base's FFN output, K = 3072 and 16 row panels, in one row block
  // instead of two: 6.1 -> 5.1-5.8 ms on one core; two cores then split its
  // columns, each streaming half of B once).
  const int64_t l2 = arch.l2_bytes > 0 ? arch.l2_bytes : (2 << 20);
  const int64_t b_bytes = k * ceil_div(std::max<int64_t>(m.cols(), 1), nr) * nr * kFloatBytes;
  const bool b_streams = packed.b && !packed.a && b_bytes > l2;
  const int64_t budget = b_streams ? l2 : l2 / 2;
  const int64_t per_row_panel = padded_floats(k * mr) + (b.k_blocks > 1 ? int64_t{mr} * nr : 0);
  b.max_row_panels = std::max<int64_t>(budget / (per_row_panel * kFloatBytes), 1);
  const int64_t row_panels = ceil_div(std::max<int64_t>(m.rows(), 1), mr);
  if (b.k_blocks > 1 && packed.a && !packed.b && row_panels > b.max_row_panels) {
    // k outer, where all of M's A panels overflow the row block (so each of
    // several row blocks would pack every B panel again): half the budget
    // for the row block's A panels of one k block, half for the C tiles.
    // Where they fit, k inside keeps each C tile in L1 across the blocks and
    // fills a conv's column table once per panel (ResNet-50's 3x3 convs over
    // 64 and 128 channels ran 10-20% slower k outer).
    b.k_outer = true;
    b.max_row_panels = std::max<int64_t>(budget / 2 / (padded_floats(b.kc * mr) * kFloatBytes), 1);
    b.max_c_tiles = std::max<int64_t>(budget / 2 / (int64_t{mr} * nr * kFloatBytes), 1);
  } else if (b.k_blocks > 1 && axes == 1 && row_panels > b.max_row_panels && (b_streams || !packed.b)) {
    // k outer with A packed one k block at a time, where the rows' A panels
    // (all of K) overflow the row block and several row blocks would each
    // go over all of B again:
    //   * the weights as B, all of it beyond the L2: each row block streams
    //     it from L3 or DRAM (ViT-B/16's FFN output, 197 x 3072 @ 3072 x
    //     768: 25 row panels against 21, 6.7 ms where its FFN input with the
    //     same FLOPs took 5.7);
    //   * both operands activations: each row block packs every B panel
    //     over all of K (Restormer's channel attention, q @ k^T over the
    //     pixels, 96 x 65536 @ 65536 x 96: one row panel's A is 2 MB; 12
    //     row blocks each packed all 25 MB of B, 148 ms against
    //     onnxruntime's 19; k outer 37 ms. x @ W with W an activation, one
    //     core, against k inside: 128 x 3072 @ 3072 x 768 0.86x the time,
    //     197 x 3072 @ 3072 x 768 and 784 x 512 @ 512 x 196 within 3%).
    // Instead the row block packs its A one k block at a time (half the
    // budget) and keeps the C tiles of a group of column panels (the other
    // half) while every B block is read (or packed) once. One reduce axis
    // only: A's k block is then one contiguous range of k. (A packed and B
    // not, the filters times a conv's patches, takes the branch above.)
    //
    // Where B is the weights, all of A's panels (all of K) fit in half the
    // L3 and one k block of them in the row block's half of the budget, the
    // row block takes every row with A packed whole instead, once per task
    // run (a thread's chunks reuse it): per k block, A was
    // packed again for every group of column panels, reading the
    // activations from L3 or DRAM each time (ViT-B/16's FFN output, 197 x
    // 3072 @ 3072 x 768 on a Zen 1 core: A packed 4 times at one thread, 2
    // groups of 2 chunks, 6% of the GEMM). The k blocks then read their A
    // block from the packed copy in L3 once per group, as prefetchable
    // contiguous panels.
    b.k_outer = true;
    const int64_t l3 = std::max<int64_t>(arch.l3_bytes, 0);  // 0: no L3, A per k block
    const int64_t panel_block_bytes = padded_floats(b.kc * mr) * kFloatBytes;  // one panel's k block
    const int64_t whole_a = row_panels * padded_floats(k * mr) * kFloatBytes;
    b.a_per_k_block = !(b_streams && whole_a <= l3 / 2 && row_panels * panel_block_bytes <= budget / 2);
    b.max_row_panels = b.a_per_k_block ? std::max<int64_t>(budget / 2 / panel_block_bytes, 1) : row_panels;
    b.max_c_tiles = std::max<int64_t>(budget / 2 / (int64_t{mr} * nr * kFloatBytes), 1);
  }
  // Column groups: B's run-time panels (all of K each) together within half
  // the L1 or an eighth of the L2, whichever is larger, at most
  // kMaxColumnGroup of them. The group is read from L2 by each row panel at
  // little cost, while every row of the input and of the output is a stream
  // that a longer run per visit keeps the prefetchers on (BSRN's 64 -> 64
  // 1x1 convs over 256 x 256, one core, kernel alone: 2 panels of 32 columns
  // 9.3 ms, 4 8.4, 8 8.1, 16 7.9; onnxruntime, on NCHWc blocks, 5.1; the
  // model, one core, 8 against 2: 0.92x the time; MobileNetV2's kernels
  // within 1%, 16 made them 4% slower). (Counting the row block's A panels
  // in the same budget gave MobileNetV2 smaller groups and measured the same.)
  if (!packed.b && b.k_blocks == 1)
    b.b_group = std::clamp<int64_t>(std::max(l1 / 2, l2 / 8) / (padded_floats(k * nr) * kFloatBytes), 1,
                                    kMaxColumnGroup);
  return b;
}

}  // namespace tilegraph::scheduler
