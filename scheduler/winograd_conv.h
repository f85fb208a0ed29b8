// Stride-1, pad-1 3x3 float convolutions for the Winograd F(2x2, 3x3) kernel
// (codegen/lowering/lower_winograd_conv_kernel.h) instead of the implicit
// GEMM on the float micro-kernel: 2.25x fewer multiplies, and on ResNet-50's
// 3x3 convs 32-39% less time (benchmarks/winograd_f23_probe.cpp).
//
// The form recognized (scheduler/direct_conv.h's factors):
//   out[n, m, oh, ow] = sum over (ci, kh, kw) of X' * W'
//   X' = select(0 <= oh + kh - 1 < H and 0 <= ow + kw - 1 < W,
//               load(X, [n, ci, oh + kh - 1, ow + kw - 1]), 0)
//   W' = an expression of constants reading m, ci, kh, kw only,
// with X of shape [N, C, H, W] and out [N, K, H, W] (checked by evaluating
// the indices and the guard at the plane's corners, edges and middle for
// every tap), or X a Concat along the channels inlined into the conv
// (select(ci < C1, X1', ...): compiler/ir/var_ranges.h; UNet's decoder
// convs), each of its ranges such a window of one input; where it pays: C and K at least kMinWinogradChannels (the
// GEMMs' K is C: shorter sums spend their time in the tile's overhead), K a
// multiple of what the micro-kernel asks (match_winograd_conv), C at most kMaxWinogradChannels. The
// 16 transformed planes of a column panel, 16 x C x (tiles per panel)
// floats, stay within the L2: above kMaxFullPanelWinogradChannels a panel
// holds NR / 2 tiles (WinogradConv::panel_tiles).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"

namespace tilegraph::scheduler {

// Positions of the 4 x 4 transformed tile: one GEMM each (codegen/ukernels/winograd_f23_layout.h).
constexpr int64_t kWinogradPositions = 16;
constexpr int64_t kMinWinogradChannels = 32;
constexpr int64_t kMaxWinogradChannels = 1024;
constexpr int64_t kMaxFullPanelWinogradChannels = 512;

// Where a range of the conv's input channels [begin, end) comes from: the
// op's input `input_slot`, of shape [N, end - begin, H, W].
struct WinogradSource {
  int input_slot = -1;
  int64_t begin = 0, end = 0;
};

struct WinogradConv {
  std::vector<WinogradSource> sources;  // one, or one per input of a Concat along the channels
  Expr weight;                          // W', over the op's vars
  int64_t batch = 0, channels = 0, filters = 0, height = 0, width = 0;
  int64_t tiles_w() const { return (width + 1) / 2; }
  int64_t tiles_h() const { return (height + 1) / 2; }
  int64_t tiles() const { return tiles_h() * tiles_w(); }
  // Tiles per column panel for a micro-kernel of nr columns: nr, or nr / 2
  // for many channels or a map that fills no more.
  int64_t panel_tiles(int64_t nr) const {
    return channels > kMaxFullPanelWinogradChannels || tiles() <= nr / 2 ? nr / 2 : nr;
  }
};

// The conv `op` computes, if the Winograd kernel takes it; K must be a
// multiple of filter_multiple (driver/pipeline.cpp's choice per micro-kernel).
std::optional<WinogradConv> match_winograd_conv(const Graph& g, const Op& op, int64_t filter_multiple);

// Transformed filters (16 x C x K floats) from this size on come from DRAM
// in every inference: 8 MiB, more than a core's share of a last-level cache
// keeps between one inference and the next.
constexpr int64_t kStreamedWinogradFilters = 2 << 20;
// With such filters, the fewest tiles (the 16 GEMMs' columns) from which
// Winograd pays on any machine. On fewer the conv may be bound by reading
// its filters, and Winograd's are 16/9 the size of the direct conv's:
// winograd_conv_pays weighs the two against the machine's rates. Measured,
// one thread, Winograd against the implicit GEMM:
//   * Xeon with AVX-512: ResNet-50's 512-channel convs on 7 x 7 (16 tiles,
//     16 MiB of filters): 2.2 against 1.29 ms, both reading their filters at
//     ~7 GB/s; its 256-channel convs on 14 x 14 (49 tiles, 4 MiB): 1.03
//     against 1.24; MobileViT's 160 -> 160 and 320 -> 160 convs on 8 x 8 (16
//     tiles, 1.6 and 3.3 MiB, cached between inferences): 0.13 and 0.25
//     against 0.19 and 0.39.
//   * 2 GHz Zen 1 with AVX2 (half the Xeon's FMA width, and one 256-bit FMA
//     per clock): the 512-channel convs on 7 x 7: 4.1 against 7.0 ms, bound
//     by their arithmetic (the direct conv reads its filters at 1.3 GB/s).
//   * 2-core Zen 4 with AVX-512 on 256-bit FMA pipes (half_width_fma): the
//     512-channel convs on 7 x 7: 1.30 against 2.42 ms (two threads: 1.38
//     against 1.40).
constexpr int64_t kMinStreamedWinogradTiles = 32;

// What decides on a CPU target whether its stride-1 3x3 convs run as
// Winograd (driver/pipeline.cpp fills it from the arch and the float
// micro-kernel).
struct WinogradTarget {
  int64_t filter_multiple = 0;  // K must be a multiple of it (match_winograd_conv); 0: no Winograd convs
  double flops = 0;             // the float micro-kernel's rate, whole device
  double dram_bytes_per_s = 0;
};

// The float micro-kernel's rate that t.flops weighs, whole device: the
// calibrated one, else the spec's peak, halved on a core that runs its
// 512-bit FMAs in two halves (ArchSpec::half_width_fma). The built-in host
// spec counts every FMA pipe full width, so on Zen 4 that peak is twice what
// the GEMMs reach; at it the arithmetic of ResNet-50's 512-channel convs on
// 7 x 7 looked shorter than reading Winograd's filters, and they stayed
// implicit GEMMs (1.9x slower at one thread, measured below).
double winograd_flops(const ArchSpec& arch);

// Whether conv `c` runs faster as Winograd than on the implicit GEMM: small
// filters (cached) or many tiles always; otherwise where the estimate of its
// time, the larger of arithmetic at t.flops and reading its filters at
// t.dram_bytes_per_s, is the smaller.
bool winograd_conv_pays(const WinogradConv& c, const WinogradTarget& t);

}  // namespace tilegraph::scheduler
