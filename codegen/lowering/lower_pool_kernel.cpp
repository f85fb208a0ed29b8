#include "codegen/lowering/lower_pool_kernel.h"

#include <cmath>
#include <vector>

#include "codegen/lowering/index_samples.h"
#include "codegen/lowering/kernel_builder.h"
#include "compiler/ir/flops.h"
#include "compiler/ir/simplify.h"

namespace tilegraph::codegen {

namespace {

// The micro-kernel keeps a row of column maxima on the stack.
constexpr int64_t kMaxPlaneWidth = 8192;

// Whether `e` (the body at constant indices) is what the window reads at
// input row `row`, column `col` of plane (n, c).
bool is_window_value(const Expr& e, int64_t n, int64_t c, int64_t row, int64_t col, int64_t height,
                     int64_t width) {
  if (row < 0 || row >= height || col < 0 || col >= width)
    return e->kind == ExprKind::kFloatImm && std::isinf(e->float_value) && e->float_value < 0;
  if (e->kind != ExprKind::kLoad || e->int_value != 0 || e->args.size() != 4) return false;
  const int64_t expected[4] = {n, c, row, col};
  for (size_t d = 0; d < 4; ++d) {
    int64_t v = 0;
    if (!is_const_int(e->args[d], &v) || v != expected[d]) return false;
  }
  return true;
}

class MaxPoolBuilder : KernelBuilder {
 public:
  MaxPoolBuilder(const Graph& g, const Op& op, const scheduler::KernelSchedule& schedule)
      : KernelBuilder(g), op_(op) {
    start_single_op_kernel(op, schedule);
    input_ = add_global(op.inputs[0], false);
    output_ = add_global(op.output, true);
  }

  Kernel build(const MaxPoolPlane& plane, const std::string& variant) {
    const Shape& out = g_.tensor(op_.output).shape;
    kernel_.flops = arithmetic_per_point(op_, FlopRule::kFloatArithmetic) * num_elements(out) * reduce_points(op_);
    const int64_t planes = out[0] * out[1];
    const int vp = new_var("plane", planes);
    const Stmt call =
        make_call(str_cat("tg_maxpool::plane_3x3_s2<", plane.height, ", ", plane.width, ">"),
                  {{input_, finalize_indices(var(vp) * (plane.height * plane.width), bounds_)},
                   {output_, finalize_indices(var(vp) * (out[2] * out[3]), bounds_)}});
    kernel_.body = make_for(vp, int_imm(planes), LoopKind::kParallel, {call});
    kernel_.ukernel = "maxpool_" + variant;
    return std::move(kernel_);
  }

 private:
  const Op& op_;
  int input_ = -1;
  int output_ = -1;
};

}  // namespace

std::optional<MaxPoolPlane> max_pool_3x3_s2_plane(const Graph& g, const Op& op) {
  if (op.reduction != Reduction::kMax || op.reduce_extents != std::vector<int64_t>{3, 3} || op.inputs.size() != 1)
    return std::nullopt;
  const Tensor& in = g.tensor(op.inputs[0]);
  const Tensor& out = g.tensor(op.output);
  if (in.dtype != DType::kF32 || out.dtype != DType::kF32 || in.shape.size() != 4 || out.shape.size() != 4)
    return std::nullopt;
  const int64_t height = in.shape[2], width = in.shape[3];
  if (out.shape[0] != in.shape[0] || out.shape[1] != in.shape[1] || out.shape[2] != (height - 1) / 2 + 1 ||
      out.shape[3] != (width - 1) / 2 + 1 || height < 1 || width < 1 || width > kMaxPlaneWidth ||
      num_elements(out.shape) == 0)
    return std::nullopt;
  for (int64_t n : sample_indices(out.shape[0]))
    for (int64_t c : sample_indices(out.shape[1]))
      for (int64_t oh : sample_indices(out.shape[2]))
        for (int64_t ow : sample_indices(out.shape[3]))
          for (int64_t r = 0; r < 3; ++r)
            for (int64_t s = 0; s < 3; ++s) {
              const Expr at = simplify(
                  substitute_vars(op.body, {int_imm(n), int_imm(c), int_imm(oh), int_imm(ow), int_imm(r), int_imm(s)}),
                  {});
              if (!is_window_value(at, n, c, 2 * oh + r - 1, 2 * ow + s - 1, height, width)) return std::nullopt;
            }
  return MaxPoolPlane{height, width};
}

Kernel lower_max_pool_kernel(const Graph& g, const scheduler::KernelSchedule& schedule, const Op& op,
                             const MaxPoolPlane& plane, const std::string& variant) {
  return MaxPoolBuilder(g, op, schedule).build(plane, variant);
}

}  // namespace tilegraph::codegen
