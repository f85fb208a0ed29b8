#include "codegen/lowering/lower_quantize_kernel.h"

#include <algorithm>
#include <limits>

#include "codegen/lowering/index_samples.h"
#include "codegen/lowering/kernel_builder.h"
#include "compiler/ir/flops.h"
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
  int64_t flat = 0;
  for (size_t d = 0; d < from.size(); ++d) flat = flat * from[d] + point[d];
  std::vector<int64_t> at(to.size(), 0);
  for (size_t d = to.size(); d-- > 0;) {
    at[d] = flat % to[d];
    flat /= to[d];
  }
  return at;
}

// What the ONNX frontend writes for y at constant indices `at`.
Expr quantized(const Graph& g, const Op& op, const QuantizeSlots& s, const std::vector<Expr>& at, DType type) {
  const DType f = DType::kF32;
  const double lowest = type == DType::kI8 ? -128 : 0, highest = type == DType::kI8 ? 127 : 255;
  const Expr x = load(s.x, f, at);
  const Expr scale = one_value(g, s.scale, op.inputs[static_cast<size_t>(s.scale)]);
  const Expr zp = one_value(g, s.zero_point, op.inputs[static_cast<size_t>(s.zero_point)]);
  const Expr v = unary(UnaryOp::kRound, x / scale) + cast(f, zp);
  return cast(type, max(min(v, const_of(highest, f)), const_of(lowest, f)));
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
