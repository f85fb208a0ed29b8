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
    const int vn = new_var("n", shape_[0]), vc = new_var("c", shape_[1]);
    const Span rows = interior(kRow), cols = interior(kCol);
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
