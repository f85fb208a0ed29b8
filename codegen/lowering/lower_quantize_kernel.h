// Quantization to 8-bit integers on the quantize micro-kernel
// (codegen/ukernels/quantize_<variant>.h) instead of the generated loop: a
// CPU kernel of one op computing y = saturate(round(x / scale) + zero_point)
// with one scale and one zero point, x read as it lies (QuantizeLinear with a
// per-tensor scale; DynamicQuantizeLinear's quantize step, once its scale and
// zero point are computed). GCC vectorizes the generated loop's clamps, NaN
// test and float-to-byte conversion into mask merges and byte blends; the
// micro-kernel computes the same bytes in a third of the instructions.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

// Which of the op's input slots hold x, the scale and the zero point.
struct QuantizeSlots {
  int x = -1;
  int scale = -1;
  int zero_point = -1;
};

// The slots when `op` (a kernel's only phase) computes
//   y[i] = saturate_T(round(x[i] / scale) + float(zero_point))
// for every index i of y (T = uint8 or int8; x float32 with as many elements,
// read at i's row-major position, so through a fused Reshape too; scale
// float32 and zero point T, one value each), exactly as the ONNX
// frontend writes QuantizeLinear: checked on the op's body at sampled indices
// (the ends and middle of every axis), so only what computes that reaches the
// micro-kernel.
std::optional<QuantizeSlots> quantize_slots(const Graph& g, const Op& op);

// The kernel: one parallel loop over runs of y's elements, each a call of
// `tg_quantize::linear<T>` (Kernel::ukernel "quantize_<variant>").
Kernel lower_quantize_kernel(const Graph& g, const scheduler::KernelSchedule& schedule, const Op& op,
                             const QuantizeSlots& slots, const std::string& variant);

// DynamicQuantizeLinear's range: a CPU kernel whose first phase computes
//   extremes[j] = max over x of (x * (j == 0 ? 1 : -1)),  j < 2
// (the ONNX frontend's one reduction for max(x) and -min(x); split_reductions
// may cut it into per-row partials, then a second phase reducing them), x
// float32 read as it lies (or through a fused Reshape), and whose other
// phases are elementwise over a few values (the scale and zero point). The
// generated block kernel read x twice, once per j, with one accumulator
// each; `tg_quantize::extremes` reads it once.
// x is phase 0's one input.
struct QuantizeRange {
  int extremes_phase = 0;  // the phase whose output is extremes[2]: 0, or 1 after the partials
};

// The range when `phases` (scheduler::phase_ops of a kernel) compute it as
// above: phase 0's (and the partials' reduction's) bodies checked at sampled
// indices; the later phases elementwise with at most 16 values each, reading
// only the extremes, one another and tensors of at most 16 values.
std::optional<QuantizeRange> quantize_range(const Graph& g, const std::vector<Op>& phases);

// The kernel: extremes into a local pair by one call of
// `tg_quantize::extremes`, then the later phases value by value (stores
// of their bodies at constant indices), in one task.
Kernel lower_quantize_range_kernel(const Graph& g, const scheduler::KernelSchedule& schedule,
                                   const std::vector<Op>& phases, const QuantizeRange& range,
                                   const std::string& variant);

}  // namespace tilegraph::codegen
