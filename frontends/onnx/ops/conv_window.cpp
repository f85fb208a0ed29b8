#include "frontends/onnx/ops/conv_window.h"

#include <algorithm>
#include <string>

namespace tilegraph::onnx_frontend {

namespace {

std::string list_to_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// An ints attribute with one value per spatial dim (`fallback` when absent),
// each at least `min_value`.
std::vector<int64_t> per_dim_attr(const LoweringContext& ctx, const char* name, size_t count,
                                  int64_t fallback, int64_t min_value) {
  std::vector<int64_t> v = ctx.attr_ints(name, std::vector<int64_t>(count, fallback));
  if (v.size() != count)
    ctx.fail(str_cat(name, " ", list_to_string(v), " must have ", count,
                     " values (one per spatial dimension)"));
  for (int64_t x : v)
    if (x < min_value)
      ctx.fail(str_cat(name, " ", list_to_string(v), " must be >= ", min_value));
  return v;
}

}  // namespace

Expr WindowGeometry::input_index(int d, const Expr& o, const Expr& k) const {
  return o * strides[d] - pads_begin[d] + k * dilations[d];
}

bool WindowGeometry::reads_after(int d) const {
  return (out[d] - 1) * strides[d] - pads_begin[d] + (kernel[d] - 1) * dilations[d] >= in[d];
}

WindowGeometry read_window_attrs(const LoweringContext& ctx, const Shape& in_spatial,
                                 const std::vector<int64_t>& kernel) {
  const size_t n = in_spatial.size();
  WindowGeometry g;
  g.in = in_spatial;
  if (!kernel.empty()) {
    g.kernel = kernel;
  } else {
    if (!ctx.has_attr("kernel_shape")) ctx.fail("kernel_shape attribute is required");
    g.kernel = per_dim_attr(ctx, "kernel_shape", n, 1, 1);
  }
  g.strides = per_dim_attr(ctx, "strides", n, 1, 1);
  g.dilations = per_dim_attr(ctx, "dilations", n, 1, 1);

  std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  if (auto_pad.empty()) auto_pad = "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" &&
      auto_pad != "SAME_LOWER")
    ctx.fail(str_cat("auto_pad '", auto_pad, "' must be NOTSET, VALID, SAME_UPPER or SAME_LOWER"));

  // Explicit pads only count with auto_pad NOTSET; otherwise onnxruntime
  // ignores them and so do we (exporters often write zeros alongside SAME_*).
  std::vector<int64_t> pads(2 * n, 0);
  if (auto_pad == "NOTSET") pads = per_dim_attr(ctx, "pads", 2 * n, 0, 0);
  g.pads_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(n));
  g.pads_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(n), pads.end());
  g.auto_pad = auto_pad;
  return g;
}

WindowGeometry window_geometry(const LoweringContext& ctx, const Shape& in_spatial,
                               const WindowOptions& options) {
  WindowGeometry g = read_window_attrs(ctx, in_spatial, options.kernel);
  const std::string& auto_pad = g.auto_pad;
  const size_t n = in_spatial.size();
  g.out.resize(n);
  for (size_t d = 0; d < n; ++d) {
    const int64_t extent = (g.kernel[d] - 1) * g.dilations[d] + 1;  // dilated window
    const int64_t s = g.strides[d];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // Output = ceil(in / stride); the padding that makes it so is split
      // evenly, the odd element going to the end (UPPER) or the begin (LOWER).
      // The spec sizes it with the dilated window (onnxruntime's pools use the
      // undilated kernel here) and it is never negative (a window shorter
      // than the stride needs none; onnxruntime rejects or shifts those).
      g.out[d] = (g.in[d] + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (g.out[d] - 1) * s + extent - g.in[d]);
      g.pads_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pads_end[d] = total - g.pads_begin[d];
      continue;
    }
    const int64_t span = g.in[d] + g.pads_begin[d] + g.pads_end[d] - extent;
    if (span < 0)
      ctx.fail(str_cat("the window (extent ", extent, " along spatial dim ", d,
                       ") is larger than the padded input (", g.in[d] + g.pads_begin[d] + g.pads_end[d], ")"));
    g.out[d] = (options.ceil_mode ? (span + s - 1) / s : span / s) + 1;
    // ceil_mode may not add a window that starts in the end padding
    // (PyTorch and onnxruntime drop it; the ONNX spec follows since opset 19).
    if (options.ceil_mode && (g.out[d] - 1) * s >= g.in[d] + g.pads_begin[d]) --g.out[d];
  }
  return g;
}

Expr window_guard(const WindowGeometry& g, const std::vector<Expr>& index) {
  Expr cond;
  auto add = [&](Expr c) { cond = cond ? logical_and(cond, c) : c; };
  for (int d = 0; d < g.dims(); ++d) {
    if (g.reads_before(d)) add(ge(index[d], int_imm(0)));
    if (g.reads_after(d)) add(lt(index[d], int_imm(g.in[d])));
  }
  return cond;
}

Expr ReduceAxes::add(int64_t extent) {
  if (extent == 1) return int_imm(0);
  extents_.push_back(extent);
  return var(next_var_++);
}

TensorId emit_reduction(LoweringContext& ctx, const std::string& kind, const Shape& shape,
                        DType dtype, std::vector<TensorId> inputs, Expr body, Reduction reduction,
                        const ReduceAxes& axes) {
  if (axes.extents().empty()) return ctx.emit(kind, shape, dtype, std::move(inputs), std::move(body));
  return ctx.emit(kind, shape, dtype, std::move(inputs), std::move(body), reduction, axes.extents());
}

}  // namespace tilegraph::onnx_frontend
