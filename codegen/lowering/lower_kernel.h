// Lowering dispatch: a kernel's schedule to its Kernel IR, through the
// builder of its kind (scheduler::KernelKind). Callers above codegen (the
// driver's pipeline and its top-k profiler) call only this; a new kind adds
// a case here and its builder file.
//
// Two steps, so that a caller holding a const graph (the profiler lowers
// candidates of a schedule it does not compile) shares the one dispatch:
// pack_constant_operands writes the GEMM micro-kernel kinds' compile-time
// packs into the graph; lower_kernel reads the graph only.
#pragma once
#include "codegen/kernel_ir/kernel_ir.h"
#include "codegen/lowering/lower_float_gemm_kernel.h"
#include "codegen/lowering/lower_int_gemm_kernel.h"
#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

// The constants a kernel's lowering reads in place of its GEMM operands,
// packed at compile time into the micro-kernel's layout. Empty (every id
// -1) for the other kinds, and wherever an operand is packed at run time.
struct KernelPacks {
  PackedWeights int_gemm;     // kIntGemm: B's panels and column sums
  FloatGemmPacks float_gemm;  // kFloatGemm: A's or B's panels
  TensorId winograd_u = -1;   // kWinogradConv: the transformed filters (lower_winograd_conv_kernel.h)
};

// For the GEMM micro-kernel kinds: packs each operand that reads only
// constants for `arch`'s micro-kernel and adds the packs to g as new
// constants; for a Winograd conv, its transformed filters. Other kinds: an
// empty KernelPacks, g unchanged.
KernelPacks pack_constant_operands(Graph& g, const scheduler::KernelSchedule& schedule,
                                   const scheduler::ArchSpec& arch);

// Lowers one kernel of a schedule for `arch`. `packs`: what
// pack_constant_operands returned for it; without them (the default) a
// GEMM kernel packs all its operands at run time, which computes the same
// values (the profiler times candidates this way); a Winograd conv kernel
// needs them.
Kernel lower_kernel(const Graph& g, const scheduler::KernelSchedule& schedule, const scheduler::ArchSpec& arch,
                    const KernelPacks& packs = {});

}  // namespace tilegraph::codegen
