// Slice, Split and Pad: index maps whose offsets come from compile-time
// constants (attributes before opsets 10/13/11, inputs after).
#include <algorithm>
#include <cstdlib>
#include <limits>

#include "frontends/onnx/ops/layout_ops.h"

namespace tilegraph::onnx_frontend::layout {

namespace {

// out[v] = in[begin + step * v] per axis.
TensorId strided_view(LoweringContext& ctx, const std::string& kind, TensorId in,
                      const Shape& out, const std::vector<int64_t>& begin,
                      const std::vector<int64_t>& step) {
  const Shape& in_shape = ctx.graph().tensor(in).shape;
  bool identity = out == in_shape;
  for (size_t d = 0; d < out.size(); ++d) identity &= begin[d] == 0 && step[d] == 1;
  if (identity) return in;
  return index_map(ctx, kind, in, out, [&](const std::vector<Expr>& vars) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < out.size(); ++d)
      idx.push_back(out[d] == 1 ? int_imm(begin[d]) : vars[d] * step[d] + begin[d]);
    return idx;
  });
}

std::vector<TensorId> lower_slice(LoweringContext& ctx) {
  const Shape in = ctx.shape(0);
  const int rank = ctx.rank(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
  } else {
    starts = ctx.const_ints(1, "starts");
    ends = ctx.const_ints(2, "ends");
    if (ctx.has_input(3)) axes = ctx.const_ints(3, "axes");
    if (ctx.has_input(4)) steps = ctx.const_ints(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail(str_cat("starts, ends, axes and steps have different lengths (", starts.size(), ", ",
                     ends.size(), ", ", axes.size(), ", ", steps.size(), ")"));
  const std::vector<int> norm_axes = normalize_axes(ctx, axes, rank);
  Shape out = in;
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
  for (size_t k = 0; k < norm_axes.size(); ++k) {
    const int a = norm_axes[k];
    const int64_t dim = in[a], st = steps[k];
    if (st == 0) ctx.fail(str_cat("steps[", k, "] is 0"));
    // Negative starts/ends count from the end; then both clamp to the
    // reachable range, which differs for negative steps (ONNX Slice rules).
    // INT64_MAX / INT64_MIN ends ("to the end") clamp like any other value.
    int64_t s = starts[k], e = ends[k];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t span;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      span = e - s;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      span = s - e;
    }
    const int64_t magnitude = st == std::numeric_limits<int64_t>::min()
                                  ? std::numeric_limits<int64_t>::max()
                                  : std::llabs(st);
    out[a] = dim == 0 || span <= 0 ? 0 : (span - 1) / magnitude + 1;
    begin[a] = out[a] == 0 ? 0 : s;
    step[a] = st;
  }
  return {strided_view(ctx, "slice", ctx.input(0), out, begin, step)};
}

std::vector<TensorId> lower_split(LoweringContext& ctx) {
  const Shape in = ctx.shape(0);
  if (in.empty()) ctx.fail("cannot split a scalar");
  const int axis = normalize_axis(ctx, ctx.attr_int("axis", 0), ctx.rank(0));
  const int64_t dim = in[axis];
  const int num_outputs = ctx.node().output_size();
  if (num_outputs == 0) ctx.fail("has no outputs");
  std::vector<int64_t> sizes;
  if (ctx.opset() < 13) sizes = ctx.attr_ints("split");
  else if (ctx.has_input(1)) sizes = ctx.const_ints(1, "split");
  if (sizes.empty() && ctx.opset() >= 18 && ctx.has_attr("num_outputs")) {
    // num_outputs (opset 18): equal chunks of ceil(dim / n), the last one smaller.
    const int64_t n = ctx.attr_int("num_outputs", 0);
    if (n != num_outputs)
      ctx.fail(str_cat("num_outputs is ", n, " but the node has ", num_outputs, " outputs"));
    const int64_t chunk = (dim + n - 1) / n;
    if (chunk * (n - 1) > dim)
      ctx.fail(str_cat("cannot split a dimension of ", dim, " into ", n, " chunks of ", chunk));
    sizes.assign(static_cast<size_t>(n - 1), chunk);
    sizes.push_back(dim - chunk * (n - 1));
  } else if (sizes.empty()) {
    if (dim % num_outputs != 0)
      ctx.fail(str_cat("cannot split a dimension of ", dim, " into ", num_outputs, " equal parts"));
    sizes.assign(static_cast<size_t>(num_outputs), dim / num_outputs);
  }
  if (static_cast<int>(sizes.size()) != num_outputs)
    ctx.fail(str_cat("split has ", sizes.size(), " sizes for ", num_outputs, " outputs"));
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) ctx.fail(str_cat("split has a negative size ", s));
    total += s;
  }
  if (total != dim)
    ctx.fail(str_cat("split sizes sum to ", total, " but axis ", axis, " has size ", dim));
  std::vector<TensorId> outputs;
  std::vector<int64_t> begin(in.size(), 0), step(in.size(), 1);
  for (int64_t s : sizes) {
    Shape out = in;
    out[axis] = s;
    outputs.push_back(strided_view(ctx, "split", ctx.input(0), out, begin, step));
    begin[axis] += s;
  }
  return outputs;
}

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// The part of an axis that survives negative (cropping) pads: [lo, lo + n).
struct KeptRange {
  int64_t lo, n;
};
KeptRange kept_range(int64_t before, int64_t after, int64_t dim) {
  const int64_t lo = std::max<int64_t>(0, -before);
  return {lo, dim - lo - std::max<int64_t>(0, -after)};
}

// The input index that output index `v` of a padded axis reads. Negative
// pads crop first; edge / reflect / wrap then pad the cropped range (as
// onnxruntime does), so they only ever read inside it.
Expr pad_source(PadMode mode, Expr v, int64_t before, int64_t after, int64_t dim) {
  const Expr i = v - before;
  if (mode == PadMode::kConstant || (before <= 0 && after <= 0)) return i;
  const auto [lo, n] = kept_range(before, after, dim);
  if (n == 1) return int_imm(lo);
  // Offset within the kept range: i == lo + j.
  const Expr j = v - std::max<int64_t>(before, 0);
  switch (mode) {
    case PadMode::kEdge: {
      Expr idx = before > 0 ? max(i, int_imm(lo)) : i;
      return after > 0 ? min(idx, int_imm(lo + n - 1)) : idx;
    }
    case PadMode::kWrap:
      return floormod(j, n) + lo;
    case PadMode::kReflect: {
      // Mirror without repeating the edge, period 2(n-1); also correct for
      // pads wider than the range.
      const int64_t period = 2 * (n - 1);
      const Expr m = floormod(j, period);
      return min(m, int_imm(period) - m) + lo;
    }
    case PadMode::kConstant: break;
  }
  return i;
}

std::vector<TensorId> lower_pad(LoweringContext& ctx) {
  const Shape in = ctx.shape(0);
  const int rank = ctx.rank(0);
  const DType dtype = ctx.dtype(0);
  const std::string mode_name = ctx.attr_string("mode", "constant");
  PadMode mode;
  if (mode_name == "constant") mode = PadMode::kConstant;
  else if (mode_name == "reflect") mode = PadMode::kReflect;
  else if (mode_name == "edge") mode = PadMode::kEdge;
  else if (mode_name == "wrap") mode = PadMode::kWrap;
  else ctx.fail(str_cat("unknown mode '", mode_name, "' (constant, reflect, edge or wrap)"));

  std::vector<int64_t> pads;
  std::vector<int> axes;
  if (ctx.opset() < 11) {
    pads = ctx.attr_ints(ctx.opset() < 2 ? "paddings" : "pads");
  } else {
    pads = ctx.const_ints(1, "pads");
    if (ctx.opset() >= 18 && ctx.has_input(3))
      axes = normalize_axes(ctx, ctx.const_ints(3, "axes"), rank);
  }
  if (axes.empty() && !(ctx.opset() >= 18 && ctx.has_input(3)))
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  if (pads.size() != 2 * axes.size())
    ctx.fail(str_cat("pads has ", pads.size(), " values; expected ", 2 * axes.size(),
                     " (begin and end for each of ", axes.size(), " axes)"));
  std::vector<int64_t> before(static_cast<size_t>(rank), 0), after(static_cast<size_t>(rank), 0);
  for (int64_t p : pads)  // keeps the shape arithmetic below free of overflow
    if (p <= -(int64_t{1} << 62) || p >= (int64_t{1} << 62))
      ctx.fail(str_cat("pad ", p, " is too large"));
  for (size_t k = 0; k < axes.size(); ++k) {
    before[axes[k]] = pads[k];
    after[axes[k]] = pads[k + axes.size()];
  }
  Shape out(in.size());
  bool any = false;
  for (int d = 0; d < rank; ++d) {
    out[d] = in[d] + before[d] + after[d];
    if (out[d] < 0)
      ctx.fail(str_cat("negative pads crop axis ", d, " (size ", in[d], ") below zero"));
    if (mode != PadMode::kConstant && kept_range(before[d], after[d], in[d]).n == 0 && out[d] > 0)
      ctx.fail(str_cat("cannot pad axis ", d, " in mode ", mode_name,
                       ": nothing of it is left to repeat"));
    any |= before[d] != 0 || after[d] != 0;
  }
  if (!any) return {ctx.input(0)};
  check_shape(ctx, out, "the padded shape");

  // The fill value: an attribute (opset < 11) or input 2, which may be a
  // runtime scalar — it does not affect the shape, so it is loaded in-kernel.
  std::vector<TensorId> inputs{ctx.input(0)};
  Expr fill = scalar(ctx.opset() < 11 ? ctx.attr_float("value", 0.0f) : 0.0, dtype);
  if (mode == PadMode::kConstant && ctx.opset() >= 11 && ctx.has_input(2)) {
    if (num_elements(ctx.shape(2)) != 1) ctx.fail("constant_value must be a scalar");
    if (ctx.dtype(2) != dtype) ctx.fail("constant_value's type differs from the data's");
    if (ctx.is_constant(2)) {
      fill = constant_element(ctx.tensor(2), 0, dtype);
    } else {
      inputs.push_back(ctx.input(2));
      fill = load(1, dtype, std::vector<Expr>(ctx.shape(2).size(), int_imm(0)));
    }
  }
  const auto vars = axis_vars(rank);
  std::vector<Expr> idx;
  Expr inside;  // constant mode: is the output point inside the input?
  for (int d = 0; d < rank; ++d) {
    idx.push_back(pad_source(mode, vars[d], before[d], after[d], in[d]));
    if (mode != PadMode::kConstant) continue;
    // Only a positive pad on a side can put the index out of bounds there.
    const Expr i = idx.back();
    Expr cond;
    if (before[d] > 0) cond = ge(i, int_imm(0));
    if (after[d] > 0) cond = cond ? logical_and(cond, lt(i, int_imm(in[d]))) : lt(i, int_imm(in[d]));
    if (cond) inside = inside ? logical_and(inside, cond) : cond;
  }
  Expr body = load(0, dtype, idx);
  if (inside) body = select(inside, body, fill);
  return {ctx.emit("pad", out, dtype, inputs, body)};
}

}  // namespace

void add_slice_pad_ops(OpTable& t) {
  t.push_back({"Slice", 1, lower_slice});
  t.push_back({"Split", 1, lower_split});
  t.push_back({"Pad", 1, lower_pad});
}

}  // namespace tilegraph::onnx_frontend::layout
