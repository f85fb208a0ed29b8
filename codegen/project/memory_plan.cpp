#include "codegen/project/memory_plan.h"

#include <algorithm>
#include <set>

namespace tilegraph::codegen {

namespace {

int64_t align(int64_t n) { return (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

struct Interval1D {
  TensorId tensor;
  int first, last;  // kernel indices
  int64_t bytes;
};

}  // namespace

MemoryPlan plan_memory(const Graph& g, const std::vector<Kernel>& kernels) {
  MemoryPlan plan;
  const std::set<TensorId> outputs(g.outputs.begin(), g.outputs.end());
  std::map<TensorId, Interval1D> lifetimes;
  for (size_t k = 0; k < kernels.size(); ++k) {
    for (const Buffer& b : kernels[k].buffers) {
      if (b.scope != MemoryScope::kGlobal) continue;
      const Tensor& t = g.tensor(b.tensor);
      if (t.kind == TensorKind::kConstant) {
        if (!plan.weights_offsets.count(b.tensor)) {
          plan.weights_offsets[b.tensor] = plan.weights_bytes;
          plan.weights_bytes += align(t.bytes());
        }
        continue;
      }
      if (t.kind == TensorKind::kInput || outputs.count(b.tensor)) continue;
      auto [it, fresh] = lifetimes.try_emplace(b.tensor, Interval1D{b.tensor, static_cast<int>(k),
                                                                    static_cast<int>(k), t.bytes()});
      if (!fresh) it->second.last = static_cast<int>(k);
    }
  }
  std::vector<Interval1D> order;
  for (const auto& [id, life] : lifetimes) order.push_back(life);
  std::stable_sort(order.begin(), order.end(),
                   [](const Interval1D& a, const Interval1D& b) { return a.bytes > b.bytes; });
  std::vector<std::pair<Interval1D, int64_t>> placed;
  for (const Interval1D& t : order) {
    plan.naive_bytes += align(t.bytes);
    // Occupied ranges of tensors alive at the same time, by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const auto& [other, offset] : placed)
      if (!(other.last < t.first || t.last < other.first))
        busy.emplace_back(offset, offset + align(other.bytes));
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + align(t.bytes) <= lo) break;
      offset = std::max(offset, hi);
    }
    placed.emplace_back(t, offset);
    plan.arena_offsets[t.tensor] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + align(t.bytes));
  }
  return plan;
}

}  // namespace tilegraph::codegen
