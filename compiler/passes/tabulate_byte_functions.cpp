#include "compiler/passes/tabulate_byte_functions.h"

#include <map>
#include <optional>
#include <set>

#include "compiler/passes/fold_constants.h"
#include "compiler/passes/inline_producer.h"

namespace tilegraph::passes {

namespace {

bool is_byte(DType t) { return t == DType::kI8 || t == DType::kU8; }

// Producers inlined while looking for the byte tensor: a GELU is ~6 ops, ~16
// in QDQ form (a Quantize/Dequantize pair around each), plus the bias add.
constexpr int kMaxInlinedOps = 40;
constexpr int64_t kMinElements = 1024;

// Non-constant tensors the body loads.
std::set<TensorId> varying_inputs(const Graph& g, const Op& op) {
  std::set<TensorId> out;
  visit(op.body, [&](const Expr& e) {
    if (e->kind != ExprKind::kLoad) return;
    const TensorId t = op.inputs.at(static_cast<size_t>(e->int_value));
    if (g.tensor(t).kind != TensorKind::kConstant) out.insert(t);
  });
  return out;
}

// The index every load of `slot` uses, if they all use the same one and the
// rest of the body reads only constants at constant indices (no op
// variable outside those loads).
std::optional<std::vector<Expr>> single_index(const Op& op, int slot) {
  std::optional<std::vector<Expr>> index;
  bool ok = true;
  visit(op.body, [&](const Expr& e) {
    if (e->kind != ExprKind::kLoad || e->int_value != slot) return;
    if (!index) {
      index = e->args;
      return;
    }
    for (size_t d = 0; d < e->args.size(); ++d) ok = ok && same_expr(e->args[d], (*index)[d]);
  });
  if (!ok || !index) return std::nullopt;
  const Expr rest = rewrite(op.body, [&](const Expr& e) -> Expr {
    return e->kind == ExprKind::kLoad && e->int_value == slot ? const_of(0, e->dtype) : nullptr;
  });
  bool has_var = false;
  visit(rest, [&](const Expr& e) { has_var |= e->kind == ExprKind::kVar; });
  if (has_var) return std::nullopt;
  return index;
}

bool worth_a_table(const Op& op) {
  int ops = 0;
  bool transcendental = false;
  visit(op.body, [&](const Expr& e) {
    if (e->kind == ExprKind::kUnary || e->kind == ExprKind::kBinary || e->kind == ExprKind::kSelect) ++ops;
    if (e->kind == ExprKind::kUnary)
      switch (e->unary_op) {
        case UnaryOp::kExp: case UnaryOp::kLog: case UnaryOp::kErf: case UnaryOp::kTanh:
        case UnaryOp::kSigmoid: case UnaryOp::kSoftplus: transcendental = true; break;
        default: break;
      }
  });
  return transcendental || ops >= 6;
}

// op with its elementwise producers inlined back to the earliest single byte
// tensor it depends on alone, or nullopt.
std::optional<Op> function_of_one_byte_tensor(const Graph& g, const Op& op) {
  std::optional<Op> best;
  Op cand = op;
  for (int inlined = 0; inlined <= kMaxInlinedOps; ++inlined) {
    if (has_indirect_load(cand.body)) break;
    const std::set<TensorId> varying = varying_inputs(g, cand);
    if (varying.empty()) break;
    if (varying.size() == 1 && is_byte(g.tensor(*varying.begin()).dtype)) best = cand;
    // Inline next: a wider tensor first (it cannot be the root), else the
    // latest-produced byte tensor (the root is upstream of the others).
    TensorId next = -1;
    for (TensorId t : varying) {
      const bool wide = !is_byte(g.tensor(t).dtype);
      const bool next_wide = next >= 0 && !is_byte(g.tensor(next).dtype);
      if (next < 0 || (wide && !next_wide) || (wide == next_wide && g.producer(t) > g.producer(next))) next = t;
    }
    const int p = g.producer(next);
    if (p < 0 || g.ops[static_cast<size_t>(p)].reduction != Reduction::kNone) break;
    inline_producer(cand, g.ops[static_cast<size_t>(p)]);
    drop_unused_inputs(cand);
  }
  return best;
}

std::shared_ptr<const std::vector<uint8_t>> every_byte(DType t) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(256);
  for (int i = 0; i < 256; ++i) (*bytes)[static_cast<size_t>(i)] = static_cast<uint8_t>(t == DType::kI8 ? i - 128 : i);
  return bytes;
}

// The lookup op replacing `op`, with the table added to `result`; nullopt if
// the table does not fold.
std::optional<Op> tabulated(Graph& result, const Op& op, const Op& fn) {
  const TensorId x = *varying_inputs(result, fn).begin();
  int slot = -1;
  for (size_t s = 0; s < fn.inputs.size(); ++s)
    if (fn.inputs[s] == x) slot = static_cast<int>(s);
  const std::optional<std::vector<Expr>> index = single_index(fn, slot);
  if (!index) return std::nullopt;
  const DType x_type = result.tensor(x).dtype;
  // A copy, not a reference: add_tensor below may reallocate the tensors.
  const DType out_type = result.tensor(op.output).dtype;

  Tensor bytes;
  bytes.name = result.unique_op_name(op.name + "_bytes");
  bytes.dtype = x_type;
  bytes.shape = {256};
  bytes.kind = TensorKind::kConstant;
  bytes.data = every_byte(x_type);
  Tensor table;
  table.name = result.unique_op_name(op.name + "_table");
  table.dtype = out_type;
  table.shape = {256};
  Op table_op;
  table_op.name = table.name;
  table_op.inputs = {result.add_tensor(std::move(bytes))};
  table_op.inputs.insert(table_op.inputs.end(), fn.inputs.begin(), fn.inputs.end());
  table_op.output = result.add_tensor(std::move(table));
  table_op.body = rewrite(fn.body, [&](const Expr& e) -> Expr {
    if (e->kind != ExprKind::kLoad) return nullptr;
    if (e->int_value == slot) return load(0, x_type, {var(0)});
    return load(static_cast<int>(e->int_value) + 1, e->dtype, e->args);
  });
  drop_unused_inputs(table_op);  // x's own slot: the body reads the bytes instead
  const auto data = try_fold(result, table_op);
  // Quantize(Dequantize(x)) with the same scale and zero point (QDQ around
  // a Reshape) maps every byte to itself: a copy, no table.
  const bool identity = data && out_type == x_type && *data == *every_byte(x_type);
  if (!data || identity) result.tensors.resize(result.tensors.size() - 2);  // the bytes and the table
  if (!data) return std::nullopt;
  Op lookup = op;
  lookup.source_nodes = fn.source_nodes;
  if (identity) {
    lookup.inputs = {x};
    lookup.body = load(0, x_type, *index);
    return lookup;
  }
  Tensor& t = result.tensor(table_op.output);
  t.kind = TensorKind::kConstant;
  t.data = data;
  lookup.inputs = {table_op.output, x};
  Expr position = cast(DType::kI64, load(1, x_type, *index));
  if (x_type == DType::kI8) position = position + int64_t{128};
  lookup.body = load(0, out_type, {position});
  return lookup;
}

}  // namespace

Graph tabulate_byte_functions(const Graph& g) {
  Graph result = g;
  result.ops.clear();
  bool changed = false;
  for (const Op& op : g.ops) {
    std::optional<Op> lookup;
    if (op.reduction == Reduction::kNone && num_elements(g.tensor(op.output).shape) >= kMinElements)
      if (const std::optional<Op> fn = function_of_one_byte_tensor(g, op); fn && worth_a_table(*fn))
        lookup = tabulated(result, op, *fn);
    result.ops.push_back(lookup ? *lookup : op);
    changed |= lookup.has_value();
  }
  return changed ? result : g;
}

}  // namespace tilegraph::passes
