#include "codegen/lowering/lower_softmax_kernel.h"

#include <climits>
#include <functional>

#include "codegen/lowering/index_samples.h"
#include "codegen/lowering/kernel_builder.h"
#include "compiler/ir/flops.h"
#include "compiler/ir/simplify.h"

namespace tilegraph::codegen {

namespace {

// Whether `op`'s body at the constant variable values `point` is `expected`.
bool body_is(const Op& op, const std::vector<int64_t>& point, const Expr& expected) {
  std::vector<Expr> values;
  for (int64_t v : point) values.push_back(int_imm(v));
  return to_string(simplify(substitute_vars(op.body, values), {})) == to_string(simplify(expected, {}));
}

// The slot of `op` that reads tensor `id`, or -1.
int slot_of(const Op& op, TensorId id) {
  for (size_t s = 0; s < op.inputs.size(); ++s)
    if (op.inputs[s] == id) return static_cast<int>(s);
  return -1;
}

// Calls `visit(outer, j)` for sampled outer indices (all axes but the last)
// and row positions j; stops at the first false.
bool all_samples(const Shape& shape, const std::function<bool(const std::vector<int64_t>&, int64_t)>& visit) {
  std::vector<std::vector<int64_t>> axes;
  for (size_t d = 0; d + 1 < shape.size(); ++d) axes.push_back(sample_indices(shape[d]));
  const std::vector<int64_t> columns = sample_indices(shape.back());
  std::vector<int64_t> outer(axes.size(), 0);
  std::function<bool(size_t)> walk = [&](size_t d) {
    if (d == axes.size()) {
      for (int64_t j : columns)
        if (!visit(outer, j)) return false;
      return true;
    }
    for (int64_t v : axes[d]) {
      outer[d] = v;
      if (!walk(d + 1)) return false;
    }
    return true;
  };
  return walk(0);
}

std::vector<Expr> indices(const std::vector<int64_t>& outer, int64_t last) {
  std::vector<Expr> out;
  for (int64_t v : outer) out.push_back(int_imm(v));
  out.push_back(int_imm(last));
  return out;
}

std::vector<int64_t> point(const std::vector<int64_t>& outer, std::vector<int64_t> rest) {
  std::vector<int64_t> p = outer;
  p.insert(p.end(), rest.begin(), rest.end());
  return p;
}

bool has_shape(const Graph& g, TensorId id, const Shape& shape) {
  const Tensor& t = g.tensor(id);
  return t.dtype == DType::kF32 && t.shape == shape;
}

class SoftmaxBuilder : KernelBuilder {
 public:
  SoftmaxBuilder(const Graph& g, const std::vector<Op>& phases, const scheduler::KernelSchedule& schedule)
      : KernelBuilder(g), phases_(phases) {
    start_single_op_kernel(phases.back(), schedule);
    input_ = add_global(phases.front().inputs[0], false);
    output_ = add_global(phases.back().output, true);
  }

  Kernel build(const SoftmaxRows& rows, const std::string& variant) {
    for (const Op& op : phases_)
      kernel_.flops += arithmetic_per_point(op, FlopRule::kFloatArithmetic) *
                       num_elements(g_.tensor(op.output).shape) * reduce_points(op);
    const int vr = new_var("row", rows.rows);
    const Expr first = finalize_indices(var(vr) * rows.length, bounds_);
    const Stmt call = make_call(str_cat("tg_softmax::row<", rows.length, ">"), {{input_, first}, {output_, first}});
    kernel_.body = make_for(vr, int_imm(rows.rows), LoopKind::kParallel, {call});
    kernel_.ukernel = "softmax_" + variant;
    return std::move(kernel_);
  }

 private:
  const std::vector<Op>& phases_;
  int input_ = -1;
  int output_ = -1;
};

}  // namespace

std::optional<SoftmaxRows> softmax_rows(const Graph& g, const std::vector<Op>& phases) {
  if (phases.size() != 4) return std::nullopt;
  const Op& max = phases[0];
  const Op& exp = phases[1];
  const Op& sum = phases[2];
  const Op& quotient = phases[3];
  if (max.reduction != Reduction::kMax || max.reduce_extents.size() != 1 || max.inputs.size() != 1 ||
      exp.reduction != Reduction::kNone || exp.inputs.size() != 2 || sum.reduction != Reduction::kSum ||
      sum.reduce_extents != max.reduce_extents || sum.inputs != std::vector<TensorId>{exp.output} ||
      quotient.reduction != Reduction::kNone || quotient.inputs.size() != 2)
    return std::nullopt;
  const TensorId x = max.inputs[0];
  for (const Op& op : phases)
    if (op.output == x) return std::nullopt;
  const Shape shape = g.tensor(x).shape;
  if (shape.empty() || num_elements(shape) == 0 || shape.back() != max.reduce_extents[0] || shape.back() > INT_MAX)
    return std::nullopt;
  Shape kept = shape;
  kept.back() = 1;
  if (!has_shape(g, x, shape) || !has_shape(g, max.output, kept) || !has_shape(g, exp.output, shape) ||
      !has_shape(g, sum.output, kept) || !has_shape(g, quotient.output, shape))
    return std::nullopt;
  const int exp_x = slot_of(exp, x), exp_max = slot_of(exp, max.output);
  const int quotient_e = slot_of(quotient, exp.output), quotient_sum = slot_of(quotient, sum.output);
  if (exp_x < 0 || exp_max < 0 || quotient_e < 0 || quotient_sum < 0) return std::nullopt;
  const bool matches = all_samples(shape, [&](const std::vector<int64_t>& outer, int64_t j) {
    const Expr xj = load(exp_x, DType::kF32, indices(outer, j));
    return body_is(max, point(outer, {0, j}), load(0, DType::kF32, indices(outer, j))) &&
           body_is(exp, point(outer, {j}), unary(UnaryOp::kExp, xj - load(exp_max, DType::kF32, indices(outer, 0)))) &&
           body_is(sum, point(outer, {0, j}), load(0, DType::kF32, indices(outer, j))) &&
           body_is(quotient, point(outer, {j}),
                   load(quotient_e, DType::kF32, indices(outer, j)) /
                       load(quotient_sum, DType::kF32, indices(outer, 0)));
  });
  if (!matches) return std::nullopt;
  return SoftmaxRows{num_elements(shape) / shape.back(), shape.back()};
}

Kernel lower_softmax_kernel(const Graph& g, const scheduler::KernelSchedule& schedule, const std::vector<Op>& phases,
                            const SoftmaxRows& rows, const std::string& variant) {
  return SoftmaxBuilder(g, phases, schedule).build(rows, variant);
}

}  // namespace tilegraph::codegen
