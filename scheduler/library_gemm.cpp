#include "scheduler/library_gemm.h"

#include <climits>
#include <map>
#include <vector>

#include "compiler/ir/simplify.h"

namespace tilegraph::scheduler {

namespace {

// constant + sum coef[v] * Var(v).
struct Affine {
  int64_t constant = 0;
  std::map<int, int64_t> coef;
  int64_t of(int v) const {
    auto it = coef.find(v);
    return it == coef.end() ? 0 : it->second;
  }
};

// Adds scale * e to *out; false when e is not affine in the vars (a
// floordiv, a product of two vars, a load...).
bool add_affine(const Expr& e, int64_t scale, Affine* out) {
  int64_t c = 0;
  switch (e->kind) {
    case ExprKind::kIntImm: out->constant += scale * e->int_value; return true;
    case ExprKind::kVar: out->coef[static_cast<int>(e->int_value)] += scale; return true;
    case ExprKind::kUnary:
      return e->unary_op == UnaryOp::kNeg && add_affine(e->args[0], -scale, out);
    case ExprKind::kBinary:
      switch (e->binary_op) {
        case BinaryOp::kAdd: return add_affine(e->args[0], scale, out) && add_affine(e->args[1], scale, out);
        case BinaryOp::kSub: return add_affine(e->args[0], scale, out) && add_affine(e->args[1], -scale, out);
        case BinaryOp::kMul:
          if (is_const_int(e->args[0], &c)) return add_affine(e->args[1], scale * c, out);
          if (is_const_int(e->args[1], &c)) return add_affine(e->args[0], scale * c, out);
          return false;
        default: return false;
      }
    default: return false;
  }
}

// The flat element offset a load reads, as an affine function of the op's
// vars (nullopt when it is not one).
std::optional<Affine> load_offset(const Graph& g, const Op& op, const Expr& load,
                                  const std::vector<Interval>& bounds) {
  const Shape& shape = g.tensor(op.inputs[static_cast<size_t>(load->int_value)]).shape;
  Expr offset = int_imm(0);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    offset = offset + load->args[d] * stride;
    stride *= shape[d];
  }
  Affine a;
  if (!add_affine(simplify(offset, bounds), 1, &a)) return std::nullopt;
  for (const auto& [v, c] : a.coef)
    if (c < 0) return std::nullopt;  // a reversed axis: no BLAS layout has negative strides
  return a;
}

// The axes of one role flattened to (extent, stride) for one operand whose
// stride along axis d is stride_of(d): the outer axis's stride must be the
// inner one's times its extent. Axes ascending; nullopt when they do not flatten.
template <typename StrideOf>
std::optional<std::pair<int64_t, int64_t>> flatten(const std::vector<int>& axes, const std::vector<int64_t>& extents,
                                                   StrideOf stride_of) {
  if (axes.empty()) return std::make_pair(int64_t{1}, int64_t{0});
  const int64_t inner = stride_of(axes.back());
  int64_t span = inner, extent = 1;
  for (size_t i = axes.size(); i-- > 0;) {
    const int d = axes[i];
    if (stride_of(d) != span) return std::nullopt;
    span = stride_of(d) * extents[static_cast<size_t>(d)];
    extent *= extents[static_cast<size_t>(d)];
  }
  return std::make_pair(extent, inner);
}

// A rows x cols matrix with these strides as a BLAS layout: one unit stride
// (along an extent > 1) and a leading dimension covering the other extent.
std::optional<GemmMatrix> layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  GemmMatrix x;
  if ((cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= cols)) {
    x.row_major = true;
    x.ld = rows == 1 ? cols : row_stride;
    return x;
  }
  if ((rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= rows)) {
    x.row_major = false;
    x.ld = cols == 1 ? rows : col_stride;
    return x;
  }
  return std::nullopt;
}

}  // namespace

std::string LibraryGemm::epilogue_name() const {
  if (bias_op >= 0) return relu_op >= 0 ? "bias+relu" : "bias";
  return relu_op >= 0 ? "relu" : "none";
}

namespace {

// Does `load` (of tensor `in`, of `shape`) read it at the op's own index?
bool reads_own_index(const Expr& load, const Shape& shape) {
  for (size_t d = 0; d < shape.size(); ++d) {
    const Expr& i = load->args[d];
    if (shape[d] != 1 && !(i->kind == ExprKind::kVar && i->int_value == static_cast<int64_t>(d))) return false;
  }
  return true;
}

}  // namespace

bool is_relu_epilogue(const Graph& g, const Op& consumer, TensorId in) {
  const Tensor& t = g.tensor(in);
  if (consumer.reduction != Reduction::kNone || g.tensor(consumer.output).shape != t.shape ||
      g.tensor(consumer.output).dtype != t.dtype)
    return false;
  const Expr& body = consumer.body;
  if (body->kind != ExprKind::kBinary || body->binary_op != BinaryOp::kMax) return false;
  for (int order = 0; order < 2; ++order) {
    const Expr& x = body->args[order];
    const Expr& zero = body->args[1 - order];
    if (x->kind == ExprKind::kLoad && consumer.inputs[static_cast<size_t>(x->int_value)] == in &&
        zero->kind == ExprKind::kFloatImm && zero->float_value == 0.0 && reads_own_index(x, t.shape))
      return true;
  }
  return false;
}

int match_bias_epilogue(const Graph& g, const Op& consumer, TensorId gemm_out, const LibraryGemm& gemm) {
  const Shape& shape = g.tensor(gemm_out).shape;
  const int rank = static_cast<int>(shape.size());
  if (consumer.reduction != Reduction::kNone || !gemm.c.row_major || rank == 0 || gemm.n != shape.back() ||
      g.tensor(consumer.output).shape != shape || g.tensor(consumer.output).dtype != gemm.dtype)
    return -1;
  const Expr& body = consumer.body;
  if (body->kind != ExprKind::kBinary || body->binary_op != BinaryOp::kAdd) return -1;
  auto slot_of = [&](const Expr& e) { return e->kind == ExprKind::kLoad ? static_cast<int>(e->int_value) : -1; };
  for (int order = 0; order < 2; ++order) {
    const Expr& acc = body->args[order];
    const Expr& bias = body->args[1 - order];
    const int acc_slot = slot_of(acc), bias_slot = slot_of(bias);
    if (acc_slot < 0 || bias_slot < 0 || consumer.inputs[acc_slot] != gemm_out) continue;
    const bool own_index = reads_own_index(acc, shape);
    const Tensor& b = g.tensor(consumer.inputs[bias_slot]);
    if (!own_index || b.kind != TensorKind::kConstant || b.dtype != gemm.dtype || num_elements(b.shape) != gemm.n)
      continue;
    // The bias's flat index must be the last axis itself.
    Expr flat = int_imm(0);
    for (size_t d = 0; d < b.shape.size(); ++d) flat = flat * b.shape[d] + bias->args[d];
    std::vector<Interval> bounds;
    for (int64_t e : shape) bounds.push_back(Interval::range(std::max<int64_t>(e, 1)));
    const Expr index = simplify(flat, bounds);
    if (index->kind == ExprKind::kVar && index->int_value == rank - 1) return bias_slot;
  }
  return -1;
}

int64_t gemm_element_offset(const GemmMatrix& x, int64_t batch, int64_t row, int64_t col) {
  return x.offset + batch * x.batch_stride + (x.row_major ? row * x.ld + col : row + col * x.ld);
}

std::optional<LibraryGemm> match_library_gemm(const Graph& g, const Op& op) {
  const Tensor& out = g.tensor(op.output);
  if (op.reduction != Reduction::kSum || op.reduce_extents.empty() ||
      (out.dtype != DType::kF32 && out.dtype != DType::kF16))
    return std::nullopt;
  const Expr& body = op.body;
  if (body->kind != ExprKind::kBinary || body->binary_op != BinaryOp::kMul) return std::nullopt;
  Expr x = body->args[0], y = body->args[1];
  for (const Expr& operand : {x, y})
    if (operand->kind != ExprKind::kLoad || operand->dtype != out.dtype || has_indirect_load(operand))
      return std::nullopt;

  // Extents and bounds of every var: output axes, then reduce axes.
  const int rank = static_cast<int>(out.shape.size());
  std::vector<int64_t> extents(out.shape.begin(), out.shape.end());
  extents.insert(extents.end(), op.reduce_extents.begin(), op.reduce_extents.end());
  std::vector<Interval> bounds;
  for (int64_t e : extents) bounds.push_back(Interval::range(e));
  std::optional<Affine> ax = load_offset(g, op, x, bounds), ay = load_offset(g, op, y, bounds);
  if (!ax || !ay) return std::nullopt;

  // A is the operand with the rows: B reads the output's last non-unit axis
  // alone (the columns of x @ y).
  int last = -1;
  for (int d = 0; d < rank; ++d)
    if (out.shape[static_cast<size_t>(d)] > 1) last = d;
  LibraryGemm gemm;
  gemm.a_slot = static_cast<int>(x->int_value);
  gemm.b_slot = static_cast<int>(y->int_value);
  if (last >= 0 && ax->of(last) != 0 && ay->of(last) == 0) {
    std::swap(ax, ay);
    std::swap(gemm.a_slot, gemm.b_slot);
  }

  std::vector<int> batch_axes, row_axes, col_axes, k_axes;
  for (int d = 0; d < static_cast<int>(extents.size()); ++d) {
    if (extents[static_cast<size_t>(d)] == 1) continue;  // always index 0: no role
    const bool by_a = ax->of(d) != 0, by_b = ay->of(d) != 0;
    if (d >= rank) {
      if (!by_a || !by_b) return std::nullopt;  // a sum over a broadcast operand
      k_axes.push_back(d);
    } else if (by_a && by_b) {
      batch_axes.push_back(d);
    } else if (by_a || by_b) {
      (by_a ? row_axes : col_axes).push_back(d);
    } else {
      return std::nullopt;  // an output axis neither operand reads
    }
  }
  std::vector<int64_t> out_strides(static_cast<size_t>(rank), 1);
  for (int d = rank - 1; d > 0; --d)
    out_strides[static_cast<size_t>(d - 1)] = out_strides[static_cast<size_t>(d)] * out.shape[static_cast<size_t>(d)];
  auto a_stride = [&](int d) { return ax->of(d); };
  auto b_stride = [&](int d) { return ay->of(d); };
  auto c_stride = [&](int d) { return out_strides[static_cast<size_t>(d)]; };
  const auto a_batch = flatten(batch_axes, extents, a_stride), b_batch = flatten(batch_axes, extents, b_stride),
             c_batch = flatten(batch_axes, extents, c_stride), a_rows = flatten(row_axes, extents, a_stride),
             c_rows = flatten(row_axes, extents, c_stride), b_cols = flatten(col_axes, extents, b_stride),
             c_cols = flatten(col_axes, extents, c_stride), a_k = flatten(k_axes, extents, a_stride),
             b_k = flatten(k_axes, extents, b_stride);
  if (!a_batch || !b_batch || !c_batch || !a_rows || !c_rows || !b_cols || !c_cols || !a_k || !b_k)
    return std::nullopt;
  gemm.dtype = out.dtype;
  gemm.batch = a_batch->first;
  gemm.m = a_rows->first;
  gemm.n = b_cols->first;
  gemm.k = a_k->first;
  if (gemm.batch > INT32_MAX) return std::nullopt;  // cuBLASLt's batch count is an int32
  const auto a = layout(gemm.m, gemm.k, a_rows->second, a_k->second);
  const auto b = layout(gemm.k, gemm.n, b_k->second, b_cols->second);
  const auto c = layout(gemm.m, gemm.n, c_rows->second, c_cols->second);
  if (!a || !b || !c) return std::nullopt;
  gemm.a = *a;
  gemm.b = *b;
  gemm.c = *c;
  gemm.a.offset = ax->constant;
  gemm.b.offset = ay->constant;
  gemm.a.batch_stride = a_batch->second;
  gemm.b.batch_stride = b_batch->second;
  gemm.c.batch_stride = c_batch->second;
  return gemm;
}

}  // namespace tilegraph::scheduler
