#include "codegen/lowering/lower_direct_conv_kernel.h"

#include <algorithm>
#include <functional>

#include "codegen/lowering/gemm_coords.h"
#include "codegen/kernel_ir/kernel_exprs.h"
#include "compiler/ir/error.h"
#include "compiler/ir/simplify.h"
#include "scheduler/direct_conv.h"

namespace tilegraph::codegen {

namespace {

constexpr int kRow = 2, kCol = 3, kRank = 4;

// Taps per partial sum of a 1-D window (sum_of_taps).
constexpr int64_t kTapsPerRun = 4;

// Output planes at most this wide take the padded form (build_padded).
constexpr int64_t kPaddedMaxWidth = 14;

// Where the target's depthwise micro-kernel has no plane_same (AVX2), the
// padded form up to this width: its copy of the plane costs less than the
// flat form's border, two columns per row as one-output scalar loops. Zen 1,
// one thread, MobileNetV2 op17 in the model (main_test --profile, medians of
// three alternated runs): 28 x 28 x 192 0.294 -> 0.21 ms, 56 x 56 x 144 0.81
// -> 0.76, 112 x 112 x 32 0.715 -> 0.677. Wider planes keep the flat form: the
// local planes of a 112 x 112 one are already 100 KiB of stack.
constexpr int64_t kPaddedMaxWidthWithoutPlaneUkernel = 112;

// Padded-form planes at least this wide sum and store each output row in
// one loop (build_padded).
constexpr int64_t kPaddedRowsMinWidth = 28;

// Stride-1 planes of at most this many outputs take the depthwise
// micro-kernel (build_ukernel) where the target has one. One thread, MobileNetV2's
// depthwise convs alone, generated loops -> micro-kernel: 7 x 7: 49 -> 14 us,
// 14 x 14: 51 -> 37-40, 28 x 28: 62 -> 50, 56 x 56: 194 -> 167; MobileViT's
// 64 x 64 (256 channels, with SiLU): 1.04 -> 0.74 ms; 112 x 112 (its masks,
// 14 KiB, no longer stay in L1): 119 -> 168, so it keeps the flat form. The
// stride-2 micro-kernel's masks are per 16 output columns, so only its
// result plane (a stack array per task) bounds it:
// kUkernelMaxStride2Outputs, MobileViT's 128 -> 64 the largest taken.
// MobileNetV2's, alone: 14 -> 7: 52 -> 15 us, 28 -> 14: 23 -> 15, 56 -> 28:
// 86-98 -> 51, 112 -> 56: 430 -> 190-200.
constexpr int64_t kUkernelMaxOutputs = 64 * 64;
// AVX2's planes8_same (eight channels per call, one per lane) up to this
// many outputs per plane. Zen 1, one thread, MobileNetV2 op17 (main_test
// --profile, three alternated runs against the padded form): 7 x 7 x 960
// 0.119 -> 0.078 ms, 14 x 14 x 384 0.118 -> 0.107, 14 x 14 x 576 0.179 ->
// 0.163; 28 x 28 x 192 0.181 -> 0.212 (its local planes, 2 x 25 KiB, no
// longer fit the L1), so it keeps the padded form.
constexpr int64_t kUkernelMaxPlanes8Outputs = 14 * 14;
constexpr int64_t kUkernelMaxStride2Outputs = 64 * 64;

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
  DirectConvLowering(const Graph& g, const scheduler::KernelSchedule& ks, std::string depthwise_ukernel)
      : g_(g), phases_(scheduler::phase_ops(g, ks)), depthwise_ukernel_(std::move(depthwise_ukernel)) {
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
    if (const std::string callee = ukernel_callee(window); !callee.empty()) return build_ukernel(window, callee);
    if (padded_applies(window)) return build_padded(window);
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

  // The micro-kernel form (codegen/ukernels/dwconv_<variant>.h): per task
  // (n, c), the micro-kernel `callee` (ukernel_callee) sums the taps of the
  // whole plane into a local result, with masked loads of the input plane
  // itself (no padded copy), then one vectorized loop over the output
  // plane's flat index stores the outputs through the epilogue (each once,
  // so a residual is fine). planes8_same takes eight channels per task
  // (n, c / 8), its result their eight planes in a row.
  Kernel build_ukernel(const SlidingWindow& window, const std::string& callee) {
    const int64_t width = shape_[kCol], plane_outputs = shape_[kRow] * width, lanes = 16;
    channels_per_task_ = callee.rfind("tg_dwconv::planes8_same", 0) == 0 ? 8 : 1;
    const int64_t outputs = channels_per_task_ * plane_outputs;
    const int vn = new_var("n", shape_[0]), vc = new_var("c", shape_[1] / channels_per_task_);
    const WeightTaps weights = weight_taps(vn, vc);
    const int result = add_local_buffer(kernel_, "result", DType::kF32, (outputs + lanes - 1) / lanes * lanes, 64);
    std::vector<Stmt> plane;
    plane.push_back(make_call(callee, {{window.input_slot, finalize_indices(input_plane(window, vn, vc), bounds_)},
                                       {weights.buffer, finalize_indices(weights.first, bounds_)},
                                       {result, int_imm(0)}}));
    const int vq = new_var("q", outputs);
    std::vector<Expr> coords{var(vn), var(vc), floordiv(var(vq), width), floormod(var(vq), width)};
    if (channels_per_task_ > 1) {
      const Expr in_plane = floormod(var(vq), plane_outputs);
      coords = {var(vn), var(vc) * channels_per_task_ + floordiv(var(vq), plane_outputs), floordiv(in_plane, width),
                floormod(in_plane, width)};
    }
    plane.push_back(make_for(vq, int_imm(outputs), LoopKind::kVectorized,
                             {epilogue_output_store(g_, phases_, shape_, epilogue_buffers_, output_, bounds_, coords,
                                                    load(result, DType::kF32, {var(vq)}))}));
    const Stmt per_channel =
        make_for(vc, int_imm(shape_[1] / channels_per_task_), LoopKind::kSerial, {make_allocate(result, plane)});
    kernel_.body = make_for(vn, int_imm(shape_[0]), LoopKind::kParallel, {per_channel}, 2);
    kernel_.ukernel = "dwconv_" + depthwise_ukernel_;
    return std::move(kernel_);
  }

  // The weights of channel c as one run in tap order: buffer[first + t].
  struct WeightTaps {
    int buffer = -1;
    Expr first;
  };

  // The weight of tap `tap` (its window coordinates) at the plane's op vars,
  // as a kernel load.
  Expr tap_weight(std::vector<Expr> vars, const std::vector<int64_t>& tap) {
    for (size_t a = 0; a < tap.size(); ++a) vars[kRank + a] = int_imm(tap[a]);
    return to_kernel_loads(g_, conv_, simplify(substitute_vars(factors_.weight, vars), bounds_), bounds_);
  }

  // The weight load of every tap at plane (n, c), when they read one buffer
  // at consecutive indices in tap order (buffer < 0 otherwise).
  WeightTaps weight_taps(int vn, int vc) {
    const std::vector<Expr> op_vars = plane_op_vars(vn, vc);
    const auto taps = all_taps(conv_.reduce_extents);
    WeightTaps w;
    for (size_t t = 0; t < taps.size(); ++t) {
      const Expr weight = tap_weight(op_vars, taps[t]);
      if (weight->kind != ExprKind::kLoad || weight->args.size() != 1) return {};
      const int buffer = static_cast<int>(weight->int_value);
      if (t == 0) {
        w = {buffer, weight->args[0]};
        continue;
      }
      int64_t step = 0;
      if (buffer != w.buffer || !is_const_int(simplify(weight->args[0] - w.first, bounds_), &step) ||
          step != static_cast<int64_t>(t))
        return {};
    }
    return w;
  }

  // How far index e moves from channel c to c + 1 (var vc), -1 when that
  // is not one constant.
  int64_t channel_step(const Expr& e, int vc) const {
    std::vector<Expr> next;
    for (size_t i = 0; i < kernel_.var_names.size(); ++i) next.push_back(var(static_cast<int>(i)));
    next[static_cast<size_t>(vc)] = var(vc) + 1;
    int64_t step = -1;
    return is_const_int(simplify(substitute_vars(e, next) - e, bounds_), &step) ? step : -1;
  }

  // The micro-kernel that computes this conv's planes, or "" when none
  // does (AVX2 has plane_stride2 and planes8_same: dwconv_avx2.h says why). All need
  // the target's depthwise micro-kernel, a square K x K
  // window whose taps are row-major (the weights' order), a guard that is
  // exactly the input's bounds, and the weights of a channel in one run:
  //   * plane_same<H, W, K>: stride 1, K odd, taps at offsets -K/2..K/2
  //     along both axes, an input plane as large as the output, at most
  //     kUkernelMaxOutputs outputs;
  //   * planes8_same<H, W, K> (AVX2): as plane_same, at most
  //     kUkernelMaxPlanes8Outputs outputs, channels in eights whose input
  //     planes and taps lie one after the other (no channel multiplier);
  //   * plane_stride2<H, W>: stride 2, K = 3, taps at offsets -1..1 (padding
  //     1 at the top and left), (H - 1) / 2 + 1 x (W - 1) / 2 + 1 outputs,
  //     at most kUkernelMaxStride2Outputs of them.
  std::string ukernel_callee(const SlidingWindow& window) {
    if (depthwise_ukernel_.empty() || !window.ok || window.rows.stride != window.cols.stride) return "";
    if (conv_.reduce_extents.size() != 2 || conv_.reduce_extents[0] != conv_.reduce_extents[1]) return "";
    const int64_t k = conv_.reduce_extents[0], stride = window.rows.stride;
    const Shape& in = input_shape(window);
    std::string callee;
    const bool same = stride == 1 && k % 2 == 1 && in[kRow] == shape_[kRow] && in[kCol] == shape_[kCol];
    if (same && shape_[kRow] * shape_[kCol] <= kUkernelMaxOutputs && ukernel_has_plane_same())
      callee = str_cat("tg_dwconv::plane_same<", in[kRow], ", ", in[kCol], ", ", k, ">");
    const bool planes8 = same && shape_[kRow] * shape_[kCol] <= kUkernelMaxPlanes8Outputs && ukernel_has_planes8() &&
                         shape_[1] % 8 == 0;
    if (planes8) callee = str_cat("tg_dwconv::planes8_same<", in[kRow], ", ", in[kCol], ", ", k, ">");
    if (stride == 2 && k == 3 && shape_[kRow] == (in[kRow] - 1) / 2 + 1 && shape_[kCol] == (in[kCol] - 1) / 2 + 1 &&
        shape_[kRow] * shape_[kCol] <= kUkernelMaxStride2Outputs)
      callee = str_cat("tg_dwconv::plane_stride2<", in[kRow], ", ", in[kCol], ">");
    if (callee.empty()) return "";
    for (int64_t t = 0; t < k * k; ++t)
      if (window.rows.offset[static_cast<size_t>(t)] != t / k - k / 2 ||
          window.cols.offset[static_cast<size_t>(t)] != t % k - k / 2)
        return "";
    if (!guard_is_bounds(kRow, window.rows, in[kRow]) || !guard_is_bounds(kCol, window.cols, in[kCol])) return "";
    // Scratch vars of the check: removed again so the kernel's vars stay as they were.
    const size_t vars = kernel_.var_names.size();
    const int vn = new_var("n", shape_[0]), vc = new_var("c", shape_[1]);
    const WeightTaps taps = weight_taps(vn, vc);
    bool usable = taps.buffer >= 0;
    // planes8_same reads eight channels' planes and taps each one after the other.
    if (usable && planes8)
      usable = channel_step(input_plane(window, vn, vc), vc) == in[kRow] * in[kCol] &&
               channel_step(taps.first, vc) == k * k;
    kernel_.var_names.resize(vars);
    bounds_.resize(vars);
    return usable ? callee : "";
  }

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
    const Expr in_plane = input_plane(window, vn, vc);
    const int64_t first = rows.begin * width + cols.begin, last = (rows.end - 1) * width + cols.end;
    const int vq = new_var("q", last - first);
    const Expr q = var(vq) + first;
    const Expr sum = sum_of_taps(vn, vc, window, [&](int64_t row_offset, int64_t col_offset) {
      return load(window.input_slot, DType::kF32, {in_plane + q + (row_offset * width + col_offset)});
    });
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

  // The conv op's vars at plane (n, c): row, column and every tap at 0.
  std::vector<Expr> plane_op_vars(int vn, int vc) const {
    const Expr channel = channels_per_task_ == 1 ? var(vc) : var(vc) * channels_per_task_;
    std::vector<Expr> op_vars{var(vn), channel, int_imm(0), int_imm(0)};
    for (size_t a = 0; a < conv_.reduce_extents.size(); ++a) op_vars.push_back(int_imm(0));
    return op_vars;
  }

  // The offset of task (n, c)'s input plane: the window's batch and channel
  // index (a depthwise conv's channel, over the multiplier) at (n, c).
  Expr input_plane(const SlidingWindow& window, int vn, int vc) {
    const std::vector<Expr> op_vars = plane_op_vars(vn, vc);
    const Shape& in = input_shape(window);
    return (simplify(substitute_vars(window.batch, op_vars), bounds_) * in[1] +
            simplify(substitute_vars(window.channel, op_vars), bounds_)) *
           (in[kRow] * in[kCol]);
  }

  // The sum over every tap (the frontend's order) of the window value
  // `at(row offset, column offset)` times the tap's weight for channel c.
  Expr sum_of_taps(int vn, int vc, const SlidingWindow& window,
                   const std::function<Expr(int64_t, int64_t)>& at) {
    const std::vector<Expr> op_vars = plane_op_vars(vn, vc);
    const auto taps = all_taps(conv_.reduce_extents);
    // Summed in runs of the window's last axis (a row of a 2-D window; runs
    // of kTapsPerRun of a 1-D one), in tap order within each, and the runs'
    // partial sums pairwise: one chain of fused multiply-adds over all taps
    // kept each output vector 9 FMA latencies long (45 cycles for 3 x 3 on
    // a Zen 1 core), and the vector loop ran at the rate the FP scheduler
    // overlapped those chains, not at its load or FMA rate.
    const int64_t run = conv_.reduce_extents.size() >= 2 ? conv_.reduce_extents.back() : kTapsPerRun;
    std::vector<Expr> partial;
    for (size_t t = 0; t < taps.size(); ++t) {
      const Expr weight = tap_weight(op_vars, taps[t]);
      const Expr term = at(window.rows.offset[t], window.cols.offset[t]) * weight;
      if (t % static_cast<size_t>(run) == 0)
        partial.push_back(term);
      else
        partial.back() = partial.back() + term;
    }
    return pairwise_sum(partial);
  }

  // ((p0 + p1) + (p2 + p3)) + ...: the partial sums in a balanced tree.
  static Expr pairwise_sum(std::vector<Expr> terms) {
    while (terms.size() > 1) {
      std::vector<Expr> next;
      for (size_t i = 0; i + 1 < terms.size(); i += 2) next.push_back(terms[i] + terms[i + 1]);
      if (terms.size() % 2 != 0) next.push_back(terms.back());
      terms = std::move(next);
    }
    return terms.front();
  }

  // The padded input plane of the padded form: the input at row top and
  // column left, zeros around it, rows `width` wide, so that every tap of
  // every output row (and of the positions between rows) reads inside it.
  struct PaddedPlane {
    int64_t top = 0, left = 0, height = 0, width = 0;
  };

  // The padded form of a stride-1 conv: each task copies its input plane
  // into a local one with the padding around it (pt rows above, pl columns
  // left), so every output reads its taps at fixed offsets with no guard.
  //   * On a narrow plane (7 x 7, 14 x 14: narrower than
  //     kPaddedRowsMinWidth), the local plane is zeroed, then the input
  //     copied into it; output q' = oh * Wp + ow of the padded width Wp sums
  //     the padded plane at q' + (row offset + pt) * Wp + (column offset +
  //     pl) under every tap. One vectorized loop over q' computes all rows
  //     (and, between them, Wp - OW positions that no output keeps) into a
  //     local result plane, from which a loop per row stores the outputs
  //     through the epilogue. On such planes the flat form's border (a 7 x 7
  //     map: 24 of 49 outputs) ran as tiny scalar loops, one or a few
  //     outputs each; here the border costs one copy of the plane.
  //   * On a wider plane only the padding is zeroed (zero_padding) and each
  //     output row is one vector loop that sums the taps and stores through
  //     the epilogue, with no result plane. On a 112 x 112 plane (51 KiB,
  //     past a Zen 1 core's L1) zeroing it all, then writing and re-reading
  //     the result plane cost about as much as the taps' loads: Zen 1, one
  //     thread, MobileNetV2 op17 (main_test --profile, medians of three
  //     runs), 112 x 112 x 32 0.72 -> 0.53 ms, 56 x 56 x 144 0.77 -> 0.59, 28
  //     x 28 x 192 0.205 -> 0.187; on 14 x 14 both changes were slower
  //     (0.123 -> 0.130-0.137), on 7 x 7 even.
  Kernel build_padded(const SlidingWindow& window) {
    const Shape& in = input_shape(window);
    const PaddedPlane pp = padded_plane(window);
    const bool by_rows = shape_[kCol] >= kPaddedRowsMinWidth;
    const int vn = new_var("n", shape_[0]), vc = new_var("c", shape_[1]);
    const Expr in_plane = input_plane(window, vn, vc);
    const int padded = add_local_buffer(kernel_, "padded", DType::kF32, pp.height * pp.width);
    auto copy_row = [&](int vih, std::vector<Stmt>* row) {
      const int viw = new_var("iw", in[kCol]);
      const Expr copied = load(window.input_slot, DType::kF32, {in_plane + var(vih) * in[kCol] + var(viw)});
      row->push_back(make_for(viw, int_imm(in[kCol]), LoopKind::kVectorized,
                              {make_store(padded, (var(vih) + pp.top) * pp.width + var(viw) + pp.left,
                                          finalize_indices(copied, bounds_))}));
    };
    std::vector<Stmt> plane;
    if (by_rows) {
      zero_padding(padded, pp, in[kRow], in[kCol], copy_row, &plane);
    } else {
      zero_run(padded, "z", int_imm(0), pp.height * pp.width, &plane);
      const int vih = new_var("ih", in[kRow]);
      std::vector<Stmt> row;
      copy_row(vih, &row);
      plane.push_back(make_for(vih, int_imm(in[kRow]), LoopKind::kSerial, row));
    }
    auto sum_at = [&](const Expr& q) {
      return finalize_indices(sum_of_taps(vn, vc, window, [&](int64_t row_offset, int64_t col_offset) {
        return load(padded, DType::kF32, {q + ((row_offset + pp.top) * pp.width + col_offset + pp.left)});
      }), bounds_);
    };
    const int voh = new_var("oh", shape_[kRow]), vow = new_var("ow", shape_[kCol]);
    const std::vector<Expr> coords{var(vn), var(vc), var(voh), var(vow)};
    auto store_rows = [&](const Expr& value) {
      return make_for(voh, int_imm(shape_[kRow]), LoopKind::kSerial,
                      {make_for(vow, int_imm(shape_[kCol]), LoopKind::kVectorized,
                                {epilogue_output_store(g_, phases_, shape_, epilogue_buffers_, output_, bounds_,
                                                       coords, value)})});
    };
    Stmt per_plane;
    if (by_rows) {
      plane.push_back(store_rows(sum_at(var(voh) * pp.width + var(vow))));
      per_plane = make_allocate(padded, plane);
    } else {
      const int64_t results = (shape_[kRow] - 1) * pp.width + shape_[kCol];
      const int result = add_local_buffer(kernel_, "result", DType::kF32, results);
      const int vq = new_var("q", results);
      plane.push_back(make_for(vq, int_imm(results), LoopKind::kVectorized,
                               {make_store(result, var(vq), sum_at(var(vq)))}));
      plane.push_back(store_rows(load(result, DType::kF32, {var(voh) * pp.width + var(vow)})));
      per_plane = make_allocate(padded, {make_allocate(result, plane)});
    }
    const Stmt per_channel = make_for(vc, int_imm(shape_[1]), LoopKind::kSerial, {per_plane});
    kernel_.body = make_for(vn, int_imm(shape_[0]), LoopKind::kParallel, {per_channel}, 2);
    return std::move(kernel_);
  }

  // Stores 0 to buffer[start + i] for i in [0, count): a vectorized loop
  // (var `name`), or one store where count is 1.
  void zero_run(int buffer, const std::string& name, const Expr& start, int64_t count, std::vector<Stmt>* out) {
    if (count <= 0) return;
    if (count == 1) {
      out->push_back(make_store(buffer, start, float_imm(0.0)));
      return;
    }
    const int v = new_var(name, count);
    out->push_back(make_for(v, int_imm(count), LoopKind::kVectorized, {make_store(buffer, start + var(v), float_imm(0.0))}));
  }

  // Zeroes the padding of the local plane `padded` (layout pp) around an
  // in_rows x in_cols input: the rows above and below as one loop each, and
  // per input row its columns left and right of what `fill_row(row var,
  // stmts)` adds (the copy of that row).
  void zero_padding(int padded, const PaddedPlane& pp, int64_t in_rows, int64_t in_cols,
                    const std::function<void(int, std::vector<Stmt>*)>& fill_row, std::vector<Stmt>* out) {
    zero_run(padded, "z_top", int_imm(0), pp.top * pp.width, out);
    const int vih = new_var("ih", in_rows);
    const Expr row_start = (var(vih) + pp.top) * pp.width;
    std::vector<Stmt> row;
    zero_run(padded, "z_left", row_start, pp.left, &row);
    fill_row(vih, &row);
    zero_run(padded, "z_right", row_start + (pp.left + in_cols), pp.width - pp.left - in_cols, &row);
    out->push_back(make_for(vih, int_imm(in_rows), LoopKind::kSerial, row));
    zero_run(padded, "z_bottom", int_imm((pp.top + in_rows) * pp.width), (pp.height - pp.top - in_rows) * pp.width, out);
  }

  PaddedPlane padded_plane(const SlidingWindow& window) const {
    const Shape& in = input_shape(window);
    const auto [row_lo, row_hi] = std::minmax_element(window.rows.offset.begin(), window.rows.offset.end());
    const auto [col_lo, col_hi] = std::minmax_element(window.cols.offset.begin(), window.cols.offset.end());
    PaddedPlane pp;
    pp.top = std::max<int64_t>(0, -*row_lo);
    pp.left = std::max<int64_t>(0, -*col_lo);
    pp.height = pp.top + std::max(in[kRow], shape_[kRow] + *row_hi);
    pp.width = pp.left + std::max(in[kCol], shape_[kCol] + *col_hi);
    return pp;
  }

  // The target's depthwise micro-kernel has the stride-1 plane_same form:
  // dwconv_avx2.h has plane_stride2 alone (its header says why).
  bool ukernel_has_plane_same() const { return !depthwise_ukernel_.empty() && depthwise_ukernel_ != "avx2"; }

  // ... and planes8_same, eight channels per call: AVX2's.
  bool ukernel_has_planes8() const { return depthwise_ukernel_ == "avx2"; }


  // The padded form needs stride 1, a plane at most kPaddedMaxWidth wide
  // (kPaddedMaxWidthWithoutPlaneUkernel where the micro-kernel lacks plane_same),
  // and a guard that is exactly the input's bounds along each axis (a tap
  // outside the input reads 0: the padding the local plane holds).
  bool padded_applies(const SlidingWindow& window) const {
    const bool ukernel_without_plane_same = !depthwise_ukernel_.empty() && !ukernel_has_plane_same();
    const int64_t max_width = ukernel_without_plane_same ? kPaddedMaxWidthWithoutPlaneUkernel : kPaddedMaxWidth;
    if (!window.ok || window.rows.stride != 1 || window.cols.stride != 1 || shape_[kCol] > max_width)
      return false;
    const Shape& in = input_shape(window);
    return guard_is_bounds(kRow, window.rows, in[kRow]) && guard_is_bounds(kCol, window.cols, in[kCol]);
  }

  // At every output position along `axis` and every tap, the window's guard
  // conjuncts on that axis hold exactly when the input index lies in
  // [0, extent).
  bool guard_is_bounds(int axis, const SlidingAxis& sliding, int64_t extent) const {
    std::vector<Expr> tests;
    if (factors_.window->kind == ExprKind::kSelect)
      for (const Expr& c : conjuncts(factors_.window->args[0]))
        if (uses_var(c, axis)) tests.push_back(c);
    const auto taps = all_taps(conv_.reduce_extents);
    for (int64_t p = 0; p < shape_[static_cast<size_t>(axis)]; ++p)
      for (size_t t = 0; t < taps.size(); ++t) {
        std::vector<int64_t> point(kRank, 0);
        point[static_cast<size_t>(axis)] = p;
        point.insert(point.end(), taps[t].begin(), taps[t].end());
        const int64_t index = p * sliding.stride + sliding.offset[t];
        bool holds = true;
        for (const Expr& test : tests) {
          int64_t v = 0;
          if (!eval_at(test, point, &v)) return false;
          holds = holds && v != 0;
        }
        if (holds != (index >= 0 && index < extent)) return false;
      }
    return true;
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
      for (const Expr& c : conjuncts(factors_.window->args[0]))
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
  std::string depthwise_ukernel_;  // the target's depthwise micro-kernel variant ("avx512"), or none
  Op conv_;
  scheduler::DirectConvFactors factors_;
  Shape shape_;
  Kernel kernel_;
  std::vector<Interval> bounds_;
  std::vector<int> epilogue_buffers_;  // epilogue slot -> kernel buffer (-1: the conv's value)
  int64_t channels_per_task_ = 1;      // the channels of a task's planes (planes8_same: 8)
  int output_ = -1;
};

}  // namespace

Kernel lower_direct_conv_kernel(const Graph& g, const scheduler::KernelSchedule& ks,
                                const std::string& depthwise_ukernel) {
  return DirectConvLowering(g, ks, depthwise_ukernel).build();
}

}  // namespace tilegraph::codegen
