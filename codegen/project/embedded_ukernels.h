// The micro-kernel headers (codegen/ukernels/*.h) compiled into the compiler;
// a generated CPU project gets a copy of the variant it uses.
#pragma once
#include <vector>

#include "codegen/project/embedded_runtime.h"

namespace tilegraph::codegen {

const std::vector<EmbeddedFile>& embedded_ukernel_files();

}  // namespace tilegraph::codegen
