#include "scheduler/mma_plan.h"

#include <string>

namespace tilegraph::scheduler {

bool has_mma_m16n8k16(const ArchSpec& arch) {
  if (arch.target != "cuda" || arch.isa.rfind("sm_", 0) != 0) return false;
  return std::stoi(arch.isa.substr(3)) >= 80;
}

std::optional<MmaPlan> plan_mma(const Graph& g, const Op& op, const Region& region, int threads, int64_t step,
                                const ArchSpec& arch) {
  if (!has_mma_m16n8k16(arch) || op.reduction != Reduction::kSum || op.reduce_extents.size() != 1) return std::nullopt;
  const int rank = static_cast<int>(g.tensor(op.output).shape.size());
  if (rank < 2 || op.reduce_extents[0] < kMmaK) return std::nullopt;
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
  const int row = rank - 2, col = rank - 1, k = rank;
  auto role = [&](const Expr& f, int reads, int skips) {
    return uses_var(f, reads) && !uses_var(f, skips) && uses_var(f, k);
  };
  MmaPlan p;
  if (role(x, row, col) && role(y, col, row)) {
    p.a = x, p.b = y;
  } else if (role(y, row, col) && role(x, col, row)) {
    p.a = y, p.b = x;
  } else {
    return std::nullopt;
  }
  for (int d = 0; d < row; ++d)
    if (region.dims[d].extent != 1) return std::nullopt;
  const int64_t rows = region.dims[row].extent, cols = region.dims[col].extent;
  if (rows % kMmaM != 0 || cols % kMmaN != 0 || threads % kWarpLanes != 0 || step % kMmaK != 0) return std::nullopt;
  p.tiles_m = rows / kMmaM;
  p.tiles_n = cols / kMmaN;
  const int64_t warps = threads / kWarpLanes;
  if ((p.tiles_m * p.tiles_n) % warps != 0) return std::nullopt;
  p.tiles_per_warp = p.tiles_m * p.tiles_n / warps;
  return p;
}

}  // namespace tilegraph::scheduler
