// The cuBLASLt helper of generated CUDA projects (codegen/cublaslt/
// tg_cublaslt.h) compiled into the compiler: a project with library GEMMs
// (tune --skip-dot) gets a copy.
#pragma once
#include <vector>

#include "codegen/project/embedded_runtime.h"

namespace tilegraph::codegen {

// Defined by cmake/embed_files.cmake from codegen/cublaslt/*.h.
const std::vector<EmbeddedFile>& embedded_cublaslt_files();

}  // namespace tilegraph::codegen
