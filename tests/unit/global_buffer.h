// A graph tensor's buffer in a Kernel IR kernel built by hand in a test.
#pragma once
#include <string>

#include "codegen/kernel_ir/kernel_ir.h"

namespace tilegraph::testing {

inline codegen::Buffer global_buffer(const std::string& name, int64_t elements, TensorId tensor, bool written,
                                     DType dtype = DType::kF32) {
  codegen::Buffer b;
  b.name = name;
  b.dtype = dtype;
  b.elements = elements;
  b.scope = codegen::MemoryScope::kGlobal;
  b.tensor = tensor;
  b.written = written;
  return b;
}

}  // namespace tilegraph::testing
