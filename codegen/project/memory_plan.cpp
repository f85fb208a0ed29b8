#include "codegen/project/memory_plan.h"

#include <algorithm>
#include <set>

#include "codegen/project/in_place.h"

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
  // In-place outputs: kernel k's output takes the bytes of an input whose
  // life ends at k, of its size, that k reads only where it overwrites it.
  auto root = [&](TensorId t) {
    while (plan.in_place.count(t)) t = plan.in_place.at(t);
    return t;
  };
  for (size_t k = 0; k < kernels.size(); ++k) {
    const Kernel& kernel = kernels[k];
    if (kernel.schedule.kind != scheduler::KernelKind::kFloatGemm) continue;
    for (size_t o = 0; o < kernel.buffers.size(); ++o) {
      const Buffer& out = kernel.buffers[o];
      if (out.scope != MemoryScope::kGlobal || !out.written || !lifetimes.count(out.tensor)) continue;
      for (size_t i = 0; i < kernel.buffers.size(); ++i) {
        const Buffer& in = kernel.buffers[i];
        if (in.scope != MemoryScope::kGlobal || in.written || in.tensor == out.tensor) continue;
        const auto life = lifetimes.find(root(in.tensor));
        if (life == lifetimes.end() || life->second.last != static_cast<int>(k) ||
            life->second.bytes != g.tensor(out.tensor).bytes() ||
            !reads_only_in_place(kernel, static_cast<int>(i), static_cast<int>(o)))
          continue;
        life->second.last = lifetimes.at(out.tensor).last;
        lifetimes.erase(out.tensor);
        plan.in_place[out.tensor] = in.tensor;
        break;
      }
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
  for (const auto& [out, in] : plan.in_place) plan.arena_offsets[out] = plan.arena_offsets.at(root(in));
  return plan;
}

void mark_in_place_buffers(const MemoryPlan& plan, std::vector<Kernel>& kernels) {
  for (Kernel& k : kernels) {
    for (Buffer& out : k.buffers) {
      if (out.scope != MemoryScope::kGlobal || !out.written || !plan.in_place.count(out.tensor)) continue;
      for (Buffer& in : k.buffers)
        if (in.scope == MemoryScope::kGlobal && in.tensor == plan.in_place.at(out.tensor)) out.may_alias = in.may_alias = true;
    }
  }
}

}  // namespace tilegraph::codegen
