// Softmax on the softmax micro-kernel (codegen/ukernels/softmax_<variant>.h)
// instead of the generated block kernel: a CPU kernel of exactly the four
// phases the ONNX frontend makes of Softmax over the last axis (max, exp of
// the difference, sum, quotient), its input x either a tensor read as it lies
// or an elementwise expression of the kernel's inputs (fused producers:
// bert's scale and mask, swin's bias, Conformer's length mask), which a
// vectorized loop computes into a row of scratch first. The block kernel ran
// each phase as its own loop over a tile of rows, with a scalar remainder per
// row, exp staged through scratch and x recomputed in two phases.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

// The rows of a softmax the micro-kernel computes: `rows` rows of `length`
// contiguous floats each. In place: x is the kernel's input 0 as it lies,
// each row read where it is; else x (a masked or biased score) is computed
// into a row of scratch first.
struct SoftmaxRows {
  int64_t rows = 0;
  int64_t length = 0;
  bool in_place = true;
};

// A kernel's ops as softmax_rows takes them: where its last four ops follow
// only elementwise ones (a fused producer the block plan keeps in scratch,
// swin's bias), those are inlined into the four (into phases 0 and 1: x);
// else scheduler::phase_ops.
std::vector<Op> softmax_phases(const Graph& g, const scheduler::KernelSchedule& ks);

// The rows when `phases` (softmax_phases of a kernel without extra
// outputs) compute out = exp(x - max) / sum(exp(x - max)) over the last axis,
// x being phase 0's body (reading no phase's output) and phase 1 recomputing
// the same x: checked on the phases' own bodies at sampled indices (the ends
// and middle of every axis), so a softmax reaches the kernel only as what it
// computes.
std::optional<SoftmaxRows> softmax_rows(const Graph& g, const std::vector<Op>& phases);

// The kernel: one parallel loop over the rows, each a call of the
// micro-kernel `tg_softmax::row<length>` (Kernel::ukernel
// "softmax_<variant>"), after x's row is computed unless in place. Named
// after the root phase, with every phase's ONNX nodes.
Kernel lower_softmax_kernel(const Graph& g, const scheduler::KernelSchedule& schedule, const std::vector<Op>& phases,
                            const SoftmaxRows& rows, const std::string& variant);

}  // namespace tilegraph::codegen
