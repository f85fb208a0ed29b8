#include "compiler/passes/to_half_precision.h"

#include <algorithm>

#include "compiler/ir/evaluate.h"

namespace tilegraph::passes {

namespace {

bool is_graph_io(const Graph& g, TensorId id) {
  return std::find(g.inputs.begin(), g.inputs.end(), id) != g.inputs.end() ||
         std::find(g.outputs.begin(), g.outputs.end(), id) != g.outputs.end();
}

std::shared_ptr<const std::vector<uint8_t>> rounded_to_half(const Tensor& t) {
  const int64_t n = num_elements(t.shape);
  auto half = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n) * dtype_size(DType::kF16));
  for (int64_t i = 0; i < n; ++i) write_element(half->data(), DType::kF16, i, read_element(t.data->data(), t.dtype, i));
  return half;
}

// e with its float32 arithmetic done in half (`compute` = kF16) or left in
// float32 (`compute` = kF32); loads take the new dtype of what they read
// (`dtypes`, per input slot) and are converted to `compute`.
Expr retyped(const Expr& e, DType compute, const std::vector<DType>& dtypes) {
  switch (e->kind) {
    case ExprKind::kFloatImm:
      return e->dtype == DType::kF32 ? float_imm(e->float_value, compute) : e;
    case ExprKind::kIntImm:
    case ExprKind::kVar:
      return e;
    case ExprKind::kLoad: {
      const DType stored = dtypes[static_cast<size_t>(e->int_value)];
      const Expr l = load(static_cast<int>(e->int_value), stored, e->args);  // indices are integers: unchanged
      return e->dtype == DType::kF32 ? cast(compute, l) : l;
    }
    default: break;
  }
  std::vector<Expr> args;
  for (const Expr& a : e->args) args.push_back(retyped(a, compute, dtypes));
  switch (e->kind) {
    case ExprKind::kUnary: return unary(e->unary_op, args[0]);
    case ExprKind::kBinary: return binary(e->binary_op, args[0], args[1]);
    case ExprKind::kSelect: return select(args[0], args[1], args[2]);
    case ExprKind::kCast: return cast(e->dtype == DType::kF32 ? compute : e->dtype, args[0]);
    case ExprKind::kCheckIndex: return check_index(args[0], e->args[1]->int_value, static_cast<int>(e->int_value));
    default: break;
  }
  return e;
}

}  // namespace

Graph to_half_precision(const Graph& g) {
  Graph h = g;
  bool changed = false;
  for (TensorId id = 0; id < static_cast<TensorId>(h.tensors.size()); ++id) {
    Tensor& t = h.tensor(id);
    if (t.dtype != DType::kF32 || is_graph_io(g, id)) continue;
    if (t.data) t.data = rounded_to_half(t);
    t.dtype = DType::kF16;
    changed = true;
  }
  if (!changed) return g;
  for (Op& op : h.ops) {
    std::vector<DType> dtypes;
    for (TensorId in : op.inputs) dtypes.push_back(h.tensor(in).dtype);
    const DType out = h.tensor(op.output).dtype;
    const bool was_f32 = g.tensor(op.output).dtype == DType::kF32;
    // A float32 graph output is computed in float32 from widened loads.
    op.body = retyped(op.body, was_f32 && out == DType::kF16 ? DType::kF16 : DType::kF32, dtypes);
  }
  return h;
}

}  // namespace tilegraph::passes
