#include "compiler/ir/var_ranges.h"

namespace tilegraph {

std::vector<VarRange> split_var_ranges(const Expr& e, int v, int64_t extent) {
  if (e->kind == ExprKind::kSelect && !uses_var(e->args[0], v) && !uses_var(e->args[2], v)) {
    std::vector<VarRange> ranges = split_var_ranges(e->args[1], v, extent);
    if (ranges.size() == 1) return {{0, extent, e}};
    for (VarRange& r : ranges)
      r.value = is_guarded_select(e) ? guarded_select(e->args[0], r.value, e->args[2])
                                     : select(e->args[0], r.value, e->args[2]);
    return ranges;
  }
  std::vector<VarRange> ranges;
  Expr rest = e;
  int64_t begin = 0;
  while (rest && rest->kind == ExprKind::kSelect) {
    const Expr& c = rest->args[0];
    if (c->kind != ExprKind::kBinary || c->binary_op != BinaryOp::kLt) break;
    const Expr& lhs = c->args[0];
    int64_t bound = 0;
    if (lhs->kind != ExprKind::kVar || lhs->int_value != v || !is_const_int(c->args[1], &bound)) break;
    if (bound <= begin || bound >= extent) break;
    ranges.push_back({begin, bound, rest->args[1]});
    begin = bound;
    rest = rest->args[2];
  }
  ranges.push_back({begin, extent, rest});
  return ranges;
}

}  // namespace tilegraph
