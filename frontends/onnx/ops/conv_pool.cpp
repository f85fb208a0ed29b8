// Convolution and pooling: Conv, ConvTranspose, MaxPool, AveragePool, LpPool
// and their Global* forms, for 1-D, 2-D and 3-D NC[D]HW tensors.
//
// Each is one compute definition over a sliding window (ops/conv_window.h):
//   conv:     out[n, m, o..] = Σ_{ci, k..} pad0(X[n, g*Cg + ci, o*s - p + k*d ..]) * W[m, ci, k..]
//   pooling:  out[n, c, o..] = combine_{k..} padV(X[n, c, o*s - p + k*d ..])
// where padV guards the reads that can fall into the padding with a Select
// (V = 0 for sums, the dtype's lowest value for max). A conv body stays a
// product of two loads so the scheduler can treat it like a GEMM; the bias and
// the divisions of average / Lp pooling are separate elementwise ops.
#include <cmath>
#include <limits>

#include "frontends/onnx/lower_util.h"
#include "frontends/onnx/op_table.h"
#include "frontends/onnx/ops/conv_window.h"
#include "frontends/onnx/ops/quantization_util.h"

namespace tilegraph::onnx_frontend {

namespace {

// Checks X is N x C x spatial... and returns the spatial extents.
Shape spatial_dims(const LoweringContext& ctx, const char* what) {
  const Shape x = ctx.shape(0);
  if (x.size() < 3)
    ctx.fail(str_cat(what, " input must be N x C x D1 x ... (rank >= 3), got ", shape_to_string(x)));
  return Shape(x.begin() + 2, x.end());
}

void require_float(const LoweringContext& ctx, int input) {
  if (!is_float(ctx.dtype(input)))
    ctx.fail(str_cat("input ", input, " must be a floating-point tensor, got ", dtype_name(ctx.dtype(input))));
}

// out = y + B[m] for the optional bias input 2 (shape [M]).
TensorId add_bias(LoweringContext& ctx, TensorId y, int64_t m) {
  if (!ctx.has_input(2)) return y;
  if (ctx.shape(2) != Shape{m})
    ctx.fail(str_cat("bias B must have shape [", m, "], got ", shape_to_string(ctx.shape(2))));
  if (ctx.dtype(2) != ctx.dtype(0)) ctx.fail("bias B must have the type of X");
  const Shape out = ctx.graph().tensor(y).shape;
  const DType t = ctx.dtype(0);
  const auto vars = axis_vars(static_cast<int>(out.size()));
  return ctx.emit("conv_bias", out, t, {y, ctx.input(2)}, load(0, t, vars) + load(1, t, {vars[1]}));
}

// Reads `group`, checks it divides both channel counts.
int64_t read_group(const LoweringContext& ctx, int64_t in_channels, int64_t out_channels) {
  const int64_t group = ctx.attr_int("group", 1);
  if (group < 1) ctx.fail(str_cat("group must be >= 1, got ", group));
  if (in_channels % group != 0 || out_channels % group != 0)
    ctx.fail(str_cat("group ", group, " must divide the input channels (", in_channels,
                     ") and the output channels (", out_channels, ")"));
  return group;
}

// A kernel_shape attribute, when present, must agree with the weight.
void check_kernel_shape(const LoweringContext& ctx, const Shape& kernel) {
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != kernel)
    ctx.fail(str_cat("kernel_shape attribute does not match the weight's spatial dims ",
                     shape_to_string(kernel)));
}

// X and W of Conv / ConvTranspose, checked: same float type (ConvInteger:
// int8 / uint8 each, checked by its lowering), same rank.
struct ConvOperands {
  DType dtype;
  Shape spatial;  // X's spatial dims
  Shape x, w;     // full shapes
};

ConvOperands conv_operands(const LoweringContext& ctx, bool integer = false) {
  if (!integer) require_float(ctx, 0);
  if (!integer && ctx.dtype(1) != ctx.dtype(0)) ctx.fail("X and W must have the same type");
  ConvOperands ops{ctx.dtype(0), spatial_dims(ctx, "X"), ctx.shape(0), ctx.shape(1)};
  if (ops.w.size() != ops.x.size())
    ctx.fail(str_cat("W ", shape_to_string(ops.w), " must have the rank of X ", shape_to_string(ops.x)));
  return ops;
}

// out[n, m, o..] = sum_{ci, k..} product(X[n, c, i..] (or `pad` in the padding), W[m, ci, k..])
// with c = (m / Mg) * Cg + ci; `extra` inputs are slots 2, 3, ... for `product` and `pad`.
using ConvProduct = std::function<Expr(Expr x, Expr w)>;
TensorId conv_reduction(LoweringContext& ctx, DType out_dtype, const std::vector<TensorId>& extra,
                        const Expr& pad, const ConvProduct& product) {
  const ConvOperands ops = conv_operands(ctx, is_integer(out_dtype));
  const Shape& in = ops.spatial;
  const Shape& xs = ops.x;
  const Shape& ws = ops.w;
  const int64_t channels = xs[1], filters = ws[0];
  const int64_t group = read_group(ctx, channels, filters);
  const int64_t cg = channels / group, mg = filters / group;  // channels / filters per group
  if (ws[1] != cg)
    ctx.fail(str_cat("W ", shape_to_string(ws), " must have ", cg, " input channels per group (C ",
                     channels, " / group ", group, ")"));
  const Shape kernel(ws.begin() + 2, ws.end());
  check_kernel_shape(ctx, kernel);
  const WindowGeometry g = window_geometry(ctx, in, {.kernel = kernel});

  Shape out{xs[0], filters};
  out.insert(out.end(), g.out.begin(), g.out.end());
  const int rank = static_cast<int>(out.size());
  ReduceAxes axes(rank);
  const Expr ci = axes.add(cg);
  std::vector<Expr> taps, window;
  for (int d = 0; d < g.dims(); ++d) {
    taps.push_back(axes.add(g.kernel[d]));
    window.push_back(g.input_index(d, var(2 + d), taps.back()));
  }
  // Filter m belongs to group m / Mg, which reads channels [g*Cg, (g+1)*Cg).
  const Expr channel = group == 1 ? ci : floordiv(var(1), mg) * cg + ci;
  std::vector<Expr> x_idx{var(0), channel}, w_idx{var(1), ci};
  x_idx.insert(x_idx.end(), window.begin(), window.end());
  w_idx.insert(w_idx.end(), taps.begin(), taps.end());
  Expr x = load(0, ctx.dtype(0), x_idx);
  if (Expr guard = window_guard(g, window)) x = select(guard, x, pad);
  const Expr value = product(x, load(1, ctx.dtype(1), w_idx));
  std::vector<TensorId> inputs{ctx.input(0), ctx.input(1)};
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  return emit_reduction(ctx, "conv", out, out_dtype, inputs, value, Reduction::kSum, axes);
}

std::vector<TensorId> lower_conv(LoweringContext& ctx) {
  const DType t = conv_operands(ctx).dtype;
  const TensorId y = conv_reduction(ctx, t, {}, scalar(0, t), [](Expr x, Expr w) { return x * w; });
  return {add_bias(ctx, y, ctx.shape(1)[0])};
}

}  // namespace

// sum (i32(x) - x_zp) * (i32(w) - w_zp), zero points per tensor (w_zp may be
// per output channel). Shared with QLinearConv (ops/quantization_util.h).
std::vector<TensorId> lower_conv_integer(LoweringContext& ctx) {
  for (int i : {0, 1})
    if (ctx.dtype(i) != DType::kI8 && ctx.dtype(i) != DType::kU8)
      ctx.fail(str_cat("input ", i, " is ", dtype_name(ctx.dtype(i)), "; int8 and uint8 are supported"));
  std::vector<TensorId> extra;
  for (int i : {2, 3}) extra.push_back(ctx.has_input(i) ? ctx.input(i) : ctx.constant_scalar(0, ctx.dtype(i - 2)));
  const Shape zx = ctx.graph().tensor(extra[0]).shape, zw = ctx.graph().tensor(extra[1]).shape;
  const int64_t filters = conv_operands(ctx, /*integer=*/true).w[0];  // checks the ranks first
  if (num_elements(zx) != 1) ctx.fail("x_zero_point must hold one value");
  if (num_elements(zw) != 1 && !(zw.size() == 1 && zw[0] == filters))
    ctx.fail(str_cat("w_zero_point must hold one value or one per output channel (", filters, ")"));
  const DType tzx = ctx.graph().tensor(extra[0]).dtype, tzw = ctx.graph().tensor(extra[1]).dtype;
  // The padding holds x's zero point: it adds nothing.
  const Expr x_zp = load(2, tzx, std::vector<Expr>(zx.size(), int_imm(0)));
  return {conv_reduction(ctx, DType::kI32, extra, x_zp, [&](Expr x, Expr w) {
    const Expr w_zp = load(3, tzw, num_elements(zw) == 1 ? std::vector<Expr>(zw.size(), int_imm(0))
                                                          : std::vector<Expr>{var(1)});
    return (cast(DType::kI32, x) - cast(DType::kI32, x_zp)) * (cast(DType::kI32, w) - cast(DType::kI32, w_zp));
  })};
}

namespace {

// ConvTranspose as a gather (each output reads the inputs that scatter to it):
//   out[n, m, o..] = Σ_{ci, k..} [q % s == 0 and 0 <= q / s < in] X[n, c, q / s ..] * W[c, m % Mg, k..]
// with q = o + pad_begin - k * d and c = (m / Mg) * Cg + ci.
std::vector<TensorId> lower_conv_transpose(LoweringContext& ctx) {
  const ConvOperands ops = conv_operands(ctx);
  const DType t = ops.dtype;
  const Shape& in = ops.spatial;
  const Shape& xs = ops.x;
  const Shape& ws = ops.w;
  const int64_t channels = xs[1];
  if (ws[0] != channels)
    ctx.fail(str_cat("W ", shape_to_string(ws), " must have ", channels, " input channels (dim 0)"));
  const int64_t group = ctx.attr_int("group", 1);
  if (group < 1 || channels % group != 0)
    ctx.fail(str_cat("group ", group, " must be >= 1 and divide the input channels (", channels, ")"));
  const int64_t cg = channels / group, mg = ws[1], filters = mg * group;
  const Shape kernel(ws.begin() + 2, ws.end());
  check_kernel_shape(ctx, kernel);

  // Strides, dilations and explicit pads are read and checked like Conv's;
  // the output size and the SAME_* / output_shape pads follow ConvTranspose's
  // spec. (onnxruntime agrees, except that for SAME_* with a window shorter
  // than the stride it shrinks the output below in * stride.)
  WindowGeometry g = read_window_attrs(ctx, in, kernel);
  const size_t n = in.size();
  const std::vector<int64_t> output_padding = ctx.attr_ints("output_padding", std::vector<int64_t>(n, 0));
  if (output_padding.size() != n)
    ctx.fail(str_cat("output_padding must have ", n, " values (one per spatial dimension)"));
  std::vector<int64_t> output_shape = ctx.attr_ints("output_shape");
  if (output_shape.size() == n + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != n)
    ctx.fail(str_cat("output_shape must have ", n, " values (one per spatial dimension)"));
  const bool same = g.auto_pad == "SAME_UPPER" || g.auto_pad == "SAME_LOWER";
  g.out.resize(n);
  for (size_t d = 0; d < n; ++d) {
    if (output_padding[d] < 0) ctx.fail("output_padding must be >= 0");
    const int64_t full = g.strides[d] * (in[d] - 1) + output_padding[d] +
                         (g.kernel[d] - 1) * g.dilations[d] + 1;  // the unpadded output size
    if (!output_shape.empty() || same) {
      // The output size is given (or in * stride for SAME_*); the surplus is
      // cropped, the odd element at the end for SAME_UPPER, else at the begin.
      g.out[d] = !output_shape.empty() ? output_shape[d] : in[d] * g.strides[d];
      if (g.out[d] < 1) ctx.fail(str_cat("output_shape must be positive"));
      const int64_t total = std::max<int64_t>(0, full - g.out[d]);
      g.pads_begin[d] = g.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pads_end[d] = full - g.out[d] - g.pads_begin[d];
    } else {
      g.out[d] = full - g.pads_begin[d] - g.pads_end[d];
      if (g.out[d] < 1)
        ctx.fail(str_cat("pads ", g.pads_begin[d], "+", g.pads_end[d], " leave no output along spatial dim ", d));
    }
  }

  Shape out{xs[0], filters};
  out.insert(out.end(), g.out.begin(), g.out.end());
  const int rank = static_cast<int>(out.size());
  ReduceAxes axes(rank);
  const Expr ci = axes.add(cg);
  const Expr channel = group == 1 ? ci : floordiv(var(1), mg) * cg + ci;
  std::vector<Expr> x_idx{var(0), channel};
  std::vector<Expr> w_idx{channel, group == 1 ? var(1) : floormod(var(1), mg)};
  Expr guard;
  auto add_guard = [&](Expr c) { guard = guard ? logical_and(guard, c) : c; };
  for (size_t d = 0; d < n; ++d) {
    const Expr k = axes.add(g.kernel[d]);
    const int64_t s = g.strides[d];
    const Expr q = var(2 + static_cast<int>(d)) + g.pads_begin[d] - k * g.dilations[d];
    const int64_t q_min = g.pads_begin[d] - (g.kernel[d] - 1) * g.dilations[d];
    const int64_t q_max = g.out[d] - 1 + g.pads_begin[d];
    // Only conditions that can fail are emitted: the stride test when
    // stride > 1, a bound when some (o, k) reaches past that end of X.
    if (s > 1) add_guard(binary(BinaryOp::kEq, floormod(q, s), int_imm(0)));
    if (q_min < 0) add_guard(ge(q, int_imm(0)));
    if (q_max / s >= in[d]) add_guard(lt(q, int_imm(in[d] * s)));
    x_idx.push_back(floordiv(q, s));
    w_idx.push_back(k);
  }
  Expr x = load(0, t, x_idx);
  if (guard) x = select(guard, x, scalar(0, t));
  const TensorId y = emit_reduction(ctx, "conv_transpose", out, t, {ctx.input(0), ctx.input(1)},
                                    x * load(1, t, w_idx), Reduction::kSum, axes);
  return {add_bias(ctx, y, filters)};
}

// The pieces every pooling op shares: window geometry, output shape, and the
// (possibly padded) read of X at the window position.
struct Pool {
  WindowGeometry g;
  Shape out;
  ReduceAxes axes;
  std::vector<Expr> window;  // input spatial index per dim
  Expr guard;                // nullptr when no window reaches the padding
  Expr value;                // X at the window position (unguarded)
};

Pool make_pool(LoweringContext& ctx, bool ceil_mode) {
  const Shape in = spatial_dims(ctx, "X");
  const Shape xs = ctx.shape(0);
  WindowGeometry g = window_geometry(ctx, in, {.kernel = {}, .ceil_mode = ceil_mode});
  Shape out{xs[0], xs[1]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  Pool p{std::move(g), out, ReduceAxes(static_cast<int>(out.size())), {}, nullptr, nullptr};
  std::vector<Expr> x_idx{var(0), var(1)};
  for (int d = 0; d < p.g.dims(); ++d) {
    p.window.push_back(p.g.input_index(d, var(2 + d), p.axes.add(p.g.kernel[d])));
    x_idx.push_back(p.window.back());
  }
  p.guard = window_guard(p.g, p.window);
  p.value = load(0, ctx.dtype(0), x_idx);
  return p;
}

bool read_ceil_mode(const LoweringContext& ctx) {
  const int64_t c = ctx.attr_int("ceil_mode", 0);
  if (c != 0 && c != 1) ctx.fail(str_cat("ceil_mode must be 0 or 1, got ", c));
  return c != 0;
}

// The row-major flat index of X[n, c, i..] (MaxPool's Indices output).
Expr flat_index(const Shape& xs, const std::vector<Expr>& spatial) {
  Expr idx = var(0) * xs[1] + var(1);
  for (size_t d = 0; d < spatial.size(); ++d) idx = idx * xs[d + 2] + spatial[d];
  return idx;
}

std::vector<TensorId> lower_max_pool(LoweringContext& ctx) {
  const DType t = ctx.dtype(0);
  if (t == DType::kBool) ctx.fail("MaxPool of a bool tensor");
  const int64_t storage_order = ctx.attr_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1)
    ctx.fail(str_cat("storage_order must be 0 or 1, got ", storage_order));
  Pool p = make_pool(ctx, read_ceil_mode(ctx));
  // Reads in the padding take the Max identity, so they never win.
  const Expr lowest = reduction_init(Reduction::kMax, t);
  const Expr body = p.guard ? select(p.guard, p.value, lowest) : p.value;
  const TensorId y = emit_reduction(ctx, "max_pool", p.out, t, {ctx.input(0)}, body, Reduction::kMax, p.axes);
  const auto& node = ctx.node();
  if (node.output_size() < 2 || node.output(1).empty()) return {y};

  // Indices: the first window element (in row-major scan order, as
  // onnxruntime picks among ties) equal to the max; Min over its flat index.
  const Shape xs = ctx.shape(0);
  const auto vars = axis_vars(static_cast<int>(p.out.size()));
  const Expr never = int_imm(std::numeric_limits<int64_t>::max());
  Expr is_max = select(binary(BinaryOp::kEq, p.value, load(1, t, vars)),
                       flat_index(xs, p.window), never);
  if (p.guard) is_max = select(p.guard, is_max, never);
  TensorId idx = emit_reduction(ctx, "max_pool_argmax", p.out, DType::kI64, {ctx.input(0), y}, is_max,
                                Reduction::kMin, p.axes);
  if (storage_order == 1) {
    // Re-express the row-major index column-major over the spatial dims.
    int64_t plane = 1;
    for (size_t d = 2; d < xs.size(); ++d) plane *= xs[d];
    const Expr r = load(0, DType::kI64, vars);
    std::vector<Expr> spatial(xs.size() - 2);
    Expr rest = floormod(r, plane);
    for (size_t d = xs.size() - 1; d >= 2; --d) {
      spatial[d - 2] = floormod(rest, xs[d]);
      rest = floordiv(rest, xs[d]);
    }
    Expr within = int_imm(0);
    int64_t step = 1;
    for (size_t d = 0; d < spatial.size(); ++d) {
      within = within + spatial[d] * step;
      step *= xs[d + 2];
    }
    idx = ctx.emit("max_pool_indices", p.out, DType::kI64, {idx}, floordiv(r, plane) * plane + within);
  }
  return {y, idx};
}

// Number of taps j in [0, k) of the window at output position o along one dim
// whose input coordinate o*s - p + j*d lies in [lo, hi).
Expr taps_in(const WindowGeometry& g, int d, const Expr& o, int64_t lo, int64_t hi) {
  const int64_t dil = g.dilations[d];
  const Expr start = o * g.strides[d] - g.pads_begin[d];
  // first = ceil((lo - start) / dil), last = floor((hi - 1 - start) / dil), clamped to [0, k-1]
  const Expr first = max(int_imm(0), int_imm(0) - floordiv(start - lo, dil));
  const Expr last = min(int_imm(g.kernel[d] - 1), floordiv(int_imm(hi - 1) - start, dil));
  return max(int_imm(0), last - first + int_imm(1));
}

// Host-side twin of taps_in, to find dims where the count is the same everywhere.
int64_t taps_in_at(const WindowGeometry& g, int d, int64_t o, int64_t lo, int64_t hi) {
  int64_t count = 0;
  for (int64_t j = 0; j < g.kernel[d]; ++j) {
    const int64_t i = o * g.strides[d] - g.pads_begin[d] + j * g.dilations[d];
    count += i >= lo && i < hi;
  }
  return count;
}

std::vector<TensorId> lower_average_pool(LoweringContext& ctx) {
  require_float(ctx, 0);
  const DType t = ctx.dtype(0);
  const int64_t include_pad = ctx.attr_int("count_include_pad", 0);
  if (include_pad != 0 && include_pad != 1)
    ctx.fail(str_cat("count_include_pad must be 0 or 1, got ", include_pad));
  Pool p = make_pool(ctx, read_ceil_mode(ctx));
  const Expr body = p.guard ? select(p.guard, p.value, scalar(0, t)) : p.value;
  const TensorId sum = emit_reduction(ctx, "avg_pool_sum", p.out, t, {ctx.input(0)}, body, Reduction::kSum, p.axes);
  // The divisor counts the taps inside the input, or with count_include_pad
  // inside input + explicit pads (ceil_mode windows can still overhang those).
  Expr count = int_imm(1);
  for (int d = 0; d < p.g.dims(); ++d) {
    const int64_t lo = include_pad ? -p.g.pads_begin[d] : 0;
    const int64_t hi = p.g.in[d] + (include_pad ? p.g.pads_end[d] : 0);
    bool uniform = true;
    const int64_t first = taps_in_at(p.g, d, 0, lo, hi);
    for (int64_t o = 1; o < p.g.out[d] && uniform; ++o) uniform = taps_in_at(p.g, d, o, lo, hi) == first;
    count = count * (uniform ? int_imm(first) : taps_in(p.g, d, var(2 + d), lo, hi));
  }
  const auto vars = axis_vars(static_cast<int>(p.out.size()));
  return {ctx.emit("avg_pool", p.out, t, {sum}, load(0, t, vars) / cast(t, count))};
}

// LpPool's p: an int since opset 2, a float at opset 1.
double read_p(const LoweringContext& ctx) {
  const onnx::AttributeProto* a = ctx.attr("p");
  const double p = !a ? 2.0 : a->type() == onnx::AttributeProto::FLOAT ? a->f() : static_cast<double>(a->i());
  if (!(p > 0)) ctx.fail(str_cat("p must be positive, got ", p));
  return p;
}

// |x|^p, and its inverse (·)^(1/p), with the common p written exactly.
Expr lp_power(Expr x, double p) {
  if (p == 2.0) return x * x;
  const Expr a = unary(UnaryOp::kAbs, x);
  return p == 1.0 ? a : binary(BinaryOp::kPow, a, scalar(p, x->dtype));
}

Expr lp_root(Expr s, double p) {
  if (p == 1.0) return s;
  if (p == 2.0) return unary(UnaryOp::kSqrt, s);
  return binary(BinaryOp::kPow, s, scalar(1.0 / p, s->dtype));
}

// LpPool: (Σ over the window's in-bounds taps |x|^p)^(1/p), as onnxruntime
// computes it; padding adds nothing.
std::vector<TensorId> lower_lp_pool(LoweringContext& ctx) {
  require_float(ctx, 0);
  const DType t = ctx.dtype(0);
  const double pw = read_p(ctx);
  Pool p = make_pool(ctx, read_ceil_mode(ctx));
  Expr body = lp_power(p.value, pw);
  if (p.guard) body = select(p.guard, body, scalar(0, t));
  const TensorId sum = emit_reduction(ctx, "lp_pool_sum", p.out, t, {ctx.input(0)}, body, Reduction::kSum, p.axes);
  const auto vars = axis_vars(static_cast<int>(p.out.size()));
  return {ctx.emit("lp_pool", p.out, t, {sum}, lp_root(load(0, t, vars), pw))};
}

std::vector<int> spatial_axes(const LoweringContext& ctx) {
  spatial_dims(ctx, "X");
  std::vector<int> axes;
  for (int d = 2; d < ctx.rank(0); ++d) axes.push_back(d);
  return axes;
}

// The sum over the spatial axes of x (N x C x D1 x ... x Dk, keepdims) as
// one reduce axis r over the flattened plane: x[n, c, r / (D2...Dk), ...,
// r % Dk]. Its loads are contiguous along r, so a kernel sums each plane as
// one vector loop (MobileNetV2's 7 x 7 maps: 49 values) instead of a loop of
// Dk values per row (7, mostly vector remainder).
TensorId flat_spatial_sum(LoweringContext& ctx, TensorId in) {
  const Tensor& x = ctx.graph().tensor(in);
  const Shape xs = x.shape;
  const int rank = static_cast<int>(xs.size());
  const int64_t count = num_elements(Shape(xs.begin() + 2, xs.end()));
  Shape out{xs[0], xs[1]};
  std::vector<Expr> idx{var(0), var(1)};
  const Expr r = var(rank);  // the reduce axis follows the rank output axes
  int64_t stride = count;
  for (int d = 2; d < rank; ++d) {
    out.push_back(1);
    stride /= xs[static_cast<size_t>(d)];
    const Expr i = floordiv(r, stride);
    idx.push_back(d == 2 ? i : floormod(i, xs[static_cast<size_t>(d)]));
  }
  return ctx.emit("global_avg_pool_sum", out, x.dtype, {in}, load(0, x.dtype, idx), Reduction::kSum, {count});
}

std::vector<TensorId> lower_global_average_pool(LoweringContext& ctx) {
  require_float(ctx, 0);
  const DType t = ctx.dtype(0);
  const Shape xs = ctx.shape(0);
  const TensorId sum = xs.size() >= 4 && num_elements(xs) > 0
                           ? flat_spatial_sum(ctx, ctx.input(0))
                           : reduce(ctx, "global_avg_pool_sum", ctx.input(0), spatial_axes(ctx), true, Reduction::kSum);
  const int64_t count = num_elements(Shape(xs.begin() + 2, xs.end()));
  return {elementwise(ctx, "global_avg_pool", {sum}, t,
                      [&](const std::vector<Expr>& v) { return v[0] / scalar(static_cast<double>(count), t); })};
}

std::vector<TensorId> lower_global_max_pool(LoweringContext& ctx) {
  if (ctx.dtype(0) == DType::kBool) ctx.fail("GlobalMaxPool of a bool tensor");
  return {reduce(ctx, "global_max_pool", ctx.input(0), spatial_axes(ctx), true, Reduction::kMax)};
}

std::vector<TensorId> lower_global_lp_pool(LoweringContext& ctx) {
  require_float(ctx, 0);
  const double pw = read_p(ctx);
  const TensorId sum = reduce(ctx, "global_lp_pool_sum", ctx.input(0), spatial_axes(ctx), true, Reduction::kSum,
                              [&](Expr x) { return lp_power(x, pw); });
  return {elementwise(ctx, "global_lp_pool", {sum}, ctx.dtype(0),
                      [&](const std::vector<Expr>& v) { return lp_root(v[0], pw); })};
}

}  // namespace

void add_conv_pool_ops(OpTable& t) {
  // Attributes added in later opsets (dilations, ceil_mode, count_include_pad,
  // storage_order) default to the earlier behavior, so one entry per op serves
  // every opset.
  t.push_back({"Conv", 1, lower_conv});
  t.push_back({"ConvInteger", 10, lower_conv_integer});
  t.push_back({"ConvTranspose", 1, lower_conv_transpose});
  t.push_back({"MaxPool", 1, lower_max_pool});
  t.push_back({"AveragePool", 1, lower_average_pool});
  t.push_back({"LpPool", 1, lower_lp_pool});
  t.push_back({"GlobalAveragePool", 1, lower_global_average_pool});
  t.push_back({"GlobalMaxPool", 1, lower_global_max_pool});
  t.push_back({"GlobalLpPool", 1, lower_global_lp_pool});
}

}  // namespace tilegraph::onnx_frontend
