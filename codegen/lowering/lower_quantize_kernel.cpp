#include "codegen/lowering/lower_quantize_kernel.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "codegen/lowering/index_samples.h"
#include "codegen/lowering/kernel_builder.h"
#include "compiler/ir/flops.h"
#include "compiler/ir/quantized_values.h"
#include "compiler/ir/simplify.h"

namespace tilegraph::codegen {

namespace {

// The sampled points a body is checked at, at most: 5 samples on each of 6 axes.
constexpr int64_t kMaxSamplePoints = 5 * 5 * 5 * 5 * 5 * 5;

// Elements per micro-kernel call: the parallel loop's unit of work. 32 KiB of
// floats read per call keeps the call's cost negligible while a 197 x 768
// activation still splits into 19 runs.
constexpr int64_t kRunElements = 8192;

// The slot of the op's one input that is `dtype`, has one element (rank 0 or
// all ones) and differs from `other`, or -1.
int one_value_slot(const Graph& g, const Op& op, DType dtype, int other) {
  int found = -1;
  for (size_t s = 0; s < op.inputs.size(); ++s) {
    const Tensor& t = g.tensor(op.inputs[s]);
    if (static_cast<int>(s) == other || t.dtype != dtype || num_elements(t.shape) != 1) continue;
    if (found >= 0) return -1;
    found = static_cast<int>(s);
  }
  return found;
}

// Tensor `id`'s one value, read at index 0 on each of its axes.
Expr one_value(const Graph& g, int slot, TensorId id) {
  const Tensor& t = g.tensor(id);
  return load(slot, t.dtype, std::vector<Expr>(t.shape.size(), int_imm(0)));
}

// The indices in a tensor of `to` of the element at `point` of one of `from`
// with as many elements, both row-major (x seen through a fused Reshape).
std::vector<int64_t> same_position(const std::vector<int64_t>& point, const Shape& from, const Shape& to) {
  return coords_of(flat_index_of(point, from), to);
}

// What the ONNX frontend writes for y at constant indices `at`.
Expr quantized(const Graph& g, const Op& op, const QuantizeSlots& s, const std::vector<Expr>& at, DType type) {
  return quantize_value(type, load(s.x, DType::kF32, at), one_value(g, s.scale, op.inputs[static_cast<size_t>(s.scale)]),
                        one_value(g, s.zero_point, op.inputs[static_cast<size_t>(s.zero_point)]));
}

class QuantizeBuilder : KernelBuilder {
 public:
  QuantizeBuilder(const Graph& g, const Op& op, const scheduler::KernelSchedule& schedule) : KernelBuilder(g), op_(op) {
    start_single_op_kernel(op, schedule);
    for (TensorId id : op.inputs) add_global(id, false);  // buffer id = slot
    output_ = add_global(op.output, true);
  }

  Kernel build(const QuantizeSlots& slots, const std::string& variant) {
    const Tensor& y = g_.tensor(op_.output);
    const int64_t n = num_elements(y.shape);
    kernel_.flops = arithmetic_per_point(op_, FlopRule::kFloatArithmetic) * n;
    const int64_t runs = (n + kRunElements - 1) / kRunElements;
    const int vr = new_var("run", runs);
    const Expr first = var(vr) * kRunElements;
    const Expr length = min(int_imm(kRunElements), int_imm(n) - first);
    const Tensor& zp = g_.tensor(op_.inputs[static_cast<size_t>(slots.zero_point)]);
    const std::string callee =
        str_cat("tg_quantize::linear<", y.dtype == DType::kI8 ? "int8_t" : "uint8_t", ">");
    const Stmt call = make_call(callee, {{slots.x, first},
                                         {-1, length},
                                         {-1, load(slots.scale, DType::kF32, {int_imm(0)})},
                                         {-1, cast(DType::kI32, load(slots.zero_point, zp.dtype, {int_imm(0)}))},
                                         {output_, first}});
    kernel_.body = make_for(vr, int_imm(runs), LoopKind::kParallel, {call});
    kernel_.ukernel = "quantize_" + variant;
    return std::move(kernel_);
  }

 private:
  const Op& op_;
  int output_ = -1;
};

// The most values a phase after the range's reduction may compute or read
// from outside the kernel's phases (the scale and zero point: one each).
constexpr int64_t kMaxRangeValues = 16;

// Whether `op`'s body at every sampled point of `grid` (its vars' extents) is
// `expected(point)`.
bool body_matches(const Op& op, const Shape& grid, const std::function<Expr(const std::vector<int64_t>&)>& expected) {
  return all_sample_points(grid, kMaxSamplePoints, [&](const std::vector<int64_t>& point) {
    return same_expr(simplify(substitute_vars(op.body, constant_indices(point)), {}), simplify(expected(point), {}));
  });
}

class QuantizeRangeBuilder : KernelBuilder {
 public:
  QuantizeRangeBuilder(const Graph& g, const std::vector<Op>& phases, const scheduler::KernelSchedule& schedule,
                       const QuantizeRange& range)
      : KernelBuilder(g), phases_(phases), range_(range) {
    start_single_op_kernel(phases.back(), schedule);
    kernel_.source_nodes.clear();
    for (const Op& op : phases) add_source_nodes_once(op);
    x_ = add_global(phases.front().inputs.front(), false);
    std::set<TensorId> computed;
    for (const Op& op : phases) computed.insert(op.output);
    for (size_t i = static_cast<size_t>(range.extremes_phase) + 1; i < phases.size(); ++i)
      for (TensorId in : phases[i].inputs)
        if (!computed.count(in) && !buffer_of_.count(in)) buffer_of_[in] = add_global(in, false);
    buffer_of_[phases.back().output] = add_global(phases.back().output, true);
    for (int op : schedule.extra_outputs) {
      const TensorId out = g.ops.at(static_cast<size_t>(op)).output;
      if (!buffer_of_.count(out)) buffer_of_[out] = add_global(out, true);
    }
  }

  Kernel build(const std::string& variant) {
    const TensorId x = phases_.front().inputs.front();
    const int64_t n = num_elements(g_.tensor(x).shape);
    kernel_.flops = 2 * n;
    const TensorId extremes = phases_[static_cast<size_t>(range_.extremes_phase)].output;
    const int pair = add_local("extremes", DType::kF32, 2);
    std::vector<Stmt> steps{make_call("tg_quantize::extremes", {{x_, int_imm(0)}, {-1, int_imm(n)}, {pair, int_imm(0)}})};
    if (auto out = buffer_of_.find(extremes); out != buffer_of_.end())  // the pair is an output too
      for (int64_t j : {0, 1}) steps.push_back(make_store(out->second, int_imm(j), load(pair, DType::kF32, {int_imm(j)})));
    buffer_of_[extremes] = pair;
    // The later phases value by value; an output no later kernel reads is a local.
    std::vector<int> locals;
    for (size_t i = static_cast<size_t>(range_.extremes_phase) + 1; i < phases_.size(); ++i) {
      const Op& op = phases_[i];
      const Tensor& out = g_.tensor(op.output);
      if (!buffer_of_.count(op.output)) {
        buffer_of_[op.output] = add_local(op.name, out.dtype, num_elements(out.shape));
        locals.push_back(buffer_of_[op.output]);
      }
      for (int64_t e = 0; e < num_elements(out.shape); ++e)
        steps.push_back(make_store(buffer_of_.at(op.output), int_imm(e), value_at(op, coords_of(e, out.shape))));
    }
    Stmt body = make_allocate(pair, steps);
    for (int local : locals) body = make_allocate(local, {body});
    const int task = new_var("task", 1);
    kernel_.body = make_for(task, int_imm(1), LoopKind::kParallel, {body});
    kernel_.ukernel = "quantize_" + variant;
    return std::move(kernel_);
  }

 private:
  // op's body at constant indices, its loads reading the kernel's buffers.
  Expr value_at(const Op& op, const std::vector<int64_t>& at) {
    const Expr body = simplify(substitute_vars(op.body, constant_indices(at)), {});
    return rewrite(body, [&](const Expr& e) -> Expr {
      if (e->kind != ExprKind::kLoad) return nullptr;
      const TensorId in = op.inputs[static_cast<size_t>(e->int_value)];
      return load(buffer_of_.at(in), e->dtype, {simplify(linear_index(g_.tensor(in).shape, e->args), {})});
    });
  }

  const std::vector<Op>& phases_;
  const QuantizeRange& range_;
  int x_ = -1;
  std::map<TensorId, int> buffer_of_;  // the later phases' tensors: global or local buffers
};

}  // namespace

std::optional<QuantizeSlots> quantize_slots(const Graph& g, const Op& op) {
  const Tensor& y = g.tensor(op.output);
  if (op.reduction != Reduction::kNone || (y.dtype != DType::kU8 && y.dtype != DType::kI8) ||
      num_elements(y.shape) == 0)
    return std::nullopt;
  const int64_t n = num_elements(y.shape);
  if (n == 1) return std::nullopt;  // x and the scale would look alike
  QuantizeSlots s;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const Tensor& t = g.tensor(op.inputs[i]);
    if (t.dtype != DType::kF32 || num_elements(t.shape) != n) continue;
    if (s.x >= 0) return std::nullopt;
    s.x = static_cast<int>(i);
  }
  s.scale = one_value_slot(g, op, DType::kF32, s.x);
  s.zero_point = one_value_slot(g, op, y.dtype, -1);
  if (s.x < 0 || s.scale < 0 || s.zero_point < 0) return std::nullopt;
  const Shape& x_shape = g.tensor(op.inputs[static_cast<size_t>(s.x)]).shape;
  const bool matches = all_sample_points(y.shape, kMaxSamplePoints, [&](const std::vector<int64_t>& point) {
    const Expr expected = quantized(g, op, s, constant_indices(same_position(point, y.shape, x_shape)), y.dtype);
    return same_expr(simplify(substitute_vars(op.body, constant_indices(point)), {}), simplify(expected, {}));
  });
  if (!matches) return std::nullopt;
  return s;
}

Kernel lower_quantize_kernel(const Graph& g, const scheduler::KernelSchedule& schedule, const Op& op,
                             const QuantizeSlots& slots, const std::string& variant) {
  return QuantizeBuilder(g, op, schedule).build(slots, variant);
}

}  // namespace tilegraph::codegen

namespace tilegraph::codegen {

std::optional<QuantizeRange> quantize_range(const Graph& g, const std::vector<Op>& phases) {
  if (phases.size() < 2) return std::nullopt;
  const Op& first = phases.front();
  if (first.reduction != Reduction::kMax || first.inputs.size() != 1) return std::nullopt;
  const Tensor& x = g.tensor(first.inputs.front());
  const int64_t n = num_elements(x.shape);
  const Shape& partial = g.tensor(first.output).shape;
  int64_t k = 1;
  for (int64_t e : first.reduce_extents) k *= e;
  if (x.dtype != DType::kF32 || n == 0 || g.tensor(first.output).dtype != DType::kF32) return std::nullopt;
  QuantizeRange range;
  if (partial == Shape{2} && k == n) {
    range.extremes_phase = 0;
  } else if (partial.size() == 2 && partial[1] == 2 && partial[0] * k == n) {
    range.extremes_phase = 1;  // per-row partials [rows, 2], then their maximum
  } else {
    return std::nullopt;
  }
  // Phase 0 at (row, j, reduce vars): x at position row * k + (the reduce
  // vars' position) times the sign of j.
  Shape grid = partial;
  grid.insert(grid.end(), first.reduce_extents.begin(), first.reduce_extents.end());
  const auto signed_x = [&](const std::vector<int64_t>& point) {
    const int64_t row = range.extremes_phase == 1 ? point[0] : 0;
    const int64_t j = point[partial.size() - 1];
    const std::vector<int64_t> reduced(point.begin() + static_cast<std::ptrdiff_t>(partial.size()), point.end());
    const int64_t at = row * k + flat_index_of(reduced, first.reduce_extents);
    return load(0, DType::kF32, constant_indices(coords_of(at, x.shape))) * const_of(j == 0 ? 1 : -1, DType::kF32);
  };
  if (!body_matches(first, grid, signed_x)) return std::nullopt;
  if (range.extremes_phase == 1) {
    const Op& most = phases[1];
    if (most.reduction != Reduction::kMax || most.inputs != std::vector<TensorId>{first.output} ||
        most.reduce_extents != std::vector<int64_t>{partial[0]} || g.tensor(most.output).shape != Shape{2} ||
        g.tensor(most.output).dtype != DType::kF32 ||
        !body_matches(most, {2, partial[0]}, [&](const std::vector<int64_t>& point) {
          return load(0, DType::kF32, {int_imm(point[1]), int_imm(point[0])});
        }))
      return std::nullopt;
  }
  // The later phases: a few values each, from the extremes, one another and
  // a few values outside the kernel (never x or the partials).
  std::set<TensorId> later{phases[static_cast<size_t>(range.extremes_phase)].output};
  for (size_t i = static_cast<size_t>(range.extremes_phase) + 1; i < phases.size(); ++i) {
    const Op& op = phases[i];
    if (op.reduction != Reduction::kNone || num_elements(g.tensor(op.output).shape) > kMaxRangeValues)
      return std::nullopt;
    for (TensorId in : op.inputs) {
      const bool from_phase = std::any_of(phases.begin(), phases.end(), [&](const Op& p) { return p.output == in; });
      if (from_phase ? !later.count(in) : num_elements(g.tensor(in).shape) > kMaxRangeValues) return std::nullopt;
    }
    later.insert(op.output);
  }
  return range;
}

Kernel lower_quantize_range_kernel(const Graph& g, const scheduler::KernelSchedule& schedule,
                                   const std::vector<Op>& phases, const QuantizeRange& range,
                                   const std::string& variant) {
  return QuantizeRangeBuilder(g, phases, schedule, range).build(variant);
}

}  // namespace tilegraph::codegen
