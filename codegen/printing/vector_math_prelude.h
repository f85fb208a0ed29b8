// The CPU kernels' vectorizable float math (codegen/vector_math/
// tg_vector_math.h), compiled into the compiler: kernel_prelude pastes it
// into every generated CPU kernel source.
#pragma once
#include <string_view>
#include <vector>

#include "codegen/project/embedded_runtime.h"

namespace tilegraph::codegen {

// Defined by cmake/embed_files.cmake from codegen/vector_math/*.h.
const std::vector<EmbeddedFile>& embedded_vector_math_files();

// The text of tg_vector_math.h.
std::string_view vector_math_prelude();

}  // namespace tilegraph::codegen
