// The Kernel IR verifier: checks a kernel against the invariants
// codegen/kernel_ir/kernel_ir.h states (and those the printers rely on) before it is
// printed, so a lowering bug fails at the kernel that broke the rule instead
// of as wrong numbers, a compiler error in the generated project or a hang
// on a GPU. Run after every lowering and after the emulation's thread
// expansion (STYLE.md §10), in every build: it took 0.2% of bert_small's
// tune and under 1% of Restormer_small's (schedule cache cold).
#pragma once
#include "codegen/kernel_ir/kernel_ir.h"

namespace tilegraph::codegen {

// Throws InternalError "Kernel IR of kernel '<name>': <invariant>: <where>"
// on the first broken invariant; returns when k is well-formed:
//  * buffers: globals first, each a graph tensor; names and var names unique
//    C identifiers; Shared buffers inside the block's arena
//  * every Var bound by an enclosing For (not rebound inside it), every
//    Load/Store/Call/WarpMma buffer valid and, unless Global, inside its
//    Allocate (each buffer allocated at most once); no Store to an input
//  * Loads (whatever Select branch is taken), Stores, Call pointers and
//    WarpMma fragments in bounds, where that can be told: interval bounds of
//    the loop variables, else evaluation at every point of the variables
//    (under the enclosing Ifs) when there are at most 4096
//  * integer Div/Rem of index arithmetic only on non-negative operands
//  * For: collapse nests perfectly over loops of the same kind; kBlocks
//    loops (constant extents whose product is Kernel::grid) are the only
//    launch grid and the only place for Barriers, WarpMmas and kThreads
//    loops; a kThreads loop has extent Kernel::threads and holds no Barrier,
//    WarpMma or other kThreads/kBlocks loop; a block of several threads
//    does no Store or Call at block level
//  * WarpMma: three float fragments (8, 4, 4 values) in per-thread buffers,
//    Kernel::tensor_cores set, Kernel::threads a multiple of 32
//  * the library GEMM call (tg_gemm) has its argument list and reads and
//    writes its matrices inside their buffers
void verify(const Kernel& k);

}  // namespace tilegraph::codegen
