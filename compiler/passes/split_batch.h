// Batch tiling for a memory budget (driver --memory-budget): a graph whose
// every op keeps batch elements apart can run as micro-batches, one after
// another, over an arena sized for one micro-batch.
//
// "Keeps batch elements apart" is checked on the compute definitions
// (graph.h): every graph input leads with the same batch dimension N; an op
// that reads a batched tensor has a batched output (leading dimension N), and
// its body uses its first output axis Var(0) only as the first index of its
// loads of batched tensors, which always index that dimension with exactly
// Var(0). Then out[b, ...] depends on inputs[b, ...] alone, so running the
// graph on rows [b0, b0 + m) of every input gives those rows of every output.
// Ops that read no batched tensor are left as they are (they compute the same
// values for every chunk); every graph output must be batched.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace tilegraph::passes {

struct BatchSplit {
  int64_t batch = 0;             // N, the inputs' leading dimension
  std::vector<bool> batched;     // per tensor: leads with the batch dimension
  // Empty when the graph splits; otherwise one sentence naming the input,
  // output or ONNX node that mixes batch elements.
  std::string blocker;
  bool splits() const { return blocker.empty(); }
};

BatchSplit analyze_batch_split(const Graph& g);

// g with the batch dimension of every batched tensor set to micro_batch
// (split.splits(), 0 < micro_batch <= split.batch). Op bodies are unchanged:
// Var(0) ranges over the output's leading dimension. A copy of g when
// micro_batch == split.batch.
Graph split_batch(const Graph& g, const BatchSplit& split, int64_t micro_batch);

}  // namespace tilegraph::passes
