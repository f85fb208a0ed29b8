// The GPU emulation's sanitizer checks (codegen/sanitizer/tg_sanitizer.h)
// compiled into the compiler: kernel_prelude pastes them into the kernel
// sources of an emulation project tuned with --sanitize.
#pragma once
#include <vector>

#include "codegen/project/embedded_runtime.h"

namespace tilegraph::codegen {

// Defined by cmake/embed_files.cmake from codegen/sanitizer/*.h.
const std::vector<EmbeddedFile>& embedded_sanitizer_files();

}  // namespace tilegraph::codegen
