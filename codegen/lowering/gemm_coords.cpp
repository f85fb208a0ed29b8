#include "codegen/lowering/gemm_coords.h"

#include "codegen/kernel_ir/kernel_exprs.h"

namespace tilegraph::codegen {

namespace {

// Splits flat index x (row-major over `axes` of `shape`) into (*out)[axis].
void unflatten(const Expr& x, const std::vector<int>& axes, const Shape& shape, std::vector<Expr>* out) {
  Expr rest = x;
  for (size_t i = axes.size(); i-- > 0;) {
    const int64_t e = shape[static_cast<size_t>(axes[i])];
    (*out)[static_cast<size_t>(axes[i])] = i == 0 ? rest : floormod(rest, e);
    rest = floordiv(rest, e);
  }
}

}  // namespace

std::vector<Expr> gemm_coords(const scheduler::Gemm& m, const Expr& b, const Expr& r, const Expr& c) {
  std::vector<Expr> out(m.out_shape.size(), int_imm(0));
  unflatten(b, m.batch_axes, m.out_shape, &out);
  unflatten(r, m.row_axes, m.out_shape, &out);
  unflatten(c, m.col_axes, m.out_shape, &out);
  return out;
}

std::vector<Expr> gemm_op_vars(const scheduler::Gemm& m, const Expr& b, const Expr& r, const Expr& c,
                               const std::vector<Expr>& ks) {
  std::vector<Expr> vars = gemm_coords(m, b, r, c);
  vars.insert(vars.end(), ks.begin(), ks.end());
  return vars;
}

std::vector<Expr> gemm_op_vars(const scheduler::Gemm& m, const Expr& b, const Expr& r, const Expr& c,
                               const Expr& k) {
  std::vector<int> k_axes;
  for (size_t i = 0; i < m.k_extents.size(); ++i) k_axes.push_back(static_cast<int>(i));
  std::vector<Expr> ks(m.k_extents.size());
  unflatten(k, k_axes, m.k_extents, &ks);
  return gemm_op_vars(m, b, r, c, ks);
}

Stmt gemm_output_store(const Graph& g, const std::vector<Op>& phases, const scheduler::Gemm& m,
                       const std::vector<int>& epilogue_buffers, int output, const std::vector<Interval>& bounds,
                       const Expr& b, const Expr& row, const Expr& col, const Expr& acc) {
  return epilogue_output_store(g, phases, m.out_shape, epilogue_buffers, output, bounds,
                               gemm_coords(m, b, row, col), acc);
}

Stmt epilogue_output_store(const Graph& g, const std::vector<Op>& phases, const Shape& out_shape,
                           const std::vector<int>& epilogue_buffers, int output, const std::vector<Interval>& bounds,
                           const std::vector<Expr>& coords, const Expr& acc) {
  const Expr index = finalize_indices(linear_index(out_shape, coords), bounds);
  if (phases.size() == 1) return make_store(output, index, acc);
  const Op& epi = phases[1];
  const std::vector<Expr> epi_coords = scheduler::epilogue_coords(coords, out_shape, g.tensor(epi.output).shape);
  Expr e = to_kernel_loads(g, epi, substitute_vars(epi.body, epi_coords), bounds);
  e = rewrite(e, [&](const Expr& n) -> Expr {
    if (n->kind != ExprKind::kLoad) return nullptr;
    const int buffer = epilogue_buffers.at(static_cast<size_t>(n->int_value));
    if (buffer < 0) return acc;
    return load(buffer, n->dtype, n->args);
  });
  return make_store(output, index, finalize_indices(e, bounds));
}

}  // namespace tilegraph::codegen
