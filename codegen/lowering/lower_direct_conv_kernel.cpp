#include "codegen/lowering/lower_direct_conv_kernel.h"

#include "codegen/lowering/gemm_coords.h"
#include "codegen/kernel_ir/kernel_exprs.h"
#include "compiler/ir/error.h"
#include "compiler/ir/simplify.h"
#include "scheduler/direct_conv.h"

namespace tilegraph::codegen {

namespace {

constexpr int kRow = 2, kCol = 3, kRank = 4;

// A half-open range of output rows or columns.
struct Span {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};

// select(c, t, f) with c decided by the simplifier becomes t or f.
Expr fold_decided_selects(const Expr& e) {
  return rewrite(e, [](const Expr& n) -> Expr {
    int64_t c;
    if (n->kind != ExprKind::kSelect || !is_const_int(n->args[0], &c)) return nullptr;
    return c != 0 ? n->args[1] : n->args[2];
  });
}

// One spatial axis of the window as a sliding one: the input index of
// output position o under tap t is o * stride + offset[t].
struct SlidingAxis {
  int64_t stride = 1;
  std::vector<int64_t> offset;  // per tap (all_taps order)
};

// The window's load as plain sliding windows along both axes (any padding,
// stride and dilation); ok = false when an index is not of that form.
struct SlidingWindow {
  bool ok = false;
  SlidingAxis rows, cols;
  Expr batch, channel;  // the load's batch and channel index (op vars)
  int input_slot = -1;
};

// *v = index expression e with the op's vars at `point`; false when it does
// not fold to a constant.
bool eval_at(const Expr& e, const std::vector<int64_t>& point, int64_t* v) {
  std::vector<Expr> values;
  for (int64_t p : point) values.push_back(int_imm(p));
  return is_const_int(simplify(substitute_vars(e, values), {}), v);
}

// Every tap (the reduce axes' values), last axis fastest: the frontend's
// kh, kw order, which the sums keep.
std::vector<std::vector<int64_t>> all_taps(const std::vector<int64_t>& extents) {
  std::vector<std::vector<int64_t>> taps{{}};
  for (int64_t e : extents) {
    std::vector<std::vector<int64_t>> next;
    for (const auto& t : taps)
      for (int64_t i = 0; i < e; ++i) {
        next.push_back(t);
        next.back().push_back(i);
      }
    taps = std::move(next);
  }
  return taps;
}

// `axis` for output axis `out_axis` (kRow / kCol) whose window index is
// `index`, checked at every output position and tap.
bool sliding_axis(const Expr& index, int out_axis, int64_t out_extent, const std::vector<std::vector<int64_t>>& taps,
                  SlidingAxis* axis) {
  for (size_t t = 0; t < taps.size(); ++t) {
    std::vector<int64_t> point(kRank, 0);
    point.insert(point.end(), taps[t].begin(), taps[t].end());
    int64_t first = 0, second = 0;
    if (!eval_at(index, point, &first)) return false;
    point[static_cast<size_t>(out_axis)] = 1;
    if (out_extent > 1 && !eval_at(index, point, &second)) return false;
    const int64_t stride = out_extent > 1 ? second - first : 1;
    if (t == 0) axis->stride = stride;
    if (stride != axis->stride || stride < 1) return false;
    axis->offset.push_back(first);
    for (int64_t o = 2; o < out_extent; ++o) {
      point[static_cast<size_t>(out_axis)] = o;
      int64_t v = 0;
      if (!eval_at(index, point, &v) || v != first + o * stride) return false;
    }
  }
  return true;
}

SlidingWindow sliding_window(const Op& conv, const Shape& out, const Expr& window) {
  SlidingWindow w;
  const Expr load = window->kind == ExprKind::kSelect ? window->args[1] : window;
  const auto taps = all_taps(conv.reduce_extents);
  if (!sliding_axis(load->args[kRow], kRow, out[kRow], taps, &w.rows) ||
      !sliding_axis(load->args[kCol], kCol, out[kCol], taps, &w.cols))
    return w;
  w.batch = load->args[0];
  w.channel = load->args[1];
  w.input_slot = static_cast<int>(load->int_value);
  w.ok = true;
  return w;
}

class DirectConvLowering {
 public:
  DirectConvLowering(const Graph& g, const scheduler::KernelSchedule& ks)
      : g_(g), phases_(scheduler::phase_ops(g, ks)) {
    TG_CHECK(!phases_.empty() && phases_.size() <= 2, "a direct conv kernel has 1 or 2 phases, got ",
             phases_.size());
    conv_ = phases_.front();
    factors_ = scheduler::direct_conv_factors(g, conv_);
    TG_CHECK(factors_.window != nullptr, "kernel ", conv_.name, " is not a direct convolution");
    shape_ = g.tensor(conv_.output).shape;
    const Op& root = phases_.back();
    kernel_.name = root.name;
    for (const Op& p : phases_)
      kernel_.source_nodes.insert(kernel_.source_nodes.end(), p.source_nodes.begin(), p.source_nodes.end());
    kernel_.schedule = ks;
    // The conv's input slots are its kernel buffers 0.. (to_kernel_loads).
    for (TensorId t : conv_.inputs) add_global_buffer(kernel_, g, t, false);
    if (phases_.size() == 2)
      for (TensorId t : phases_[1].inputs)
        epilogue_buffers_.push_back(t == conv_.output ? -1 : add_global_buffer(kernel_, g, t, false));
    output_ = add_global_buffer(kernel_, g, root.output, true);
  }

  Kernel build() {
    int64_t taps = 1;
    for (int64_t e : conv_.reduce_extents) taps *= e;
    kernel_.flops = 2 * num_elements(shape_) * taps;
    const Span rows = interior(kRow), cols = interior(kCol);
    const SlidingWindow window = sliding_window(conv_, shape_, factors_.window);
    if (flat_applies(window, rows, cols)) return build_flat(window, rows, cols);
    const int vn = new_var("n", shape_[0]), vc = new_var("c", shape_[1]);
    const Span all_cols{0, shape_[kCol]};
    std::vector<Stmt> plane;
    add_rows(vn, vc, {0, rows.begin}, {all_cols}, &plane);
    add_rows(vn, vc, rows, {{0, cols.begin}, cols, {cols.end, shape_[kCol]}}, &plane);
    add_rows(vn, vc, {rows.end, shape_[kRow]}, {all_cols}, &plane);
    const Stmt per_channel = make_for(vc, int_imm(shape_[1]), LoopKind::kSerial, plane);
    kernel_.body = make_for(vn, int_imm(shape_[0]), LoopKind::kParallel, {per_channel}, 2);
    return std::move(kernel_);
  }

 private:

  // The flat form of a stride-1 conv whose output rows are as wide as its
  // input rows: output q = oh * W + ow reads input q + (row offset * W +
  // column offset) of the same plane under every tap, so the interior rows
  // run as one vector loop over q from the first interior output to the
  // last, with no guard. That loop also passes over the border columns of
  // those rows (its loads stay inside the plane: flat_applies) and stores
  // wrong values there, which the border segments then overwrite. One long
  // loop instead of a short one per row: on 7x7 and 14x14 maps a row is
  // mostly vector remainder.
  Kernel build_flat(const SlidingWindow& window, const Span& rows, const Span& cols) {
    const int64_t width = shape_[kCol];
    const int vn = new_var("n", shape_[0]), vc = new_var("c", shape_[1]);
    std::vector<Expr> op_vars{var(vn), var(vc), int_imm(0), int_imm(0)};
    for (size_t a = 0; a < conv_.reduce_extents.size(); ++a) op_vars.push_back(int_imm(0));
    const Shape& in = input_shape(window);
    const Expr in_plane = (simplify(substitute_vars(window.batch, op_vars), bounds_) * in[1] +
                           simplify(substitute_vars(window.channel, op_vars), bounds_)) *
                          (in[kRow] * in[kCol]);
    const int64_t first = rows.begin * width + cols.begin, last = (rows.end - 1) * width + cols.end;
    const int vq = new_var("q", last - first);
    const Expr q = var(vq) + first;
    const auto taps = all_taps(conv_.reduce_extents);
    Expr sum;
    for (size_t t = 0; t < taps.size(); ++t) {
      std::vector<Expr> vars = op_vars;
      for (size_t a = 0; a < taps[t].size(); ++a) vars[kRank + a] = int_imm(taps[t][a]);
      const Expr weight =
          to_kernel_loads(g_, conv_, simplify(substitute_vars(factors_.weight, vars), bounds_), bounds_);
      const int64_t offset = window.rows.offset[t] * width + window.cols.offset[t];
      const Expr term = load(window.input_slot, DType::kF32, {in_plane + q + offset}) * weight;
      sum = sum ? sum + term : term;
    }
    const std::vector<Expr> coords{var(vn), var(vc), floordiv(q, width), floormod(q, width)};
    std::vector<Stmt> plane;
    // The border rows in column segments too: their interior columns then
    // load contiguously (one segment over all columns keeps each load's
    // clamped index, a gather).
    const std::vector<Span> row_segments{{0, cols.begin}, cols, {cols.end, width}};
    add_rows(vn, vc, {0, rows.begin}, row_segments, &plane);
    plane.push_back(make_for(vq, int_imm(last - first), LoopKind::kVectorized,
                             {epilogue_output_store(g_, phases_, shape_, epilogue_buffers_, output_, bounds_, coords,
                                                    finalize_indices(sum, bounds_))}));
    add_rows(vn, vc, rows, {{0, cols.begin}, {cols.end, width}}, &plane);
    add_rows(vn, vc, {rows.end, shape_[kRow]}, row_segments, &plane);
    const Stmt per_channel = make_for(vc, int_imm(shape_[1]), LoopKind::kSerial, plane);
    kernel_.body = make_for(vn, int_imm(shape_[0]), LoopKind::kParallel, {per_channel}, 2);
    return std::move(kernel_);
  }

  // The flat form needs stride 1 along both axes, input rows as wide as the
  // output's, an interior whose every tap reads inside the plane (so do the
  // border columns the flat loop passes over), and no epilogue input as
  // large as the output (a residual): the border positions are stored
  // twice, and the first store must not clobber an input the memory plan
  // might have put in the same place.
  bool flat_applies(const SlidingWindow& window, const Span& rows, const Span& cols) const {
    if (!window.ok || window.rows.stride != 1 || window.cols.stride != 1 || rows.size() <= 0 || cols.size() <= 0)
      return false;
    const Shape& in = input_shape(window);
    if (in[kCol] != shape_[kCol]) return false;
    for (size_t t = 0; t < window.rows.offset.size(); ++t) {
      const int64_t r = window.rows.offset[t], c = window.cols.offset[t];
      if (rows.begin + r < 0 || rows.end - 1 + r >= in[kRow] || cols.begin + c < 0 || cols.end - 1 + c >= in[kCol])
        return false;
    }
    if (phases_.size() == 2)
      for (TensorId t : phases_[1].inputs)
        if (t != conv_.output && num_elements(g_.tensor(t).shape) >= num_elements(shape_)) return false;
    return true;
  }

  const Shape& input_shape(const SlidingWindow& window) const {
    return g_.tensor(conv_.inputs[static_cast<size_t>(window.input_slot)]).shape;
  }

  int new_var(const std::string& name, int64_t extent) {
    kernel_.var_names.push_back(name);
    bounds_.push_back(Interval::range(extent));
    return static_cast<int>(kernel_.var_names.size() - 1);
  }

  // The output positions along `axis` (kRow or kCol) where no tap reads the
  // padding: every conjunct of the window's guard that tests this axis holds
  // for all taps. Contiguous for a convolution; empty when none is interior.
  Span interior(int axis) const {
    const int64_t extent = shape_[static_cast<size_t>(axis)];
    std::vector<Expr> tests;
    if (factors_.window->kind == ExprKind::kSelect)
      for (const Expr& c : scheduler::conjuncts(factors_.window->args[0]))
        if (uses_var(c, axis)) tests.push_back(c);
    std::vector<Interval> bounds;
    for (int64_t e : shape_) bounds.push_back(Interval::range(e));
    for (int64_t e : conv_.reduce_extents) bounds.push_back(Interval::range(e));
    Span span{-1, -1};
    for (int64_t p = 0; p < extent; ++p) {
      bounds[static_cast<size_t>(axis)] = Interval::point(p);
      bool inside = true;
      for (const Expr& t : tests) {
        int64_t v = 0;
        inside = inside && is_const_int(simplify(t, bounds), &v) && v != 0;
      }
      if (!inside) continue;
      if (span.begin < 0) span.begin = p;
      TG_CHECK(span.end < 0 || span.end == p, "conv ", conv_.name, ": interior positions along axis ", axis,
               " are not contiguous");
      span.end = p + 1;
    }
    return span.begin < 0 ? Span{0, 0} : span;
  }

  // Rows `rows` of the plane, each as the column spans `col_spans` (the
  // output width split in order), every span one vectorized loop.
  void add_rows(int vn, int vc, const Span& rows, const std::vector<Span>& col_spans, std::vector<Stmt>* out) {
    if (rows.size() <= 0) return;
    const int vh = new_var(str_cat("oh", rows.begin), rows.size());
    std::vector<Stmt> row;
    for (const Span& cols : col_spans) {
      if (cols.size() <= 0) continue;
      const int vw = new_var(str_cat("ow", rows.begin, "_", cols.begin), cols.size());
      const std::vector<Expr> coords{var(vn), var(vc), var(vh) + rows.begin, var(vw) + cols.begin};
      row.push_back(make_for(vw, int_imm(cols.size()), LoopKind::kVectorized, {store_at(coords)}));
    }
    out->push_back(make_for(vh, int_imm(rows.size()), LoopKind::kSerial, row));
  }

  // The output element at coords: the sum over every tap of window * weight,
  // each term simplified under the current loop bounds (guards the segment
  // decides vanish), through the epilogue.
  Stmt store_at(const std::vector<Expr>& coords) {
    Expr sum;
    std::vector<int64_t> tap(conv_.reduce_extents.size(), 0);
    for (bool more = true; more;) {
      std::vector<Expr> vars = coords;
      for (int64_t t : tap) vars.push_back(int_imm(t));
      Expr term = simplify(substitute_vars(conv_.body, vars), bounds_);
      term = to_kernel_loads(g_, conv_, fold_decided_selects(term), bounds_);
      sum = sum ? sum + term : term;
      // Next tap, last axis fastest (the frontend's kh, kw order).
      more = false;
      for (size_t a = tap.size(); a-- > 0;) {
        if (++tap[a] < conv_.reduce_extents[a]) {
          more = true;
          break;
        }
        tap[a] = 0;
      }
    }
    return epilogue_output_store(g_, phases_, shape_, epilogue_buffers_, output_, bounds_, coords,
                                 finalize_indices(sum, bounds_));
  }

  const Graph& g_;
  std::vector<Op> phases_;
  Op conv_;
  scheduler::DirectConvFactors factors_;
  Shape shape_;
  Kernel kernel_;
  std::vector<Interval> bounds_;
  std::vector<int> epilogue_buffers_;  // epilogue slot -> kernel buffer (-1: the conv's value)
  int output_ = -1;
};

}  // namespace

Kernel lower_direct_conv_kernel(const Graph& g, const scheduler::KernelSchedule& ks) {
  return DirectConvLowering(g, ks).build();
}

}  // namespace tilegraph::codegen
