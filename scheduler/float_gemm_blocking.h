// Cache blocking of a float32 GEMM on the micro-kernel (codegen/ukernels/
// sgemm_*.h, lowered by codegen/lowering/lower_float_gemm_kernel.h), from the
// arch's cache sizes:
//   * kc: where a B panel (K x NR floats) overflows the L1
//     (ArchSpec::l1_bytes), K is cut into blocks so that one block of it
//     (kc x NR) fills at most half the L1. The MR-row A panels that stream
//     past it (kc x MR each) then reuse it from L1 instead of rereading a
//     K x NR panel from L2 for every MR rows: a 3x3 conv over 256 channels
//     has K = 2304, a 295 KB B panel against a 48 KB L1.
//   * mc: a row block's packed A panels (all of K) and its C tiles (one per
//     row panel while the k blocks accumulate) fit in half the L2
//     (ArchSpec::l2_bytes), so every column panel rereads them from L2.
//   * k outer: where B is packed at run time (a convolution's input
//     patches) while A is prepacked (its weights) and K runs in blocks, the
//     k-block loop goes outside the column panels: a task packs each B
//     panel's block once and keeps only one k block of its row block's A
//     panels (kc x MR each) in L2, with a C tile per (row panel, column
//     panel) of a group of column panels waiting for the last block. Row
//     blocks are then bounded by the A block, not by all of K, so fewer row
//     blocks repack the same B panels (ResNet-50's 3x3 convs over 256
//     channels: 4 row blocks of 8 panels, each packing every B panel).
//     Likewise where B is the compile-time packed weights, all of B
//     overflows the L2 and all of K's A panels overflow the row block (x @ W
//     with a long K and many rows): A is then packed one k block at a time
//     (a_per_k_block), so one row block holds every row and streams B once;
//     with B the weights and all of A within half the L3, A is packed whole
//     instead, once per task run (not per k block and column group).
//   * column groups: where B is packed at run time over all of K (one k
//     block), a task packs b_group column panels together (within half the
//     L1 or an eighth of the L2) and runs each row panel over all of them
//     before the next. A convolution on a large map with few channels
//     (MobileNetV2's 112 x 112 1x1 convs, K = 16 or 32) is bound by memory:
//     its input's K rows and its output's M rows are that many streams, each
//     read or written NR floats at a time per column panel. A group makes
//     each stream's run b_group times longer (MobileNetV2's 32 -> 16 channel
//     1x1 conv, one core: 0.33 -> 0.25 ms with 4 panels).
// Blocks are whole slices of one reduce axis (the first of extent > 1: a
// conv's input channels, with every window position (kh, kw) of a channel
// in the same block), so the packing loops stay affine per axis and a conv's
// per-column coordinate table serves every block. The slices are spread
// evenly over the blocks; the last may hold fewer (a tail).
#pragma once
#include <cstdint>

#include "scheduler/arch_spec.h"
#include "scheduler/int_gemm.h"

namespace tilegraph::scheduler {

struct FloatGemmBlocking {
  int k_axis = 0;             // the reduce axis (index into Gemm::k_extents) the blocks split
  int64_t axis_step = 1;      // its indices per block (the last block: what is left)
  int64_t kc = 0;             // k values per block: axis_step x the later axes' extents (== K: one block)
  int64_t k_blocks = 1;       // ceil(k_extents[k_axis] / axis_step)
  int64_t max_row_panels = 1; // A panels (MR rows each) one row block may hold
  bool k_outer = false;       // the k-block loop outside the column panels (see above)
  int64_t max_c_tiles = 0;    // k outer: the C tiles (MR x NR) a task keeps across k blocks
  bool a_per_k_block = false; // k outer: A's panels packed per k block (kc x MR each), else whole once
  int64_t b_group = 1;        // column panels a task packs and runs together (B packed at run time, one k block)
};

// Which GEMM operands are packed at compile time (constants: weights).
struct PackedOperands {
  bool a = false;
  bool b = false;
};

// The blocking of GEMM m for a micro-kernel of mr x nr tiles on arch.
FloatGemmBlocking float_gemm_blocking(const Gemm& m, int mr, int nr, const ArchSpec& arch,
                                      PackedOperands packed = {});

}  // namespace tilegraph::scheduler
