#include "scheduler/direct_conv.h"

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

// The load of X' (nullptr if e is no window).
Expr window_load(const Expr& e) {
  Expr x = e;
  if (x->kind == ExprKind::kSelect) {
    if (x->args[2]->kind != ExprKind::kFloatImm || x->args[2]->float_value != 0.0) return nullptr;
    for (const Expr& c : conjuncts(x->args[0]))
      if (!reads_only(c, kRow, true) && !reads_only(c, kCol, true)) return nullptr;
    x = x->args[1];
  }
  if (x->kind != ExprKind::kLoad || x->dtype != DType::kF32 || x->args.size() != kRank) return nullptr;
  const bool window = reads_only(x->args[kBatch], kBatch, false) && reads_only(x->args[kChannel], kChannel, true) &&
                      reads_only(x->args[kRow], kRow, true) && reads_only(x->args[kCol], kCol, true);
  return window ? x : nullptr;
}

bool is_weight(const Graph& g, const Op& op, const Expr& e) {
  return has_load(e) && e->dtype == DType::kF32 && !has_indirect_load(e) && reads_only_constants(g, op, e) &&
         reads_only(e, kChannel, true);
}

// The products per output the direct kernel would unroll are few enough,
// and the conv is depthwise or a small-channel k x k one (direct_conv.h).
bool pays(const Op& op, const Expr& load) {
  int64_t taps = 1, channels = 1;
  for (size_t a = 0; a < op.reduce_extents.size(); ++a) {
    taps *= op.reduce_extents[a];
    if (uses_var(load->args[kChannel], kRank + static_cast<int>(a))) channels *= op.reduce_extents[a];
  }
  return taps <= kMaxDirectConvTaps && (channels == 1 || (channels <= kMaxDirectConvChannels && taps > channels));
}

}  // namespace

DirectConvFactors direct_conv_factors(const Graph& g, const Op& op) {
  const Tensor& out = g.tensor(op.output);
  if (op.reduction != Reduction::kSum || out.dtype != DType::kF32 || out.shape.size() != kRank ||
      op.reduce_extents.empty() || op.body->kind != ExprKind::kBinary || op.body->binary_op != BinaryOp::kMul)
    return {};
  for (int x = 0; x < 2; ++x) {
    const Expr& window = op.body->args[static_cast<size_t>(x)];
    const Expr& weight = op.body->args[static_cast<size_t>(1 - x)];
    const Expr load = window_load(window);
    if (load && is_weight(g, op, weight) && pays(op, load)) return {window, weight};
  }
  return {};
}

Expr conv_window_load(const Expr& window) { return window_load(window); }

bool is_conv_weight(const Graph& g, const Op& op, const Expr& e) { return is_weight(g, op, e); }

bool is_direct_conv(const Graph& g, const Op& op) { return direct_conv_factors(g, op).window != nullptr; }

}  // namespace tilegraph::scheduler
