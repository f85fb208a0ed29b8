// Lowering dispatch: a kernel's schedule to its Kernel IR, through the
// builder of its kind (scheduler::KernelKind). Callers above codegen (the
// driver) call only this; a new kind adds a case here and its builder file.
#pragma once
#include "codegen/kernel_ir/kernel_ir.h"
#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/schedule.h"

namespace tilegraph::codegen {

// Lowers one kernel of a schedule for `arch`. The GEMM micro-kernel kinds
// first pack their constant operands into the micro-kernel's layout, which
// adds those packs to g as new constants.
Kernel lower_kernel(Graph& g, const scheduler::KernelSchedule& schedule, const scheduler::ArchSpec& arch);

}  // namespace tilegraph::codegen
