#include "compiler/passes/quantize_matmul.h"

#include <set>

#include "compiler/passes/inline_producer.h"

namespace tilegraph::passes {

namespace {

bool is_int8(DType t) { return t == DType::kI8 || t == DType::kU8; }

bool uses_var(const Expr& e, int id) {
  bool found = false;
  visit(e, [&](const Expr& n) { found |= n->kind == ExprKind::kVar && n->int_value == id; });
  return found;
}

// One dequantized operand: (f(q) - f(zp)) * scale or f(q) * scale, q int8/uint8.
struct Dequantized {
  Expr q;      // int8 / uint8 expression
  Expr zp;     // its zero point as an integer expression, or null
  Expr scale;  // float
};

bool match_dequantized(const Expr& e, int k_var, Dequantized* out) {
  if (e->kind != ExprKind::kBinary || e->binary_op != BinaryOp::kMul) return false;
  for (int side = 0; side < 2; ++side) {
    Expr value = e->args[static_cast<size_t>(side)], scale = e->args[static_cast<size_t>(1 - side)];
    Expr zp;
    if (value->kind == ExprKind::kBinary && value->binary_op == BinaryOp::kSub) {
      zp = value->args[1];
      value = value->args[0];
      if (zp->kind != ExprKind::kCast || !is_int8(zp->args[0]->dtype)) continue;
      zp = zp->args[0];
    }
    if (value->kind != ExprKind::kCast || !is_float(value->dtype) || !is_int8(value->args[0]->dtype)) continue;
    if (uses_var(scale, k_var) || (zp && uses_var(zp, k_var)) || !is_float(scale->dtype)) continue;
    *out = {value->args[0], zp, scale};
    return true;
  }
  return false;
}

Expr integer_operand(const Dequantized& d) {
  const Expr q = cast(DType::kI32, d.q);
  return d.zp ? q - cast(DType::kI32, d.zp) : q;
}

// Shifts every load slot in e by `by`.
Expr shift_slots(const Expr& e, int by) {
  return rewrite(e, [&](const Expr& n) -> Expr {
    if (n->kind != ExprKind::kLoad) return nullptr;
    return load(static_cast<int>(n->int_value) + by, n->dtype, n->args);
  });
}

}  // namespace

Graph quantize_matmul(const Graph& g) {
  Graph result = g;
  result.ops.clear();
  bool changed = false;
  for (const Op& op : g.ops) {
    const int rank = static_cast<int>(g.tensor(op.output).shape.size());
    const bool float_matmul = op.reduction == Reduction::kSum && op.reduce_extents.size() == 1 &&
                              is_float(g.tensor(op.output).dtype) && op.body->kind == ExprKind::kBinary &&
                              op.body->binary_op == BinaryOp::kMul;
    if (!float_matmul) {
      result.ops.push_back(op);
      continue;
    }
    // Inline the operands' elementwise producers (the DequantizeLinear ops).
    Op inlined = op;
    for (TensorId t : std::set<TensorId>(op.inputs.begin(), op.inputs.end())) {
      const int p = g.producer(t);
      if (p >= 0 && g.ops[static_cast<size_t>(p)].reduction == Reduction::kNone)
        inline_producer(inlined, g.ops[static_cast<size_t>(p)]);
    }
    Dequantized a, b;
    if (inlined.body->kind != ExprKind::kBinary || inlined.body->binary_op != BinaryOp::kMul ||
        !match_dequantized(inlined.body->args[0], rank, &a) ||
        !match_dequantized(inlined.body->args[1], rank, &b)) {
      result.ops.push_back(op);
      continue;
    }
    Tensor acc_t;
    acc_t.name = g.tensor(op.output).name + "_int32";
    acc_t.dtype = DType::kI32;
    acc_t.shape = g.tensor(op.output).shape;
    const TensorId acc = result.add_tensor(acc_t);
    Op gemm = inlined;
    gemm.name = result.unique_op_name("int_matmul");
    gemm.output = acc;
    gemm.body = integer_operand(a) * integer_operand(b);
    drop_unused_inputs(gemm);

    Op scale = inlined;  // out = f32(acc) * sa * sb, at the output's own index
    scale.reduction = Reduction::kNone;
    scale.reduce_extents.clear();
    scale.inputs.insert(scale.inputs.begin(), acc);
    std::vector<Expr> identity;
    for (int d = 0; d < rank; ++d) identity.push_back(var(d));
    const DType ft = g.tensor(op.output).dtype;
    scale.body = cast(ft, load(0, DType::kI32, identity)) * shift_slots(a.scale, 1) * shift_slots(b.scale, 1);
    drop_unused_inputs(scale);
    result.ops.push_back(std::move(gemm));
    result.ops.push_back(std::move(scale));
    changed = true;
  }
  return changed ? result : g;
}

}  // namespace tilegraph::passes
