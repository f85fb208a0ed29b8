#include "scheduler/depthwise_conv.h"

#include <set>

#include "scheduler/int_gemm.h"

namespace tilegraph::scheduler {

namespace {

constexpr int kBatch = 0, kChannel = 1, kRow = 2, kCol = 3, kRank = 4;

std::set<int> vars_of(const Expr& e) {
  std::set<int> ids;
  visit(e, [&](const Expr& n) {
    if (n->kind == ExprKind::kVar) ids.insert(static_cast<int>(n->int_value));
  });
  return ids;
}

// Does e read no output axis but `axis` (-1: none), taps allowed when `taps`?
bool reads_only(const Expr& e, int axis, bool taps) {
  for (int v : vars_of(e)) {
    if (v == axis) continue;
    if (v >= kRank && taps) continue;
    return false;
  }
  return true;
}

bool is_window(const Expr& e) {
  Expr x = e;
  if (x->kind == ExprKind::kSelect) {
    if (x->args[2]->kind != ExprKind::kFloatImm || x->args[2]->float_value != 0.0) return false;
    for (const Expr& c : conjuncts(x->args[0]))
      if (!reads_only(c, kRow, true) && !reads_only(c, kCol, true)) return false;
    x = x->args[1];
  }
  if (x->kind != ExprKind::kLoad || x->dtype != DType::kF32 || x->args.size() != kRank) return false;
  return reads_only(x->args[kBatch], kBatch, false) && reads_only(x->args[kChannel], kChannel, false) &&
         reads_only(x->args[kRow], kRow, true) && reads_only(x->args[kCol], kCol, true);
}

bool is_weight(const Graph& g, const Op& op, const Expr& e) {
  bool loads = false;
  visit(e, [&](const Expr& n) { loads |= n->kind == ExprKind::kLoad; });
  return loads && e->dtype == DType::kF32 && !has_indirect_load(e) && reads_only_constants(g, op, e) &&
         reads_only(e, kChannel, true);
}

}  // namespace

std::vector<Expr> conjuncts(const Expr& guard) {
  if (guard->kind == ExprKind::kBinary && guard->binary_op == BinaryOp::kAnd) {
    std::vector<Expr> all = conjuncts(guard->args[0]);
    for (const Expr& c : conjuncts(guard->args[1])) all.push_back(c);
    return all;
  }
  return {guard};
}

DepthwiseFactors depthwise_factors(const Graph& g, const Op& op) {
  const Tensor& out = g.tensor(op.output);
  if (op.reduction != Reduction::kSum || out.dtype != DType::kF32 || out.shape.size() != kRank ||
      op.reduce_extents.empty() || op.body->kind != ExprKind::kBinary || op.body->binary_op != BinaryOp::kMul)
    return {};
  int64_t taps = 1;
  for (int64_t e : op.reduce_extents) taps *= e;
  if (taps > kMaxDepthwiseTaps) return {};
  const Expr& x = op.body->args[0];
  const Expr& y = op.body->args[1];
  if (is_window(x) && is_weight(g, op, y)) return {x, y};
  if (is_window(y) && is_weight(g, op, x)) return {y, x};
  return {};
}

bool is_depthwise_conv(const Graph& g, const Op& op) { return depthwise_factors(g, op).window != nullptr; }

}  // namespace tilegraph::scheduler
