// Shape-producing and generator ONNX ops: Shape, Size, Constant,
// ConstantOfShape, Range, EyeLike, NonZero.
//
// All shapes are static, so Shape and Size are constants, and a shape
// subgraph (Shape → Gather → Unsqueeze → Concat → Reshape) folds away during
// import. Generators (ConstantOfShape, Range, EyeLike) are ops without inputs:
// small ones fold into constants, large ones stay cheap kernels rather than
// bloating the weights (passes::try_fold decides).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/ir/evaluate.h"
#include "frontends/onnx/ops/layout_ops.h"
#include "frontends/onnx/tensor_proto.h"

namespace tilegraph::onnx_frontend {

namespace {

using layout::constant_element;
using layout::eq;

std::vector<TensorId> lower_shape(LoweringContext& ctx) {
  const Shape s = ctx.shape(0);
  const int64_t rank = static_cast<int64_t>(s.size());
  // start / end (opset 15) slice the shape; out-of-range values clamp.
  int64_t start = ctx.opset() >= 15 ? ctx.attr_int("start", 0) : 0;
  int64_t end = ctx.opset() >= 15 ? ctx.attr_int("end", rank) : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  // An empty slice (a scalar's shape) is built directly: constant_ints would
  // memcpy from the null data() of an empty vector.
  if (end <= start) return {ctx.constant({0}, DType::kI64, {})};
  return {ctx.constant_ints(std::vector<int64_t>(s.begin() + start, s.begin() + end))};
}

std::vector<TensorId> lower_size(LoweringContext& ctx) {
  const int64_t n = num_elements(ctx.shape(0));
  std::vector<uint8_t> bytes(sizeof n);
  std::memcpy(bytes.data(), &n, sizeof n);
  return {ctx.constant({}, DType::kI64, std::move(bytes))};
}

// A TensorProto attribute as a constant tensor; fails naming the node.
Tensor attr_tensor(const LoweringContext& ctx, const std::string& name) {
  const onnx::AttributeProto* a = ctx.attr(name);
  if (!a->has_t()) ctx.fail(str_cat("attribute ", name, " holds no tensor"));
  return tensor_from_proto(a->t(), "", str_cat(ctx.describe(), ": attribute ", name));
}

std::vector<TensorId> lower_constant(LoweringContext& ctx) {
  auto from_values = [&](DType t, Shape shape, const auto& values) {
    std::vector<uint8_t> bytes(static_cast<size_t>(num_elements(shape) * dtype_size(t)));
    for (size_t i = 0; i < values.size(); ++i)
      write_element(bytes.data(), t, static_cast<int64_t>(i),
                    is_float(t) ? Scalar{static_cast<double>(values[i]), 0}
                                : Scalar{0, static_cast<int64_t>(values[i])});
    return ctx.constant(shape, t, std::move(bytes));
  };
  if (ctx.has_attr("value")) {
    Tensor t = attr_tensor(ctx, "value");
    return {ctx.constant(t.shape, t.dtype, *t.data)};
  }
  if (ctx.has_attr("value_float"))
    return {from_values(DType::kF32, {}, std::vector<float>{ctx.attr_float("value_float", 0)})};
  if (ctx.has_attr("value_floats")) {
    const std::vector<float> v = ctx.attr_floats("value_floats");
    return {from_values(DType::kF32, {static_cast<int64_t>(v.size())}, v)};
  }
  if (ctx.has_attr("value_int"))
    return {from_values(DType::kI64, {}, std::vector<int64_t>{ctx.attr_int("value_int", 0)})};
  if (ctx.has_attr("value_ints")) {
    const std::vector<int64_t> v = ctx.attr_ints("value_ints");
    return {from_values(DType::kI64, {static_cast<int64_t>(v.size())}, v)};
  }
  if (ctx.has_attr("sparse_value")) ctx.fail("sparse_value constants are not supported");
  if (ctx.has_attr("value_string") || ctx.has_attr("value_strings"))
    ctx.fail("string constants are not supported");
  ctx.fail("has no value attribute");
}

std::vector<TensorId> lower_constant_of_shape(LoweringContext& ctx) {
  const std::vector<int64_t> dims = ctx.const_ints(0, "shape");
  layout::check_shape(ctx, dims, "shape");
  Expr value = float_imm(0.0, DType::kF32);  // the default value: float 0
  if (ctx.has_attr("value")) {
    const Tensor t = attr_tensor(ctx, "value");
    if (num_elements(t.shape) != 1) ctx.fail("value must hold exactly one element");
    value = constant_element(t, 0, t.dtype);
  }
  return {ctx.emit("constant_of_shape", dims, value->dtype, {}, value)};
}

std::vector<TensorId> lower_range(LoweringContext& ctx) {
  const DType t = ctx.dtype(0);
  if (ctx.dtype(1) != t || ctx.dtype(2) != t) ctx.fail("start, limit and delta have different types");
  for (int i = 0; i < 3; ++i)
    if (num_elements(ctx.shape(i)) != 1) ctx.fail("start, limit and delta must be scalars");
  // The element count decides the shape, so all three must be constants
  // (const_ints gives the user the compile-time-value error).
  const char* names[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i)
    if (!ctx.is_constant(i)) ctx.const_ints(i, names[i]);
  int64_t count;
  Expr start, delta;
  if (is_float(t)) {
    const double s = ctx.const_floats(0, "start")[0], l = ctx.const_floats(1, "limit")[0],
                 d = ctx.const_floats(2, "delta")[0];
    if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
      ctx.fail("start, limit and delta must be finite and delta non-zero");
    const double n = std::ceil((l - s) / d);
    if (n > 1e12) ctx.fail(str_cat("range of ", n, " elements is too large"));
    count = n > 0 ? static_cast<int64_t>(n) : 0;
  } else {
    const int64_t s = ctx.const_ints(0, "start")[0], l = ctx.const_ints(1, "limit")[0],
                  d = ctx.const_ints(2, "delta")[0];
    if (d == 0) ctx.fail("delta must be non-zero");
    // ceil((l - s) / d) without overflow for the sign combinations that matter.
    const __int128 span = static_cast<__int128>(l) - s;
    const __int128 n = d > 0 ? (span + d - 1) / d : (span + d + 1) / d;
    if (n > (__int128{1} << 40)) ctx.fail("range is too large");
    count = n > 0 ? static_cast<int64_t>(n) : 0;
  }
  start = constant_element(ctx.tensor(0), 0, t);
  delta = constant_element(ctx.tensor(2), 0, t);
  return {ctx.emit("range", {count}, t, {}, start + delta * cast(t, var(0)))};
}

std::vector<TensorId> lower_eye_like(LoweringContext& ctx) {
  if (ctx.rank(0) != 2) ctx.fail(str_cat("input must be 2-D, got ", shape_to_string(ctx.shape(0))));
  DType t = ctx.dtype(0);
  if (ctx.has_attr("dtype") && !dtype_from_onnx(static_cast<int>(ctx.attr_int("dtype", 0)), &t))
    ctx.fail(str_cat("unsupported dtype ", ctx.attr_int("dtype", 0)));
  const int64_t k = ctx.attr_int("k", 0);
  const Expr on_diagonal = eq(var(1) - var(0), int_imm(k));
  return {ctx.emit("eye_like", ctx.shape(0), t, {}, select(on_diagonal, scalar(1, t), scalar(0, t)))};
}

std::vector<TensorId> lower_non_zero(LoweringContext& ctx) {
  // The output's shape is the number of non-zeros: known only for constants.
  if (!ctx.is_constant(0))
    ctx.fail("NonZero of a runtime tensor has a data-dependent output shape; only constant inputs "
             "are supported");
  const Tensor& x = ctx.tensor(0);
  const Shape s = x.shape;
  std::vector<std::vector<int64_t>> coords(s.size());
  int64_t nonzero = 0;
  for (int64_t i = 0; i < num_elements(s); ++i) {
    const bool nz = is_float(x.dtype) ? x.value_as_double(i) != 0 : x.value_as_int(i) != 0;
    if (!nz) continue;
    ++nonzero;
    int64_t rest = i;
    for (size_t d = s.size(); d-- > 0;) {
      coords[d].push_back(rest % s[d]);
      rest /= s[d];
    }
  }
  std::vector<uint8_t> bytes;
  for (const auto& row : coords) {
    const auto* p = reinterpret_cast<const uint8_t*>(row.data());
    bytes.insert(bytes.end(), p, p + row.size() * sizeof(int64_t));
  }
  return {ctx.constant({static_cast<int64_t>(s.size()), nonzero}, DType::kI64, std::move(bytes))};
}

}  // namespace

void add_shape_ops(OpTable& t) {
  t.push_back({"Shape", 1, lower_shape});
  t.push_back({"Size", 1, lower_size});
  t.push_back({"Constant", 1, lower_constant});
  t.push_back({"ConstantOfShape", 9, lower_constant_of_shape});
  t.push_back({"Range", 11, lower_range});
  t.push_back({"EyeLike", 9, lower_eye_like});
  t.push_back({"NonZero", 9, lower_non_zero});
}

}  // namespace tilegraph::onnx_frontend
