// Drops a kernel's constant parameters that its body never reads.
//
// Lowerings that repack a constant at compile time (the float GEMM's weight
// panels, the Winograd filters' U, the int8 GEMM's packed weights) read the
// repacked copy, a new graph constant, while the op still lists the original
// among its inputs, so the kernel took both as parameters and weights.bin
// held both: ResNet-50's weights.bin was 216 MB for 102 MB of weights,
// MobileNetV2's 28 MB for 14. A parameter no Load, Store, Allocate or Call
// argument names is removed here (the later buffers renumbered), so neither
// the kernel's signature, its call nor weights.bin carries it.
// Only constants: an activation or output parameter stays (the memory plan
// and in-place outputs are keyed on them).
#pragma once

#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"

namespace tilegraph::codegen {

// k without its unread constant parameters (k unchanged when there is none).
Kernel drop_unread_constants(const Graph& g, Kernel k);

}  // namespace tilegraph::codegen
