// Depthwise convolutions (ONNX Conv with group == input channels, any
// channel multiplier) for the direct CPU kernel
// (codegen/lower_depthwise_conv_kernel.h). Such a conv has one weight per
// (filter, tap) and no channel reduction, so it is no GEMM worth the
// micro-kernel (one row per filter); the loop nest computed each output as
// a reduction with a padding select and clamped gather per tap.
//
// The form recognized (what frontends/onnx/ops/conv_pool.cpp emits for a
// 2-D float conv whose groups hold one input channel):
//   out[n, m, oh, ow] = sum over taps t of  X' * W'
//   W': a load of constants that reads neither n nor oh nor ow;
//   X': load(X, [n-only, m-only, oh and taps only, ow and taps only]),
//       optionally select(guard, load, 0.0) where each conjunct of the guard
//       reads oh and taps, or ow and taps (the padding test of one axis).
// The taps are the op's reduce axes, at most kMaxDepthwiseTaps of them.
#pragma once
#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"

namespace tilegraph::scheduler {

// Sums of more taps than this keep the loop nest (the direct kernel unrolls
// the taps into one expression per output).
constexpr int64_t kMaxDepthwiseTaps = 49;

bool is_depthwise_conv(const Graph& g, const Op& op);

// The two factors of a depthwise conv's body: the window (X') and the
// weight (W'). Both null when `op` is not one.
struct DepthwiseFactors {
  Expr window;
  Expr weight;
};
DepthwiseFactors depthwise_factors(const Graph& g, const Op& op);

// The conjuncts of a guard `a && b && ...` (a non-And expression is its own).
std::vector<Expr> conjuncts(const Expr& guard);

}  // namespace tilegraph::scheduler
