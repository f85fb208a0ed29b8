// --memory-budget BYTES: the memory a compiled model may hold (its activation
// arena, its weights, the CPU kernels' per-thread scratch; on a GPU also the
// device copies of its inputs and outputs) as one more memory tier for the
// scheduler. When the plan does not fit, the driver runs the graph in
// micro-batches (compiler/passes/split_batch.h): the arena is sized for one
// micro-batch and the generated tg_model_run streams the inputs and outputs
// chunk by chunk. The pieces the driver's search uses live here.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/kernel_ir/kernel_ir.h"
#include "codegen/project/memory_plan.h"
#include "compiler/ir/graph.h"

namespace tilegraph::driver {

// "4096", "64K", "64M", "1.5G", "2GiB", "512MB": suffixes K, M, G, T are
// powers of 1024 (a trailing "B" or "iB" is allowed). A UserError naming
// --memory-budget for anything else, zero or a negative size.
int64_t parse_byte_size(const std::string& text);

// "48.0 MiB", "512 B": for messages.
std::string format_bytes(int64_t bytes);

struct MemoryPeak {
  int64_t arena = 0;    // intermediates (codegen/project/memory_plan.h)
  int64_t weights = 0;  // weights.bin's constants
  int64_t scratch = 0;  // CPU: the largest kernel's per-thread scratch times the threads
  int64_t io = 0;       // GPU: the device copies of the inputs and outputs
  int64_t total() const { return arena + weights + scratch + io; }
  nlohmann::json to_json() const;
};

// threads: the CPU threads that each hold a scratch arena (0 on a GPU, whose
// block arena is on-chip shared memory); gpu: count the inputs and outputs.
MemoryPeak memory_peak(const Graph& g, const codegen::MemoryPlan& plan, const std::vector<codegen::Kernel>& kernels,
                       int threads, bool gpu);

// The micro-batches to try for batch N, largest first: the divisors of N
// below N, from the largest whose untiled arena (and device inputs/outputs)
// scaled down to it fits the budget (a lower bound of its peak: the driver
// compiles each to know). Always ends with 1, so the last try is the
// smallest peak batch tiling reaches.
std::vector<int64_t> micro_batch_candidates(int64_t batch, const MemoryPeak& untiled, int64_t budget);

// What holds a peak, for the error when nothing fits: "weights (30.0 MiB)"
// or "the activation arena (12.0 MiB; its largest tensor 'x', 4.0 MiB, from ONNX node 'Conv_3')".
std::string peak_holder(const Graph& g, const codegen::MemoryPlan& plan, const MemoryPeak& peak);

}  // namespace tilegraph::driver
