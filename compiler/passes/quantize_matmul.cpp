#include "compiler/passes/quantize_matmul.h"

#include <set>

#include "compiler/passes/inline_producer.h"

namespace tilegraph::passes {

namespace {

bool is_int8(DType t) { return t == DType::kI8 || t == DType::kU8; }

// Does e read any var in [lo, hi) (the reduce axes)?
bool uses_vars(const Expr& e, int lo, int hi) {
  return any_node(e, [&](const Expr& n) { return n->kind == ExprKind::kVar && n->int_value >= lo && n->int_value < hi; });
}

// One dequantized operand: (f(q) - f(zp)) * scale or f(q) * scale, q int8/uint8.
struct Dequantized {
  Expr q;      // int8 / uint8 expression
  Expr zp;     // its zero point as an integer expression, or null
  Expr scale;  // float
};

bool match_dequantized(const Expr& e, int k_lo, int k_hi, Dequantized* out) {
  // A convolution window's padding: select(in window, dequantized x, 0) is
  // the dequantized select(in window, x, zero point).
  if (e->kind == ExprKind::kSelect && is_const(e->args[2]) && is_float(e->dtype)) {
    const Expr zero = e->args[2];
    if (zero->kind != ExprKind::kFloatImm || zero->float_value != 0.0) return false;
    Dequantized inner;
    if (!match_dequantized(e->args[1], k_lo, k_hi, &inner)) return false;
    const Expr pad = inner.zp ? inner.zp : int_imm(0, inner.q->dtype);
    *out = {select(e->args[0], inner.q, pad), inner.zp, inner.scale};
    return true;
  }
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
    if (uses_vars(scale, k_lo, k_hi) || (zp && uses_vars(zp, k_lo, k_hi)) || !is_float(scale->dtype)) continue;
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
    const int k_hi = rank + static_cast<int>(op.reduce_extents.size());
    const bool float_matmul = op.reduction == Reduction::kSum && !op.reduce_extents.empty() &&
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
        !match_dequantized(inlined.body->args[0], rank, k_hi, &a) ||
        !match_dequantized(inlined.body->args[1], rank, k_hi, &b)) {
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
