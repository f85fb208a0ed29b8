// Counting arithmetic, for kernel stats (codegen Kernel::flops, written to
// manifest.json) and for the cost model (scheduler KernelFeatures::flops):
// the counting rules in one place.
#pragma once
#include <cstdint>

#include "compiler/ir/graph.h"

namespace tilegraph {

// Which expression nodes count as work.
enum class FlopRule {
  // Kernel stats: floating-point unary/binary nodes only (a FLOP count).
  kFloatArithmetic,
  // The cost model: every unary/binary node (index and integer arithmetic
  // occupy the same ALUs), and at least one per point (a copy costs too).
  kAllArithmetic,
};

// Arithmetic per point of op's domain (output x reduce axes): its body's
// nodes under `rule`, plus one for a reduction's combine.
int64_t arithmetic_per_point(const Op& op, FlopRule rule);

// Points of op's reduce axes (1 without a reduction; saturates like num_elements).
int64_t reduce_points(const Op& op);

// A batch of (m x k) @ (k x n) products: a multiply and an add per term.
int64_t gemm_flops(int64_t batch, int64_t m, int64_t n, int64_t k);

}  // namespace tilegraph
