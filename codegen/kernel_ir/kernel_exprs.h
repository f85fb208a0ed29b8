// Turning an op's tensor-indexed expressions into kernel expressions over
// flat buffers: row-major linearization, index clamping that makes every load
// speculatable, and floor division rewritten to C division where operands are
// provably non-negative.
#pragma once
#include <vector>

#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "compiler/ir/interval.h"

namespace tilegraph::codegen {

// Appends graph tensor `id` as the kernel's next global buffer (parameter):
// named "out" (then "out1", "out2"...) when written, else "in<N>". Returns its buffer id.
int add_global_buffer(Kernel& k, const Graph& g, TensorId id, bool written);

// Appends a per-thread scratch buffer (registers / stack) of `elements`
// values, aligned to `alignment` bytes when > 0. Returns its buffer id.
int add_local_buffer(Kernel& k, const std::string& name, DType dtype, int64_t elements, int alignment = 0);

// Σ idx[d] * stride[d] for a row-major tensor of `shape`.
Expr linear_index(const Shape& shape, const std::vector<Expr>& idx);

// Index clamping, the rule that keeps every load in bounds (loads are
// speculated, kernel_ir.h): an iteration past the end reads the last element
// instead, and its result is masked or never stored.
// i into [0, extent): min(max(i, 0), extent - 1).
Expr clamp_index(Expr i, int64_t extent);
// clamp_index, unless i's bounds under var_bounds already lie in [0, extent).
Expr clamp_index_if_needed(Expr i, int64_t extent, const std::vector<Interval>& var_bounds);
// A non-negative i past the end onto the last index: min(i, extent - 1).
Expr clamp_to_last(Expr i, int64_t extent);

// Rewrites Load(slot, indices) of op's inputs into Load(slot, {flat index}),
// clamping each index whose bounds (under var_bounds) may leave [0, dim).
// Kernel buffer ids equal the op's input slots.
Expr to_kernel_loads(const Graph& g, const Op& op, const Expr& e,
                     const std::vector<Interval>& var_bounds);

// to_kernel_loads, except inside the true branch of a Select whose
// condition bounds a load's index (conjuncts `i >= c` with c >= 0 and
// `i < c` with c <= dim, as a conv's padding guard does): that index is not
// clamped, and the Select becomes a guarded one (guarded_select: its loads
// are read only where the condition holds). The clamp-free index of a
// padded window is affine across the padding (a run of a conv's packing
// reads one contiguous masked vector where the clamped one broke up).
Expr to_guarded_kernel_loads(const Graph& g, const Op& op, const Expr& e, const std::vector<Interval>& var_bounds);

// Simplifies, then rewrites FloorDiv/FloorMod with a non-negative numerator
// and positive constant divisor to Div/Rem (what C's / and % compute).
Expr finalize_indices(const Expr& e, const std::vector<Interval>& var_bounds);

}  // namespace tilegraph::codegen
