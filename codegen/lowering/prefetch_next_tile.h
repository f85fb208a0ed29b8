// Prefetches the next tile's input while a CPU block kernel's tile computes.
//
// A block kernel's tile (a few rows of a softmax or a layer norm) reads its
// input in a first phase (the row max, the mean) that has little to compute
// and waits on the L2 or L3, and again in later phases that compute from the
// L1 (softmax's exp: about 30 vector instructions per 16 floats). The
// hardware prefetchers do not run ahead from one tile into the next, so
// every tile's first phase waited while the previous tile's compute-bound
// phases left the memory idle. The first later phase that re-reads an input
// over a contiguous run (a vectorized or reduce loop whose index steps by 1)
// now also prefetches that run of the next tile (the innermost tile
// coordinate + 1, which is the next tile a thread runs): the next tile's
// first phase finds its input in the cache. MobileViT-S's attention softmax
// (4 x 4 x 256 x 256, tiles of 16 rows of 256), one core, alone:
// 0.55 -> 0.45 ms; prefetching from the first phase itself, which is the one
// waiting, gained nothing. A next tile's runs that together fit half the L1
// go to the L1, up to half the L2 to the L2 (the L1 would evict the current
// tile), beyond that none.
#pragma once

#include <cstdint>

#include "codegen/kernel_ir/kernel_ir.h"

namespace tilegraph::codegen {

// The prelude's tg_prefetch_bytes<locality>(const void* p, int64_t bytes)
// (codegen/printing/c_printer.cpp), __builtin_prefetch's locality 3 (L1) or 2 (L2).
inline constexpr const char* kPrefetchBytesCallee = "tg_prefetch_bytes";

// k with those prefetches (k itself when it is no CPU block kernel or no
// phase re-reads an input). l1_bytes, l2_bytes: one core's data caches.
Kernel prefetch_next_tile(Kernel k, int64_t l1_bytes, int64_t l2_bytes);

// Whether a Call only prefetches (reads nothing a kernel depends on).
bool is_prefetch_call(const std::string& callee);

}  // namespace tilegraph::codegen
