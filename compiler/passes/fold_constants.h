// Constant folding: an op whose inputs are all constants becomes a constant.
//
// This is how shape subgraphs (Shape → Gather → Unsqueeze → Concat → Reshape)
// and layout ops on weights (Transpose of a MatMul weight) disappear. The
// frontend calls try_fold on every op it emits; fold_constants runs the same
// policy over a whole graph after other rewrites.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "compiler/ir/graph.h"

namespace tilegraph::passes {

// Folding stops at outputs larger than this, so a Expand of a scalar into a
// huge activation-sized tensor stays a kernel instead of bloating weights.bin.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 25;

// A gather of constants (a table indexed by a constant index tensor) folds
// up to this many output elements even where that is many times its inputs.
constexpr int64_t kMaxFoldedGatherElements = int64_t{1} << 16;

// The folded output data, or nullptr when the op does not qualify.
std::shared_ptr<const std::vector<uint8_t>> try_fold(const Graph& g, const Op& op);

// Folds every qualifying op (in order, so chains fold); returns g unchanged
// (same ops) when nothing qualifies.
Graph fold_constants(const Graph& g);

}  // namespace tilegraph::passes
