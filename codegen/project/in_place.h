// In-place outputs: a float GEMM kernel whose epilogue reads an activation
// of the output's size (a residual add) where it writes the output may
// store into that activation's bytes when nothing reads it later. The
// output's lines are then already in cache, read by the epilogue, and
// need no separate fetch for ownership before the store (ResNet-50's
// 56 x 56 conv3 + Add + Relu at one thread: 0.81 -> 0.69 ms).
#pragma once
#include "codegen/kernel_ir/kernel_ir.h"

namespace tilegraph::codegen {

// Whether kernel k reads its buffer `in` only in stores to its buffer
// `out`, each at the very index the store writes (so every element is read
// before, and by the same statement as, its overwrite), besides
// tg_sgemm::prefetch_tile hints. Any other read (a GEMM operand's packing,
// a shifted index, a loop bound) says no.
bool reads_only_in_place(const Kernel& k, int in, int out);

}  // namespace tilegraph::codegen
