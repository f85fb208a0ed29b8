#include "compiler/ir/flops.h"

#include <algorithm>

namespace tilegraph {

int64_t arithmetic_per_point(const Op& op, FlopRule rule) {
  int64_t n = op.reduction == Reduction::kNone ? 0 : 1;
  visit(op.body, [&](const Expr& e) {
    if (e->kind != ExprKind::kUnary && e->kind != ExprKind::kBinary) return;
    if (rule == FlopRule::kAllArithmetic || is_float(e->dtype)) ++n;
  });
  return rule == FlopRule::kAllArithmetic ? std::max<int64_t>(n, 1) : n;
}

int64_t reduce_points(const Op& op) {
  int64_t n = 1;
  for (int64_t r : op.reduce_extents) n = num_elements({n, r});
  return n;
}

int64_t gemm_flops(int64_t batch, int64_t m, int64_t n, int64_t k) { return 2 * batch * m * n * k; }

}  // namespace tilegraph
