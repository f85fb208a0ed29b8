#pragma once
// Integer helpers for sizes and tile counts (non-negative operands, b > 0).
#include <cstdint>

namespace tilegraph {

// ceil(a / b): how many pieces of b hold a.
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// a rounded up to a multiple of b.
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace tilegraph
