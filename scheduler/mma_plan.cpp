#include "scheduler/mma_plan.h"

#include <string>

namespace tilegraph::scheduler {

bool has_mma_m16n8k16(const ArchSpec& arch) {
  if (!arch.tensor_cores || arch.target != "cuda" || arch.isa.rfind("sm_", 0) != 0) return false;
  return std::stoi(arch.isa.substr(3)) >= 80;
}

namespace {

// The plan with `a` and `b` in these roles, if the region tiles.
std::optional<MmaPlan> plan_roles(const Expr& a, const Expr& b, int rank, const Region& region, int threads) {
  MmaPlan p;
  p.a = a, p.b = b;
  p.rows = p.cols = 1;
  for (int d = 0; d < rank; ++d) {
    const bool in_a = uses_var(a, d), in_b = uses_var(b, d);
    const int64_t extent = region.dims[d].extent;
    if (in_a && !in_b) {
      p.row_axes.push_back(d);
      p.rows *= extent;
    } else if (in_b && !in_a) {
      p.col_axes.push_back(d);
      p.cols *= extent;
    } else if (extent != 1) {
      return std::nullopt;  // a batch axis (or a broadcast) inside the block
    }
  }
  if (p.row_axes.empty() || p.col_axes.empty() || p.rows % kMmaM != 0 || p.cols % kMmaN != 0) return std::nullopt;
  p.tiles_m = p.rows / kMmaM;
  p.tiles_n = p.cols / kMmaN;
  const int64_t warps = threads / kWarpLanes, tiles = p.tiles_m * p.tiles_n;
  p.tiles_per_warp = (tiles + warps - 1) / warps;
  if (p.tiles_per_warp * warps - tiles >= p.tiles_per_warp) return std::nullopt;  // a warp with nothing to do
  return p;
}

}  // namespace

std::optional<MmaPlan> plan_mma(const Graph& g, const Op& op, const Region& region, int threads, int64_t step,
                                const ArchSpec& arch) {
  (void)step;  // any chunk: the 16-deep steps cover it with a guard
  if (!has_mma_m16n8k16(arch) || op.reduction != Reduction::kSum || op.reduce_extents.empty() ||
      threads % kWarpLanes != 0)
    return std::nullopt;
  const int rank = static_cast<int>(g.tensor(op.output).shape.size());
  int64_t points = 1;
  for (int64_t e : op.reduce_extents) points *= e;
  if (rank < 2 || points < kMmaK) return std::nullopt;
  const Expr& body = op.body;
  if (body->kind != ExprKind::kBinary || body->binary_op != BinaryOp::kMul) return std::nullopt;
  // Half factors, or half values widened to float (a float32 graph output
  // of a --fp16 build): the products are the same, exact in float.
  auto half_factor = [](const Expr& f) -> Expr {
    if (f->dtype == DType::kF16) return f;
    if (f->kind == ExprKind::kCast && f->dtype == DType::kF32 && f->args[0]->dtype == DType::kF16) return f->args[0];
    return nullptr;
  };
  const Expr x = half_factor(body->args[0]), y = half_factor(body->args[1]);
  if (!x || !y) return std::nullopt;
  for (size_t r = 0; r < op.reduce_extents.size(); ++r)  // each reduce axis pairs the two factors
    if (!uses_var(x, rank + static_cast<int>(r)) && !uses_var(y, rank + static_cast<int>(r))) return std::nullopt;
  if (std::optional<MmaPlan> p = plan_roles(x, y, rank, region, threads)) return p;
  return plan_roles(y, x, rank, region, threads);
}

}  // namespace tilegraph::scheduler
