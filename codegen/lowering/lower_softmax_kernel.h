// Softmax on the softmax micro-kernel (codegen/ukernels/softmax_<variant>.h)
// instead of the generated block kernel: a CPU kernel of exactly the four
// phases the ONNX frontend makes of Softmax over the last axis (max, exp of
// the difference, sum, quotient) whose input is a tensor read as it lies.
// The block kernel ran each phase as its own loop over a tile of rows, with a
// scalar remainder per row and exp staged through scratch. Softmax fused with
// a producer (bert's mask, swin's bias) keeps the block kernel.
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
// contiguous floats each, in and out.
struct SoftmaxRows {
  int64_t rows = 0;
  int64_t length = 0;
};

// The rows when `phases` (scheduler::phase_ops of a kernel without extra
// outputs) compute out = exp(x - max) / sum(exp(x - max)) over the last axis
// of the float tensor x, read at exactly the output's index: checked on the
// phases' own bodies at sampled indices (the ends and middle of every axis),
// so a softmax reaches the kernel only as what it computes.
std::optional<SoftmaxRows> softmax_rows(const Graph& g, const std::vector<Op>& phases);

// The kernel: one parallel loop over the rows, each a call of the
// micro-kernel `tg_softmax::row<length>` (Kernel::ukernel
// "softmax_<variant>"). Named after the root phase.
Kernel lower_softmax_kernel(const Graph& g, const scheduler::KernelSchedule& schedule, const std::vector<Op>& phases,
                            const SoftmaxRows& rows, const std::string& variant);

}  // namespace tilegraph::codegen
