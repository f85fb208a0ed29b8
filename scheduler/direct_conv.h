// Convolutions with few products per output, for the direct CPU kernel
// (codegen/lowering/lower_direct_conv_kernel.h) instead of the GEMM micro-kernel or
// the generic loop nest:
//   * depthwise convs (ONNX Conv with group == input channels, any channel
//     multiplier): one weight per (filter, tap) and no channel reduction, so
//     no GEMM worth the micro-kernel (one row per filter), and the loop nest
//     computed each output as a reduction with a padding select and a
//     clamped gather per tap;
//   * k x k convs that sum over input channels too (the lowering supports
//     them) only up to kMaxDirectConvChannels: measured on MobileNetV2, its
//     RGB stem (3x3 stride 2, K = 27) ran no faster direct than as the
//     implicit GEMM (2.3-2.5 ms vs 2.3-2.9 ms alone, model ratio unchanged),
//     and its 1x1 convs over 16-32 channels 2-4x slower, so today the rule
//     takes depthwise convs only.
//
// The form recognized (what frontends/onnx/ops/conv_pool.cpp emits for a
// 2-D float conv):
//   out[n, m, oh, ow] = sum over the reduce axes of  X' * W'
//   W': a load of constants that reads neither n nor oh nor ow;
//   X': load(X, [n-only, m and channel taps only, oh and taps only,
//       ow and taps only]), optionally select(guard, load, 0.0) where each
//       conjunct of the guard reads oh and taps, or ow and taps (the padding
//       test of one axis).
// At most kMaxDirectConvTaps products per output.
#pragma once
#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"

namespace tilegraph::scheduler {

// The direct kernel unrolls the products into one expression per output.
constexpr int64_t kMaxDirectConvTaps = 49;
// Input channels summed per output (the reduce axes the window's channel
// index reads): 1, depthwise only (see above).
constexpr int64_t kMaxDirectConvChannels = 1;

bool is_direct_conv(const Graph& g, const Op& op);

// The two factors of such a conv's body: the window (X') and the weight
// (W'). Both null when `op` is not one.
struct DirectConvFactors {
  Expr window;
  Expr weight;
};
DirectConvFactors direct_conv_factors(const Graph& g, const Op& op);
// For other conv kernels' matchers (scheduler/winograd_conv.h): the load of
// X in a window factor X' (under its padding select, if any; nullptr if it
// is none), and whether a factor is a weight W'.
Expr conv_window_load(const Expr& window);
bool is_conv_weight(const Graph& g, const Op& op, const Expr& e);

}  // namespace tilegraph::scheduler
