// The host CPU project's thread pool (codegen/thread_pool/tg_thread_pool.h)
// compiled into the compiler: emit_cpu_project writes it into host projects,
// whose kernels run their parallel loops on it (cpu_pool_dialect).
#pragma once
#include <vector>

#include "codegen/project/embedded_runtime.h"

namespace tilegraph::codegen {

// Defined by cmake/embed_files.cmake from codegen/thread_pool/tg_thread_pool.h.
const std::vector<EmbeddedFile>& embedded_thread_pool_files();

}  // namespace tilegraph::codegen
