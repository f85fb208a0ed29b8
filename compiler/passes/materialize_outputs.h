// Every graph output becomes the output of its own op, named as the model
// names it (Graph::output_names): outputs that are graph inputs, constants,
// or listed twice get a copy op, so code generation can always write outputs
// straight into the caller's buffers; an op result that is an output under
// another name is renamed.
#pragma once
#include "compiler/ir/graph.h"

namespace tilegraph::passes {

Graph materialize_outputs(const Graph& g);

}  // namespace tilegraph::passes
