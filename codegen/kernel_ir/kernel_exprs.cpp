#include "codegen/kernel_ir/kernel_exprs.h"

#include "compiler/ir/simplify.h"

namespace tilegraph::codegen {

int add_global_buffer(Kernel& k, const Graph& g, TensorId id, bool written) {
  const Tensor& t = g.tensor(id);
  Buffer b;
  int outputs = 0;
  for (const Buffer& other : k.buffers) outputs += other.written;
  b.name = written ? (outputs == 0 ? "out" : "out" + std::to_string(outputs)) : "in" + std::to_string(k.buffers.size());
  b.dtype = t.dtype;
  b.elements = num_elements(t.shape);
  b.tensor = id;
  b.written = written;
  k.buffers.push_back(b);
  return static_cast<int>(k.buffers.size() - 1);
}

int add_local_buffer(Kernel& k, const std::string& name, DType dtype, int64_t elements, int alignment) {
  Buffer b;
  b.name = name;
  b.dtype = dtype;
  b.elements = elements;
  b.scope = MemoryScope::kLocal;
  b.alignment = alignment;
  k.buffers.push_back(b);
  return static_cast<int>(k.buffers.size() - 1);
}

Expr linear_index(const Shape& shape, const std::vector<Expr>& idx) {
  Expr flat = int_imm(0);
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

Expr clamp_index(Expr i, int64_t extent) { return min(max(std::move(i), int_imm(0)), int_imm(extent - 1)); }

Expr clamp_index_if_needed(Expr i, int64_t extent, const std::vector<Interval>& var_bounds) {
  if (bound_of(i, var_bounds).within(0, extent - 1)) return i;
  return clamp_index(std::move(i), extent);
}

Expr clamp_to_last(Expr i, int64_t extent) { return min(std::move(i), int_imm(extent - 1)); }

Expr to_kernel_loads(const Graph& g, const Op& op, const Expr& e,
                     const std::vector<Interval>& var_bounds) {
  return rewrite(e, [&](const Expr& n) -> Expr {
    if (n->kind != ExprKind::kLoad) return nullptr;
    const Tensor& t = g.tensor(op.inputs[n->int_value]);
    std::vector<Expr> idx;
    for (size_t d = 0; d < n->args.size(); ++d) {
      idx.push_back(clamp_index_if_needed(simplify(n->args[d], var_bounds), t.shape[d], var_bounds));
    }
    return load(static_cast<int>(n->int_value), n->dtype, {linear_index(t.shape, idx)});
  });
}

namespace {

// Whether a conjunct of `guard` says i >= 0 (lower) or i < extent (upper).
bool guard_bounds(const std::vector<Expr>& guard, const Expr& i, int64_t extent, bool lower) {
  for (const Expr& c : guard) {
    int64_t v = 0;
    if (c->kind != ExprKind::kBinary || !same_expr(c->args[0], i) || !is_const_int(c->args[1], &v)) continue;
    if (lower && c->binary_op == BinaryOp::kGe && v >= 0) return true;
    if (!lower && c->binary_op == BinaryOp::kLt && v <= extent) return true;
  }
  return false;
}

class GuardedLoads {
 public:
  GuardedLoads(const Graph& g, const Op& op, const std::vector<Interval>& var_bounds)
      : g_(g), op_(op), bounds_(var_bounds) {}

  // guard: the conjuncts that hold where e is evaluated; *relied set when
  // an index stayed unclamped on their account.
  Expr lower(const Expr& e, const std::vector<Expr>& guard, bool* relied) const {
    std::vector<Expr> args;
    for (size_t a = 0; a < e->args.size(); ++a) {
      if (e->kind == ExprKind::kSelect && a == 1) continue;
      args.push_back(lower(e->args[a], guard, relied));
    }
    if (e->kind == ExprKind::kSelect) {
      std::vector<Expr> inner = guard;
      for (const Expr& c : conjuncts(e->args[0])) inner.push_back(simplify(c, bounds_));
      bool mine = false;
      const Expr t = lower(e->args[1], inner, &mine);
      *relied |= mine;
      return mine ? guarded_select(args[0], t, args[1]) : select(args[0], t, args[1]);
    }
    if (e->kind != ExprKind::kLoad) {
      if (args.empty()) return e;
      auto copy = std::make_shared<ExprNode>(*e);
      copy->args = std::move(args);
      return copy;
    }
    const Tensor& t = g_.tensor(op_.inputs[static_cast<size_t>(e->int_value)]);
    std::vector<Expr> idx;
    for (size_t d = 0; d < args.size(); ++d) {
      const Expr i = simplify(args[d], bounds_);
      const Interval b = bound_of(i, bounds_);
      const bool low = b.lo >= 0 || guard_bounds(guard, i, t.shape[d], true);
      const bool high = b.hi <= t.shape[d] - 1 || guard_bounds(guard, i, t.shape[d], false);
      if (low && high && !b.within(0, t.shape[d] - 1)) *relied = true;
      idx.push_back(low && high ? i : clamp_index(i, t.shape[d]));
    }
    return load(static_cast<int>(e->int_value), e->dtype, {linear_index(t.shape, idx)});
  }

 private:
  const Graph& g_;
  const Op& op_;
  const std::vector<Interval>& bounds_;
};

}  // namespace

Expr to_guarded_kernel_loads(const Graph& g, const Op& op, const Expr& e, const std::vector<Interval>& var_bounds) {
  bool relied = false;
  return GuardedLoads(g, op, var_bounds).lower(e, {}, &relied);
}

Expr finalize_indices(const Expr& e, const std::vector<Interval>& var_bounds) {
  const Expr simple = simplify(e, var_bounds);
  return rewrite(simple, [&](const Expr& n) -> Expr {
    if (n->kind != ExprKind::kBinary || n->dtype != DType::kI64) return nullptr;
    const bool div = n->binary_op == BinaryOp::kFloorDiv, mod = n->binary_op == BinaryOp::kFloorMod;
    int64_t c;
    if (!(div || mod) || !is_const_int(n->args[1], &c) || c <= 0) return nullptr;
    if (bound_of(n->args[0], var_bounds).lo < 0) return nullptr;
    return binary(div ? BinaryOp::kDiv : BinaryOp::kRem, n->args[0], n->args[1]);
  });
}

}  // namespace tilegraph::codegen
