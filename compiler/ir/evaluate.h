// The reference interpreter: computes an op's output from constant inputs by
// walking its compute definition. Used for constant folding (shape subgraphs,
// weight layout ops) and as the oracle in unit tests. Slow but exact to the
// semantics in expr.h / graph.h.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ir/scalar.h"

namespace tilegraph {

Scalar read_element(const uint8_t* base, DType t, int64_t index);
void write_element(uint8_t* base, DType t, int64_t index, Scalar value);

// Every input of op must be a constant (Tensor::data set).
std::shared_ptr<const std::vector<uint8_t>> evaluate_op(const Graph& g, const Op& op);

}  // namespace tilegraph

namespace tilegraph {

// Runs the whole graph with the interpreter. `inputs` holds one buffer per
// graph input (in g.inputs order, raw little-endian bytes of its shape/dtype);
// returns one buffer per graph output. The oracle for lowering tests.
std::vector<std::vector<uint8_t>> evaluate_graph(const Graph& g,
                                                 const std::vector<std::vector<uint8_t>>& inputs);

}  // namespace tilegraph
