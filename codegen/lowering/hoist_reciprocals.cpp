#include "codegen/lowering/hoist_reciprocals.h"

#include <set>

namespace tilegraph::codegen {

namespace {

// The loop variables bound in s (s included) and the buffers it stores.
void collect_bound(const Stmt& s, std::set<int>* vars, std::set<int>* stored) {
  if (s->kind == StmtKind::kFor) vars->insert(s->var);
  if (s->kind == StmtKind::kStore) stored->insert(s->buffer);
  // A call writes through its pointer arguments.
  for (const CallArg& a : s->args)
    if (a.buffer >= 0) stored->insert(a.buffer);
  for (const Stmt& c : s->body) collect_bound(c, vars, stored);
}

class Hoister {
 public:
  Stmt stmt(const Stmt& s) {
    if (s->kind == StmtKind::kFor && s->loop == LoopKind::kVectorized) {
      std::set<int> vars, stored;
      collect_bound(s, &vars, &stored);
      return rewrite_divisions(s, vars, stored);
    }
    return map_body(s, [&](const Stmt& c) { return stmt(c); });
  }

 private:
  static bool invariant(const Expr& e, const std::set<int>& vars, const std::set<int>& stored) {
    return !any_node(e, [&](const Expr& x) {
      return (x->kind == ExprKind::kVar && vars.count(static_cast<int>(x->int_value))) ||
             (x->kind == ExprKind::kLoad && stored.count(static_cast<int>(x->int_value)));
    });
  }

  // Whether e turns floats into discrete values (rounds, compares, converts
  // to an integer): one ulp there can move a result by a whole step (ONNX's
  // DynamicQuantizeLinear rounds x / scale; Resize's nearest mode floors a
  // coordinate divided by the scale), so such stores keep exact division.
  static bool discretizes(const Expr& e) {
    return any_node(e, [](const Expr& x) {
      if (x->kind == ExprKind::kUnary)
        return x->unary_op == UnaryOp::kFloor || x->unary_op == UnaryOp::kCeil || x->unary_op == UnaryOp::kRound ||
               x->unary_op == UnaryOp::kSign;
      const bool from_float = !x->args.empty() && is_float(x->args[0]->dtype);
      if (x->kind == ExprKind::kBinary)
        return from_float && (is_comparison(x->binary_op) || x->binary_op == BinaryOp::kFloorDiv ||
                              x->binary_op == BinaryOp::kFloorMod || x->binary_op == BinaryOp::kRem);
      return x->kind == ExprKind::kCast && from_float && !is_float(x->dtype);
    });
  }

  static Expr rewrite_value(const Expr& e, const std::set<int>& vars, const std::set<int>& stored) {
    if (discretizes(e)) return e;
    return rewrite(e, [&](const Expr& x) -> Expr {
      const bool float_div = x->kind == ExprKind::kBinary && x->binary_op == BinaryOp::kDiv &&
                             (x->dtype == DType::kF32 || x->dtype == DType::kF64);
      if (!float_div || !invariant(x->args[1], vars, stored)) return nullptr;
      // x's operands are rewritten already (rewrite works bottom-up).
      return binary(BinaryOp::kMul, x->args[0], binary(BinaryOp::kDiv, float_imm(1.0, x->dtype), x->args[1]));
    });
  }

  static Stmt rewrite_divisions(const Stmt& s, const std::set<int>& vars, const std::set<int>& stored) {
    Stmt out = map_body(s, [&](const Stmt& c) { return rewrite_divisions(c, vars, stored); });
    if (out->kind != StmtKind::kStore) return out;
    const Expr value = rewrite_value(out->value, vars, stored);
    if (value == out->value) return out;
    StmtNode n = *out;
    n.value = value;
    return std::make_shared<const StmtNode>(std::move(n));
  }
};

}  // namespace

Kernel hoist_reciprocals(Kernel k) {
  if (!k.body) return k;
  k.body = Hoister().stmt(k.body);
  return k;
}

}  // namespace tilegraph::codegen
