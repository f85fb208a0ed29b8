#include "scheduler/int_gemm.h"

#include <algorithm>
#include <set>

#include "compiler/ir/error.h"
#include "scheduler/direct_conv.h"
#include "scheduler/winograd_conv.h"

namespace tilegraph::scheduler {

namespace {

std::set<int> vars_of(const Expr& e) {
  std::set<int> ids;
  visit(e, [&](const Expr& n) {
    if (n->kind == ExprKind::kVar) ids.insert(static_cast<int>(n->int_value));
  });
  return ids;
}

bool uses_any(const Expr& e, int lo, int hi) {
  for (int v : vars_of(e))
    if (v >= lo && v < hi) return true;
  return false;
}

bool is_int8(DType t) { return t == DType::kI8 || t == DType::kU8; }

// (i32(E) - Z) or i32(E): the quantized operand E and its zero point Z.
bool match_operand(const Expr& e, Expr* value, Expr* zero_point) {
  Expr x = e;
  *zero_point = int_imm(0, DType::kI32);
  if (x->kind == ExprKind::kBinary && x->binary_op == BinaryOp::kSub) {
    *zero_point = x->args[1];
    x = x->args[0];
  }
  if (x->kind != ExprKind::kCast || x->dtype != DType::kI32 || !is_int8(x->args[0]->dtype)) return false;
  *value = x->args[0];
  return !has_indirect_load(*value);
}

// A float32 factor: any expression that loads something, without indirection.
bool match_float_operand(const Expr& e) {
  return e->dtype == DType::kF32 && !has_indirect_load(e) && has_load(e);
}

// A float32 GEMM takes the operand reading the output's innermost axis as B
// when that gives at least this many columns (4 register tiles of the widest
// micro-kernel); fewer (a ViT patch embedding's 7 x 7 output pixels) would
// pad a column panel and repack B per row block for little store locality.
constexpr int64_t kMinInnerColumns = 128;

// Below this many columns, a convolution whose weights (the other factor,
// constants) hold this many bytes or more takes them as B instead: its
// output pixels become the rows. Such weights overflow half a 2 MiB L2, and
// as the row operand every group of column panels streams all of them
// again, while as B (packed at compile time) they stream once per row block
// past the pixels' few panels. ResNet-50's layer3 (14 x 14 = 196 pixels, 1
// to 2.4 MB of weights per conv): 10-20% less time per conv on one core.
// Smaller weights stay rows (MobileNet-v2's 14 x 14 convs, 0.1-0.2 MB, ran
// 10-30% slower as B).
constexpr int64_t kFewInnerColumns = 256;
constexpr int64_t kLargeWeightBytes = int64_t{1} << 20;

// Which factor is B (the column operand)? float32: the one that reads the
// output's innermost axis (its last of extent > 1) when only one does and
// the columns it spans are kMinInnerColumns or more, so a tile's rows are
// contiguous in the output: a matmul's weights (x @ W), a convolution's
// activations (NCHW: columns = output pixels, rows = filters). int8, and
// float32 when that does not decide: the weights (the operand reading only
// constants: packed at compile time), else the operand reading the last axis.
bool operand_x_is_b(const Graph& g, const Op& op, DType element, const Expr& x, const Expr& y) {
  const Shape& shape = g.tensor(op.output).shape;
  const int rank = static_cast<int>(shape.size());
  auto reads = [](const Expr& e, int axis) { return uses_any(e, axis, axis + 1); };
  if (element == DType::kF32) {
    int inner = rank - 1;
    while (inner > 0 && shape[static_cast<size_t>(inner)] == 1) --inner;
    if (reads(x, inner) != reads(y, inner)) {
      const Expr& b = reads(x, inner) ? x : y;
      const Expr& a = reads(x, inner) ? y : x;
      int64_t columns = 1, a_rows = 1;
      for (int d = 0; d < rank; ++d) {
        if (reads(b, d) && !reads(a, d)) columns *= shape[static_cast<size_t>(d)];
        if (reads(a, d) && !reads(b, d)) a_rows *= shape[static_cast<size_t>(d)];
      }
      int64_t k = 1;
      for (int64_t e : op.reduce_extents) k *= e;
      const bool large_weights = reads_only_constants(g, op, a) && !reads_only_constants(g, op, b) &&
                                 a_rows * k * static_cast<int64_t>(sizeof(float)) >= kLargeWeightBytes;
      if (columns >= kMinInnerColumns && !(columns < kFewInnerColumns && large_weights)) return reads(x, inner);
    }
  }
  const bool x_const = reads_only_constants(g, op, x), y_const = reads_only_constants(g, op, y);
  return x_const != y_const ? x_const : (reads(x, rank - 1) && !reads(y, rank - 1));
}

}  // namespace

int64_t Gemm::extent(const std::vector<int>& axes) const {
  int64_t n = 1;
  for (int d : axes) n *= out_shape[static_cast<size_t>(d)];
  return n;
}

bool reads_only_constants(const Graph& g, const Op& op, const Expr& e) {
  return !any_node(e, [&](const Expr& n) {
    return n->kind == ExprKind::kLoad &&
           g.tensor(op.inputs[static_cast<size_t>(n->int_value)]).kind != TensorKind::kConstant;
  });
}

std::optional<Gemm> match_gemm(const Graph& g, const Op& op) {
  const Tensor& out = g.tensor(op.output);
  const int rank = static_cast<int>(out.shape.size());
  const int reduce_rank = static_cast<int>(op.reduce_extents.size());
  if (op.reduction != Reduction::kSum || reduce_rank < 1 || rank < 1 ||
      (out.dtype != DType::kI32 && out.dtype != DType::kF32) || op.body->kind != ExprKind::kBinary ||
      op.body->binary_op != BinaryOp::kMul)
    return std::nullopt;
  Gemm m;
  m.element = out.dtype == DType::kI32 ? DType::kI8 : DType::kF32;
  m.out_shape = out.shape;
  m.k_extents = op.reduce_extents;
  m.k = 1;
  for (int64_t e : op.reduce_extents) m.k *= e;
  Expr x, y, zx, zy;
  if (m.element == DType::kF32) {
    x = op.body->args[0];
    y = op.body->args[1];
    zx = zy = int_imm(0, DType::kI32);
    if (!match_float_operand(x) || !match_float_operand(y)) return std::nullopt;
  } else if (!match_operand(op.body->args[0], &x, &zx) || !match_operand(op.body->args[1], &y, &zy)) {
    return std::nullopt;
  }
  auto reads = [](const Expr& e, int axis) { return uses_any(e, axis, axis + 1); };
  if (operand_x_is_b(g, op, m.element, x, y)) {
    std::swap(x, y);
    std::swap(zx, zy);
  }
  for (int d = 0; d < rank; ++d) {
    if (out.shape[static_cast<size_t>(d)] == 1) continue;  // coordinate 0, no role
    const bool by_a = reads(x, d) || reads(zx, d), by_b = reads(y, d) || reads(zy, d);
    (by_b ? (by_a ? m.batch_axes : m.col_axes) : m.row_axes).push_back(d);
  }
  for (int d : m.col_axes)
    if (reads(zx, d)) return std::nullopt;
  for (int d : m.row_axes)
    if (reads(zy, d)) return std::nullopt;
  if (uses_any(zx, rank, rank + reduce_rank) || uses_any(zy, rank, rank + reduce_rank)) return std::nullopt;
  m.a = x;
  m.b = y;
  m.za = zx;
  m.zb = zy;
  return m;
}

std::optional<Gemm> match_int_gemm(const Graph& g, const Op& op) {
  std::optional<Gemm> m = match_gemm(g, op);
  if (m && m->element != DType::kI8) return std::nullopt;
  return m;
}

bool float_gemm_pays(const Gemm& m, bool constant_a, bool constant_b) {
  // Below 8 columns most of every register tile (16 or 32 columns wide) is
  // padding. Below 4 rows the micro-kernel still pays where A is constant:
  // a conv with fewer than 4 filters has its loop nest read each window
  // through a padding select and clamped gathers per product, while the
  // micro-kernel packs each B panel once and computes only the filters'
  // rows (tile<W, R>). NAFNet's last conv (3x3, 16 -> 3 channels over
  // 256 x 256): 65 ms in the loop nest, 2.1 ms on the micro-kernel. And
  // where B is constant and over kStreamedWeights: a vector-matrix product
  // (x @ W, a classifier) then streams W's panels, packed at compile time,
  // front to back, where each column block of the loop nest walked all of
  // W's rows, a row (a page) apart. MobileNetV2's 1280 x 1000 classifier:
  // 0.42 -> 0.23 ms (one thread, AMD Zen 4). Smaller weights stay cached
  // either way, and their packed copy (N padded to the panel width) would
  // only add to the model's weights.
  constexpr int64_t kStreamedWeights = 256 << 10;  // floats: 1 MiB, more than a core's L2 keeps for them
  const bool streamed_b = constant_b && m.k * m.cols() >= kStreamedWeights;
  return m.element == DType::kF32 && m.cols() >= 8 && (m.rows() >= 4 || constant_a || streamed_b);
}

IntGemmBlocking int_gemm_blocking(const ArchSpec& arch, int64_t k_groups, int nr, int ku, int64_t a_panel_bytes) {
  IntGemmBlocking b;
  k_groups = std::max<int64_t>(k_groups, 1);
  // Half of L1 for the B slice (the A panel's slice, the C tile and the
  // stack share the rest); half of L2 for the row block's packed A (the B
  // panels stream through the other half).
  const int64_t l1 = arch.l1_bytes > 0 ? arch.l1_bytes : 32 << 10;
  const int64_t l2 = arch.l2_bytes > 0 ? arch.l2_bytes : 1 << 20;
  const int64_t most_groups = std::max<int64_t>(l1 / 2 / (static_cast<int64_t>(nr) * ku), 1);
  b.k_blocks = (k_groups + most_groups - 1) / most_groups;
  b.kc_groups = (k_groups + b.k_blocks - 1) / b.k_blocks;
  b.k_blocks = (k_groups + b.kc_groups - 1) / b.kc_groups;
  b.max_row_panels = std::max<int64_t>(l2 / 2 / std::max<int64_t>(a_panel_bytes, 1), 1);
  return b;
}

bool is_int8_contraction(const Graph& g, const Op& op) {
  if (op.reduction != Reduction::kSum || op.reduce_extents.empty()) return false;
  auto reads_int8 = [&](const Expr& e) {
    return any_node(e, [&](const Expr& n) {
      return n->kind == ExprKind::kLoad && is_int8(g.tensor(op.inputs[static_cast<size_t>(n->int_value)]).dtype);
    });
  };
  // A product of two int8-derived factors (not a sum of int8 values, such as
  // a quantized average pool's).
  bool product = false;
  visit(op.body, [&](const Expr& n) {
    if (n->kind == ExprKind::kBinary && n->binary_op == BinaryOp::kMul && reads_int8(n->args[0]) &&
        reads_int8(n->args[1]))
      product = true;
  });
  return product;
}

namespace {

// Does `op` read tensor `t` only at its own output index (v0, ..., vr-1;
// 0 along dims of extent 1, as broadcasting spells it)?
// Does every load of t in op read op's own element (t's shape and op's
// output shape equal up to dimensions of extent 1, which read index 0)?
bool reads_at_identity(const Op& op, TensorId t, const Shape& t_shape, const Shape& out_shape) {
  const std::vector<int> t_dims = non_unit_dims(t_shape), out_dims = non_unit_dims(out_shape);
  if (t_dims.size() != out_dims.size()) return false;
  for (size_t i = 0; i < t_dims.size(); ++i)
    if (t_shape[static_cast<size_t>(t_dims[i])] != out_shape[static_cast<size_t>(out_dims[i])]) return false;
  bool ok = true, any = false;
  for (size_t s = 0; s < op.inputs.size(); ++s) {
    if (op.inputs[s] != t) continue;
    visit(op.body, [&](const Expr& n) {
      if (n->kind != ExprKind::kLoad || n->int_value != static_cast<int64_t>(s)) return;
      any = true;
      if (n->args.size() != t_shape.size()) { ok = false; return; }
      size_t next = 0;  // t's non-unit dims read out's non-unit dims in order
      for (size_t d = 0; d < t_shape.size(); ++d) {
        if (t_shape[d] == 1) {  // index 0: a constant, or an output axis of extent 1
          const Expr& i = n->args[d];
          ok = ok && (is_const_int(i) || (i->kind == ExprKind::kVar && i->int_value < static_cast<int64_t>(out_shape.size()) &&
                                          out_shape[static_cast<size_t>(i->int_value)] == 1));
          continue;
        }
        ok = ok && n->args[d]->kind == ExprKind::kVar && n->args[d]->int_value == out_dims[next++];
      }
    });
  }
  return ok && any;
}

}  // namespace

std::vector<int> non_unit_dims(const Shape& shape) {
  std::vector<int> dims;
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1) dims.push_back(static_cast<int>(d));
  return dims;
}

std::vector<Expr> epilogue_coords(const std::vector<Expr>& acc_coords, const Shape& acc_shape,
                                  const Shape& epilogue_shape) {
  const std::vector<int> from = non_unit_dims(acc_shape), to = non_unit_dims(epilogue_shape);
  TG_CHECK(from.size() == to.size(), "epilogue shape ", shape_to_string(epilogue_shape), " is not ",
           shape_to_string(acc_shape), " up to unit dimensions");
  std::vector<Expr> coords(epilogue_shape.size(), int_imm(0));
  for (size_t i = 0; i < from.size(); ++i) coords[static_cast<size_t>(to[i])] = acc_coords[static_cast<size_t>(from[i])];
  return coords;
}

GemmUkernelCounts use_gemm_ukernels(const Graph& g, Schedule& schedule, bool float_gemms,
                                    const WinogradTarget& winograd) {
  std::vector<int> consumers_of(g.tensors.size(), 0);
  for (const Op& op : g.ops)
    for (TensorId t : std::set<TensorId>(op.inputs.begin(), op.inputs.end())) ++consumers_of[t];
  std::vector<int> kernel_of_op(g.ops.size(), -1);
  for (size_t k = 0; k < schedule.kernels.size(); ++k)
    for (int op : schedule.kernels[k].ops) kernel_of_op[static_cast<size_t>(op)] = static_cast<int>(k);
  // Moving a consumer into kernel k is safe when everything else it reads
  // is ready before kernel k runs.
  auto ready_before = [&](const KernelSchedule& consumer, size_t k, TensorId acc) {
    for (int op : consumer.ops)
      for (TensorId t : g.ops[static_cast<size_t>(op)].inputs) {
        if (t == acc) continue;
        const int producer = g.producer(t);
        if (producer >= 0 && kernel_of_op[static_cast<size_t>(producer)] >= static_cast<int>(k) &&
            std::find(consumer.ops.begin(), consumer.ops.end(), producer) == consumer.ops.end())
          return false;
      }
    return true;
  };
  std::vector<bool> removed(schedule.kernels.size(), false);
  GemmUkernelCounts counts;
  for (size_t k = 0; k < schedule.kernels.size(); ++k) {
    KernelSchedule& ks = schedule.kernels[k];
    if (removed[k] || ks.kind != KernelKind::kLoopNest) continue;
    const std::vector<Op> phases = phase_ops(g, ks);
    if (phases.size() != 1) continue;
    const std::optional<Gemm> gemm = match_gemm(g, phases[0]);
    if (gemm && gemm->element == DType::kI8) {
      ks.kind = KernelKind::kIntGemm;
      ++counts.int_gemms;
    } else if (float_gemms && is_direct_conv(g, phases[0])) {
      ks.kind = KernelKind::kDirectConv;
      ++counts.direct_convs;
    } else if (const auto conv = float_gemms && winograd.filter_multiple > 0
                                         ? match_winograd_conv(g, phases[0], winograd.filter_multiple)
                                         : std::nullopt;
               conv && winograd_conv_pays(*conv, winograd)) {
      ks.kind = KernelKind::kWinogradConv;
      ++counts.winograd_convs;
    } else if (gemm && float_gemms &&
               float_gemm_pays(*gemm, reads_only_constants(g, phases[0], gemm->a),
                               reads_only_constants(g, phases[0], gemm->b))) {
      ks.kind = KernelKind::kFloatGemm;
      ++counts.float_gemms;
    } else {
      continue;
    }
    const TensorId acc = phases[0].output;
    if (consumers_of[acc] != 1 ||
        std::find(g.outputs.begin(), g.outputs.end(), acc) != g.outputs.end())
      continue;
    // The consumer kernel: elementwise ops only, which become one expression
    // (every internal edge kept in registers) of the accumulator's shape.
    for (size_t c = k + 1; c < schedule.kernels.size(); ++c) {
      if (removed[c]) continue;
      KernelSchedule consumer = schedule.kernels[c];
      bool reads_acc = false, elementwise = consumer.extra_outputs.empty();
      for (int op : consumer.ops) {
        const Op& o = g.ops[static_cast<size_t>(op)];
        reads_acc |= std::find(o.inputs.begin(), o.inputs.end(), acc) != o.inputs.end();
        elementwise &= o.reduction == Reduction::kNone;
      }
      if (!reads_acc) continue;
      if (!elementwise) break;
      for (FusedEdge& e : consumer.edges) e.level = Connection::kRegister;
      const std::vector<Op> cphases = phase_ops(g, consumer);
      if (cphases.size() != 1) break;
      const Op& epi = cphases[0];
      const Tensor& out = g.tensor(epi.output);
      if (reads_at_identity(epi, acc, g.tensor(acc).shape, out.shape) &&
          ready_before(consumer, k, acc)) {
        const int gemm_op = ks.ops.back();
        ks.ops.insert(ks.ops.end(), consumer.ops.begin(), consumer.ops.end());
        ks.edges.insert(ks.edges.end(), consumer.edges.begin(), consumer.edges.end());
        ks.edges.push_back({gemm_op, consumer.ops.back(), Connection::kShared});
        removed[c] = true;
      }
      break;
    }
  }
  std::vector<KernelSchedule> kept;
  for (size_t k = 0; k < schedule.kernels.size(); ++k)
    if (!removed[k]) kept.push_back(std::move(schedule.kernels[k]));
  schedule.kernels = std::move(kept);
  return counts;
}

}  // namespace tilegraph::scheduler
