// Prepares a block kernel for the CPU emulation of its GPU launch (DESIGN.md):
// the emulation runs a block's threads one after another within each phase,
// so a per-thread value that lives across a barrier (a Local buffer
// allocated at block level: reduction accumulators) needs one copy per
// thread. Those buffers move into the block's arena as threads x elements
// arrays indexed by the thread of the enclosing kThreads loop (Buffer::elements
// becomes threads x elements; thread t's values start at t x elements).
#pragma once
#include "codegen/kernel_ir/kernel_ir.h"

namespace tilegraph::codegen {

// Returns k unchanged when it has a single thread per block or no such
// buffers.
Kernel expand_thread_locals(const Kernel& k);

}  // namespace tilegraph::codegen
