#include "compiler/passes/split_reductions.h"

#include <cstdlib>
#include <optional>

namespace tilegraph::passes {

namespace {

constexpr int64_t kMaxOutputs = 16;
constexpr int64_t kMinPoints = 16384;
// Partials per output: enough rows to spread over any core count, few enough
// that the final combine stays negligible.
constexpr int64_t kMinPartials = 16;
constexpr int64_t kMaxPartials = 4096;
// Points each partial still reduces: a vector loop's worth at least.
constexpr int64_t kMinInnerPoints = 64;

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t e : v) n = num_elements({n, e});
  return n;
}

// The partial reduction of `op` (output rank r): reduce axis `axis` becomes
// spatial axis 0 (outermost, so a row of partials and the producer rows it
// reads tile together), the output's axes follow, then the other reduce axes
// in their order.
Op partial_over_axis(const Op& op, int rank, size_t axis) {
  std::vector<Expr> values;
  for (int v = 0; v < rank; ++v) values.push_back(var(v + 1));
  int next = rank + 1;
  for (size_t a = 0; a < op.reduce_extents.size(); ++a)
    values.push_back(a == axis ? var(0) : var(next++));
  Op partial = op;
  partial.body = substitute_vars(op.body, values);
  partial.reduce_extents.erase(partial.reduce_extents.begin() + static_cast<std::ptrdiff_t>(axis));
  return partial;
}

// The partial reduction of a one-axis reduction of extent outer * inner:
// reduce var r -> var(0) * inner + (r + 1), spatial v -> v + 1.
Op partial_over_split_axis(const Op& op, int rank, int64_t inner) {
  std::vector<Expr> values;
  for (int v = 0; v < rank; ++v) values.push_back(var(v + 1));
  values.push_back(var(0) * inner + var(rank + 1));
  Op partial = op;
  partial.body = substitute_vars(op.body, values);
  partial.reduce_extents = {inner};
  return partial;
}

// The partial reduction worth splitting `op` into, and its number of
// partials, or nothing.
std::optional<std::pair<Op, int64_t>> partial_reduction(const Graph& g, const Op& op) {
  if (op.reduction == Reduction::kNone || op.reduce_extents.empty()) return std::nullopt;
  const Tensor& out = g.tensor(op.output);
  const int64_t points = product(op.reduce_extents);
  if (num_elements(out.shape) > kMaxOutputs || points < kMinPoints) return std::nullopt;
  const int rank = static_cast<int>(out.shape.size());
  // The outermost reduce axis that can hold the partials, so each partial
  // reduces the contiguous inner axes.
  for (size_t a = 0; a < op.reduce_extents.size(); ++a) {
    const int64_t e = op.reduce_extents[a];
    if (e >= kMinPartials && e <= kMaxPartials && points / e >= kMinInnerPoints)
      return std::make_pair(partial_over_axis(op, rank, a), e);
  }
  if (op.reduce_extents.size() != 1) return std::nullopt;
  // One long axis: split it by the divisor giving partials nearest 256.
  const int64_t extent = op.reduce_extents[0];
  int64_t best = 0;
  for (int64_t outer = kMinPartials; outer <= kMaxPartials && outer <= extent / kMinInnerPoints; ++outer)
    if (extent % outer == 0 && (best == 0 || std::llabs(outer - 256) < std::llabs(best - 256))) best = outer;
  if (best == 0) return std::nullopt;
  return std::make_pair(partial_over_split_axis(op, rank, extent / best), best);
}

}  // namespace

Graph split_reductions(const Graph& g) {
  Graph result = g;
  result.ops.clear();
  bool changed = false;
  for (const Op& op : g.ops) {
    std::optional<std::pair<Op, int64_t>> split = partial_reduction(g, op);
    if (!split) {
      result.ops.push_back(op);
      continue;
    }
    auto& [partial, partials] = *split;
    const DType dtype = g.tensor(op.output).dtype;
    Shape shape = g.tensor(op.output).shape;
    const int rank = static_cast<int>(shape.size());
    shape.insert(shape.begin(), partials);
    partial.name = result.unique_op_name(op.name + "_partial");
    partial.output = result.add_tensor({partial.name, dtype, shape, TensorKind::kIntermediate, nullptr});
    Op final_op = op;
    final_op.inputs = {partial.output};
    final_op.reduce_extents = {partials};
    std::vector<Expr> indices = {var(rank)};  // the final op's reduce var
    for (int v = 0; v < rank; ++v) indices.push_back(var(v));
    final_op.body = load(0, dtype, std::move(indices));
    result.ops.push_back(std::move(partial));
    result.ops.push_back(std::move(final_op));
    changed = true;
  }
  return changed ? result : g;
}

}  // namespace tilegraph::passes
