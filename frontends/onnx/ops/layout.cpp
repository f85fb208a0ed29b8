// Layout ONNX ops: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand,
// Tile, DepthToSpace, SpaceToDepth, Concat, Trilu — plus the sub-families in
// layout_*.cpp (Slice/Split/Pad, Gather*, Scatter*).
//
// Every layout op here is an index map: its body is one Load whose indices
// are affine-ish expressions of the output axes (floordiv/floormod at most),
// possibly under Selects (Concat picks an input, Trilu masks), so the
// scheduler can inline it into its consumers. Operands that decide a shape
// (Reshape's shape, Tile's repeats, ...) must be compile-time constants.
#include <algorithm>
#include <numeric>

#include "frontends/onnx/ops/layout_ops.h"

namespace tilegraph::onnx_frontend {

namespace layout {

// ---- helpers shared by the layout family (declared in layout_ops.h)

Expr index_value(Expr loaded) { return cast(DType::kI64, std::move(loaded)); }

Expr wrap_negative(Expr index, int64_t dim) {
  return select(lt(index, int_imm(0)), index + dim, index);
}

Expr checked_index(LoweringContext& ctx, Expr loaded, int64_t dim, int axis) {
  if (dim <= 0) ctx.fail(str_cat("indexes axis ", axis, " of size ", dim, ": no index is valid"));
  std::vector<IndexCheckSite>& sites = ctx.graph().index_checks;
  sites.push_back({ctx.op_type(), ctx.node().name(), axis, dim});
  return check_index(index_value(std::move(loaded)), dim, static_cast<int>(sites.size() - 1));
}

int64_t wrap_constant_index(const LoweringContext& ctx, int64_t index, int64_t dim,
                            const char* what) {
  if (index < -dim || index >= dim)
    ctx.fail(str_cat(what, " value ", index, " is out of range for a dimension of size ", dim));
  return index < 0 ? index + dim : index;
}

void check_index_type(const LoweringContext& ctx, int slot) {
  if (ctx.dtype(slot) != DType::kI64 && ctx.dtype(slot) != DType::kI32)
    ctx.fail(str_cat("indices must be int32 or int64, got ", dtype_name(ctx.dtype(slot))));
}

void check_constant_indices(const LoweringContext& ctx, int slot, const std::vector<int64_t>& dims) {
  if (!ctx.is_constant(slot) || dims.empty()) return;
  const std::vector<int64_t> values = ctx.const_ints(slot, "indices");
  for (size_t i = 0; i < values.size(); ++i)
    wrap_constant_index(ctx, values[i], dims[i % dims.size()], "indices");
}

std::vector<int> normalize_axes(const LoweringContext& ctx, const std::vector<int64_t>& axes,
                                int rank) {
  std::vector<int> out;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      ctx.fail(str_cat("axis ", a, " is out of range for rank ", rank));
    const int n = static_cast<int>(a < 0 ? a + rank : a);
    if (std::find(out.begin(), out.end(), n) != out.end())
      ctx.fail(str_cat("axis ", a, " is listed twice"));
    out.push_back(n);
  }
  return out;
}

void check_shape(const LoweringContext& ctx, const Shape& shape, const char* what) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : shape) {
    if (d < 0) ctx.fail(str_cat(what, " has a negative dimension ", d));
    overflow |= __builtin_mul_overflow(n, d, &n) || n >= (int64_t{1} << 62);
  }
  // A zero dimension makes the tensor empty however large the others are.
  if (overflow && std::find(shape.begin(), shape.end(), 0) == shape.end())
    ctx.fail(str_cat(what, " is too large (", shape_to_string(shape), ")"));
}

Expr constant_element(const Tensor& t, int64_t i, DType to) {
  const Expr value = is_float(t.dtype) ? float_imm(t.value_as_double(i), t.dtype)
                                       : int_imm(t.value_as_int(i), t.dtype);
  return cast(to, value);
}

Expr eq(Expr a, Expr b) { return binary(BinaryOp::kEq, std::move(a), std::move(b)); }

Expr flatten_index(const std::vector<Expr>& vars, const Shape& shape) {
  Expr flat = int_imm(0);
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + vars[d];
  return flat;
}

std::vector<Expr> unflatten_index(Expr flat, const Shape& shape) {
  std::vector<Expr> coords(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    Expr c = stride == 1 ? flat : floordiv(flat, stride);
    // The outermost coordinate needs no modulo: flat < num_elements(shape).
    coords[d] = d == 0 ? c : floormod(c, shape[d]);
    stride *= shape[d];
  }
  return coords;
}

namespace {

std::vector<TensorId> lower_reshape(LoweringContext& ctx) {
  const Shape in = ctx.shape(0);
  const std::vector<int64_t> target =
      ctx.opset() < 5 ? ctx.attr_ints("shape") : ctx.const_ints(1, "shape");
  // allowzero (opset 14): a 0 is a real zero-sized dimension, not "copy".
  const bool allowzero = ctx.opset() >= 14 && ctx.attr_int("allowzero", 0) != 0;
  Shape out;
  int inferred = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    const int64_t v = target[i];
    if (v == -1) {
      if (inferred >= 0) ctx.fail("shape has more than one -1");
      inferred = static_cast<int>(i);
      out.push_back(1);
    } else if (v == 0 && !allowzero) {
      if (i >= in.size())
        ctx.fail(str_cat("shape[", i, "] = 0 copies a dimension that the input (",
                         shape_to_string(in), ") does not have"));
      out.push_back(in[i]);
    } else if (v < 0) {
      ctx.fail(str_cat("shape[", i, "] = ", v, " is invalid"));
    } else {
      out.push_back(v);
    }
  }
  check_shape(ctx, out, "the target shape");
  if (inferred >= 0) {
    const int64_t known = num_elements(out);
    if (known == 0)
      ctx.fail(str_cat("cannot infer the -1 dimension next to a zero-sized one (input ",
                       shape_to_string(in), ")"));
    if (num_elements(in) % known != 0)
      ctx.fail(str_cat("cannot reshape ", shape_to_string(in), " to a shape with ", known,
                       " elements per -1 step"));
    out[inferred] = num_elements(in) / known;
  }
  return {reshape(ctx, ctx.input(0), out)};
}

std::vector<TensorId> lower_flatten(LoweringContext& ctx) {
  const Shape in = ctx.shape(0);
  const int rank = ctx.rank(0);
  const int64_t axis = ctx.attr_int("axis", 1);
  // Flatten's axis ranges over [-rank, rank]: axis == rank gives [N, 1].
  if (axis < -rank || axis > rank) ctx.fail(str_cat("axis ", axis, " is out of range for rank ", rank));
  const int a = static_cast<int>(axis < 0 ? axis + rank : axis);
  const int64_t outer = num_elements(Shape(in.begin(), in.begin() + a));
  const int64_t inner = num_elements(Shape(in.begin() + a, in.end()));
  return {reshape(ctx, ctx.input(0), {outer, inner})};
}

std::vector<TensorId> lower_squeeze(LoweringContext& ctx) {
  const Shape in = ctx.shape(0);
  const int rank = ctx.rank(0);
  std::vector<int64_t> axes;
  if (ctx.opset() < 13) axes = ctx.attr_ints("axes");
  else if (ctx.has_input(1)) axes = ctx.const_ints(1, "axes");
  std::vector<int> squeezed = normalize_axes(ctx, axes, rank);
  if (axes.empty())  // no axes: every size-1 dimension goes
    for (int d = 0; d < rank; ++d)
      if (in[d] == 1) squeezed.push_back(d);
  Shape out;
  for (int d = 0; d < rank; ++d) {
    const bool drop = std::find(squeezed.begin(), squeezed.end(), d) != squeezed.end();
    if (drop && in[d] != 1)
      ctx.fail(str_cat("cannot squeeze axis ", d, " of ", shape_to_string(in), ": its size is not 1"));
    if (!drop) out.push_back(in[d]);
  }
  return {reshape(ctx, ctx.input(0), out)};
}

std::vector<TensorId> lower_unsqueeze(LoweringContext& ctx) {
  const Shape in = ctx.shape(0);
  const std::vector<int64_t> axes =
      ctx.opset() < 13 ? ctx.attr_ints("axes") : ctx.const_ints(1, "axes");
  if (axes.empty()) ctx.fail("axes is empty");
  // Axes refer to the output, whose rank is the input's plus one per axis.
  const int out_rank = ctx.rank(0) + static_cast<int>(axes.size());
  const std::vector<int> inserted = normalize_axes(ctx, axes, out_rank);
  Shape out;
  size_t next = 0;
  for (int d = 0; d < out_rank; ++d) {
    if (std::find(inserted.begin(), inserted.end(), d) != inserted.end()) out.push_back(1);
    else out.push_back(in[next++]);
  }
  return {reshape(ctx, ctx.input(0), out)};
}

std::vector<TensorId> lower_transpose(LoweringContext& ctx) {
  const int rank = ctx.rank(0);
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (!ctx.has_attr("perm"))  // default: reverse the axes
    for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
  if (static_cast<int>(perm.size()) != rank)
    ctx.fail(str_cat("perm has ", perm.size(), " entries for an input of rank ", rank));
  std::vector<int> p;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : perm) {
    if (a < 0 || a >= rank || seen[a]) ctx.fail("perm is not a permutation of the input's axes");
    seen[a] = true;
    p.push_back(static_cast<int>(a));
  }
  return {transpose(ctx, ctx.input(0), p)};
}

std::vector<TensorId> lower_expand(LoweringContext& ctx) {
  const Shape in = ctx.shape(0);
  const std::vector<int64_t> target = ctx.const_ints(1, "shape");
  check_shape(ctx, target, "shape");
  // Bidirectional: a 1 in `shape` keeps the input's dimension.
  const Shape out = broadcast_shapes(ctx, {in, target});
  check_shape(ctx, out, "the expanded shape");
  if (out == in) return {ctx.input(0)};
  return {index_map(ctx, "expand", ctx.input(0), out,
                    [&](const std::vector<Expr>& vars) { return broadcast_indices(in, vars); })};
}

std::vector<TensorId> lower_tile(LoweringContext& ctx) {
  const Shape in = ctx.shape(0);
  const std::vector<int64_t> repeats = ctx.const_ints(1, "repeats");
  if (repeats.size() != in.size())
    ctx.fail(str_cat("repeats has ", repeats.size(), " entries for an input of rank ", in.size()));
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (repeats[d] < 0) ctx.fail(str_cat("repeats[", d, "] = ", repeats[d], " is negative"));
    int64_t dim;
    if (__builtin_mul_overflow(in[d], repeats[d], &dim))
      ctx.fail(str_cat("repeats[", d, "] = ", repeats[d], " is too large"));
    out.push_back(dim);
  }
  check_shape(ctx, out, "the tiled shape");
  if (out == in) return {ctx.input(0)};
  return {index_map(ctx, "tile", ctx.input(0), out, [&](const std::vector<Expr>& vars) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < in.size(); ++d)
      idx.push_back(in[d] == 1 ? int_imm(0) : repeats[d] == 1 ? vars[d] : floormod(vars[d], in[d]));
    return idx;
  })};
}

// Checks the NCHW input and blocksize of DepthToSpace / SpaceToDepth.
int64_t block_size(const LoweringContext& ctx) {
  if (ctx.rank(0) != 4)
    ctx.fail(str_cat("input must be 4-D (NCHW), got ", shape_to_string(ctx.shape(0))));
  const int64_t b = ctx.attr_int("blocksize", 0);
  if (b <= 0) ctx.fail(str_cat("blocksize must be positive, got ", b));
  return b;
}

std::vector<TensorId> lower_depth_to_space(LoweringContext& ctx) {
  const int64_t b = block_size(ctx);
  const Shape in = ctx.shape(0);
  int64_t b2;  // a hostile blocksize must not overflow blocksize^2
  if (__builtin_mul_overflow(b, b, &b2) || in[1] % b2 != 0)
    ctx.fail(str_cat("channels (", in[1], ") are not divisible by blocksize^2 (blocksize ", b, ")"));
  const int64_t c_out = in[1] / b2;
  const std::string mode = ctx.opset() >= 11 ? ctx.attr_string("mode", "DCR") : "DCR";
  if (mode != "DCR" && mode != "CRD") ctx.fail(str_cat("unknown mode '", mode, "' (DCR or CRD)"));
  const Shape out{in[0], c_out, in[2] * b, in[3] * b};
  return {index_map(ctx, "depth_to_space", ctx.input(0), out, [&](const std::vector<Expr>& v) {
    const Expr by = floormod(v[2], b), bx = floormod(v[3], b);
    // DCR: the input channel is (by, bx, c) row-major; CRD: (c, by, bx).
    const Expr channel = mode == "DCR" ? (by * b + bx) * c_out + v[1] : (v[1] * b + by) * b + bx;
    return std::vector<Expr>{v[0], channel, floordiv(v[2], b), floordiv(v[3], b)};
  })};
}

std::vector<TensorId> lower_space_to_depth(LoweringContext& ctx) {
  const int64_t b = block_size(ctx);
  const Shape in = ctx.shape(0);
  if (in[2] % b != 0 || in[3] % b != 0)
    ctx.fail(str_cat("spatial size ", in[2], "x", in[3], " is not divisible by blocksize ", b));
  const int64_t c = in[1];
  const Shape out{in[0], c * b * b, in[2] / b, in[3] / b};
  return {index_map(ctx, "space_to_depth", ctx.input(0), out, [&](const std::vector<Expr>& v) {
    // The output channel is (by, bx, c) row-major.
    const Expr by = floordiv(v[1], c * b), bx = floormod(floordiv(v[1], c), b);
    return std::vector<Expr>{v[0], floormod(v[1], c), v[2] * b + by, v[3] * b + bx};
  })};
}

std::vector<TensorId> lower_concat(LoweringContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
  const int rank = ctx.rank(0);
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  // axis defaulted to 1 before opset 4 and is required since.
  if (!ctx.has_attr("axis") && ctx.opset() >= 4) ctx.fail("attribute axis is required");
  const int axis = normalize_axis(ctx, ctx.attr_int("axis", 1), rank);
  const DType dtype = ctx.dtype(0);
  Shape out = ctx.shape(0);
  out[axis] = 0;
  // Inputs empty along the axis contribute nothing; leave them out.
  std::vector<TensorId> parts;
  std::vector<int64_t> offsets;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Shape& s = ctx.shape(i);
    if (ctx.dtype(i) != dtype)
      ctx.fail(str_cat("input ", i, " has type ", dtype_name(ctx.dtype(i)), ", input 0 ",
                       dtype_name(dtype)));
    bool compatible = static_cast<int>(s.size()) == rank;
    for (int d = 0; compatible && d < rank; ++d) compatible = d == axis || s[d] == out[d];
    if (!compatible)
      ctx.fail(str_cat("input ", i, " (", shape_to_string(s), ") does not match input 0 (",
                       shape_to_string(ctx.shape(0)), ") outside axis ", axis));
    if (s[axis] == 0) continue;
    parts.push_back(ctx.input(i));
    offsets.push_back(out[axis]);
    out[axis] += s[axis];
  }
  if (parts.size() == 1) return {parts[0]};
  if (parts.empty()) return {ctx.input(0)};  // every input is empty: so is the result
  // Nested Selects from the last part inwards: each branch's Load runs only
  // when v_axis falls in its range, so no Load is out of bounds.
  const auto vars = axis_vars(rank);
  Expr body;
  for (size_t p = parts.size(); p-- > 0;) {
    std::vector<Expr> idx = vars;
    idx[axis] = vars[axis] - offsets[p];
    Expr part = load(static_cast<int>(p), dtype, idx);
    body = body ? select(lt(vars[axis], int_imm(offsets[p + 1])), part, body) : part;
  }
  return {ctx.emit("concat", out, dtype, parts, body)};
}

std::vector<TensorId> lower_trilu(LoweringContext& ctx) {
  const int rank = ctx.rank(0);
  if (rank < 2) ctx.fail(str_cat("input must have rank >= 2, got ", shape_to_string(ctx.shape(0))));
  const bool upper = ctx.attr_int("upper", 1) != 0;
  const DType dtype = ctx.dtype(0);
  std::vector<TensorId> inputs{ctx.input(0)};
  // k shifts the diagonal; it does not change the shape, so a runtime k is
  // read inside the kernel rather than demanded at compile time.
  Expr k = int_imm(0);
  if (ctx.has_input(1)) {
    if (num_elements(ctx.shape(1)) != 1) ctx.fail("k must be a scalar");
    if (ctx.is_constant(1)) {
      k = int_imm(ctx.const_ints(1, "k")[0]);
    } else {
      inputs.push_back(ctx.input(1));
      k = index_value(load(1, ctx.dtype(1), std::vector<Expr>(ctx.shape(1).size(), int_imm(0))));
    }
  }
  const auto v = axis_vars(rank);
  const Expr diagonal = v[rank - 1] - v[rank - 2];  // column - row
  const Expr keep = upper ? ge(diagonal, k) : binary(BinaryOp::kLe, diagonal, k);
  return {ctx.emit(upper ? "triu" : "tril", ctx.shape(0), dtype, inputs,
                   select(keep, load(0, dtype, v), scalar(0, dtype)))};
}

}  // namespace

}  // namespace layout

void add_layout_ops(OpTable& t) {
  using namespace layout;
  t.push_back({"Reshape", 1, lower_reshape});
  t.push_back({"Flatten", 1, lower_flatten});
  t.push_back({"Squeeze", 1, lower_squeeze});
  t.push_back({"Unsqueeze", 1, lower_unsqueeze});
  t.push_back({"Transpose", 1, lower_transpose});
  t.push_back({"Expand", 8, lower_expand});
  t.push_back({"Tile", 6, lower_tile});
  t.push_back({"DepthToSpace", 1, lower_depth_to_space});
  t.push_back({"SpaceToDepth", 1, lower_space_to_depth});
  t.push_back({"Concat", 1, lower_concat});
  t.push_back({"Trilu", 14, lower_trilu});
  add_slice_pad_ops(t);
  add_gather_ops(t);
  add_scatter_ops(t);
}

}  // namespace tilegraph::onnx_frontend
