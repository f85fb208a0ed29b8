// `tune --fp16`: an fp32 model computed in half precision.
#pragma once
#include "compiler/ir/graph.h"

namespace tilegraph::passes {

// Every float32 constant and intermediate tensor becomes float16 (constants
// are rounded to nearest even); graph inputs and outputs keep their float32
// type, so callers feed and read the same buffers as without --fp16. Op
// bodies follow their output: a body writing a half tensor computes in half
// (its loads of float32 graph inputs are rounded to half first), a body
// writing a float32 graph output reads its half inputs widened.
//
// What that costs in precision is the storage rounding only: the printers
// compute half expressions in float (c_printer: half is computed as float,
// rounded on stores and on casts to half) and reductions of half outputs
// accumulate in float (lower_block_kernel, lower_cpu_kernel), so a matmul's
// products and sums, softmax's sum and layer norm's moments keep fp32
// precision and are rounded once, when stored. Float64 and integer tensors
// are left alone. Returns g when it has no float32 tensor to convert.
Graph to_half_precision(const Graph& g);

}  // namespace tilegraph::passes
