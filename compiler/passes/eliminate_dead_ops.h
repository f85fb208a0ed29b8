// Removes ops whose outputs nobody reads (neither an op nor the graph outputs)
// and their now-unused intermediate tensors' producers, transitively.
#pragma once
#include "compiler/ir/graph.h"

namespace tilegraph::passes {

// Also drops op input slots that the body no longer loads.
Graph eliminate_dead_ops(const Graph& g);

}  // namespace tilegraph::passes
