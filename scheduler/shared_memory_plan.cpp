// plan_shared_memory (cost_model.h): best-fit placement with reuse across
// phases. Buffers are placed largest first (ties: in input order, so the plan
// is deterministic); each one sees as occupied only the byte ranges of the
// already placed buffers whose phase ranges overlap its own, and takes the
// smallest free gap between them that holds it (lowest offset on ties), or
// the end of the occupied ranges when no gap does. Reserved sizes are
// rounded up to the alignment, so every gap starts aligned.
#include <algorithm>
#include <numeric>

#include "compiler/ir/error.h"
#include "scheduler/cost_model.h"

namespace tilegraph::scheduler {

namespace {

struct Range {
  int64_t begin = 0;
  int64_t end = 0;
};

bool lifetimes_overlap(const SharedBufferUse& a, const SharedBufferUse& b) {
  return a.first_phase <= b.last_phase && b.first_phase <= a.last_phase;
}

// Best-fit offset for `size` bytes among the occupied ranges (any order).
int64_t best_fit(std::vector<Range> occupied, int64_t size) {
  std::sort(occupied.begin(), occupied.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  int64_t best = -1, best_gap = 0;
  int64_t cursor = 0;  // end of the occupied bytes so far
  for (const Range& r : occupied) {
    int64_t gap = r.begin - cursor;
    if (gap >= size && (best < 0 || gap < best_gap)) {
      best = cursor;
      best_gap = gap;
    }
    cursor = std::max(cursor, r.end);
  }
  return best >= 0 ? best : cursor;
}

}  // namespace

SharedMemoryPlan plan_shared_memory(const std::vector<SharedBufferUse>& buffers, int64_t alignment) {
  TG_CHECK(alignment >= 1, "alignment ", alignment);
  for (const SharedBufferUse& b : buffers)
    TG_CHECK(b.bytes >= 0 && b.first_phase <= b.last_phase, "buffer of ", b.bytes, " bytes over phases ",
             b.first_phase, "..", b.last_phase);

  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });

  SharedMemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> placed;
  for (size_t i : order) {
    const SharedBufferUse& buffer = buffers[i];
    if (buffer.bytes == 0) continue;  // occupies nothing; offset 0
    const int64_t reserved = (buffer.bytes + alignment - 1) / alignment * alignment;
    std::vector<Range> occupied;
    for (size_t p : placed) {
      if (!lifetimes_overlap(buffer, buffers[p])) continue;
      int64_t p_reserved = (buffers[p].bytes + alignment - 1) / alignment * alignment;
      occupied.push_back({plan.offsets[p], plan.offsets[p] + p_reserved});
    }
    plan.offsets[i] = best_fit(std::move(occupied), reserved);
    plan.peak_bytes = std::max(plan.peak_bytes, plan.offsets[i] + buffer.bytes);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace tilegraph::scheduler
