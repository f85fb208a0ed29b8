#pragma once
// Checks one node against libonnx's operator schema before it is lowered, so
// lowerings may rely on input counts, attribute types and input dtypes.
#include "frontends/onnx/lowering_context.h"

namespace tilegraph::onnx_frontend {

// Throws UserError naming the node when its inputs or attributes contradict
// the schema of its opset: counts and attribute types (libonnx Verify), and
// input element types — each must be one the schema allows, and inputs bound
// to the same type parameter (Gemm's A, B, C are all "T") must agree.
// Default-domain nodes only: libonnx has no com.microsoft schemas.
void check_against_schema(const LoweringContext& ctx);

}  // namespace tilegraph::onnx_frontend
