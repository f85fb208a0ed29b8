// Static memory plan: every intermediate tensor gets an offset in one arena,
// tensors whose lifetimes (producing kernel .. last reading kernel) overlap
// never share bytes; first-fit over tensors sorted by size (largest first).
// Constants get offsets in weights.bin. Inputs and outputs live in caller memory.
// A float GEMM kernel's output may take the bytes of an input it reads last,
// only where it overwrites it (in_place.h).
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"

namespace tilegraph::codegen {

constexpr int64_t kBufferAlignment = 64;

struct MemoryPlan {
  int64_t arena_bytes = 0;
  std::map<TensorId, int64_t> arena_offsets;   // intermediates
  int64_t weights_bytes = 0;
  std::map<TensorId, int64_t> weights_offsets; // constants read by some kernel
  int64_t naive_bytes = 0;                     // sum of intermediates (no reuse), for stats
  // In-place outputs (in_place.h): output tensor -> the input whose bytes it takes.
  std::map<TensorId, TensorId> in_place;
};

MemoryPlan plan_memory(const Graph& g, const std::vector<Kernel>& kernels);

// Marks the buffers of plan.in_place's pairs in the kernels that write them may_alias.
void mark_in_place_buffers(const MemoryPlan& plan, std::vector<Kernel>& kernels);

}  // namespace tilegraph::codegen
