// Cost-model features of the kernels on the CPU micro-kernel paths
// (KernelKind::kIntGemm, kFloatGemm, kDirectConv; scheduler/int_gemm.h and
// scheduler/direct_conv.h). The tiling search planned them as block
// kernels; use_gemm_ukernels then moved them onto the hand-written
// micro-kernels, whose time the block plan does not describe:
//   GEMMs:  2*batches*rows*cols*K operations at the micro-kernel's achieved
//           rate (ArchSpec::ukernel_fp32_flops / ukernel_int8_ops, measured
//           by `tilegraph calibrate`), plus the operand panels packed at run
//           time (an operand that reads only constants is packed at compile
//           time) at ArchSpec::pack_bytes_per_s; B's panels are packed again
//           for every block of rows (blocks sized so A's panels fill half
//           the L2, as the lowering does).
//   direct convs: 2 operations per product at the vector FMA rate, vector
//           tails along the output rows.
// Both: the kernel's external inputs and outputs once through memory, its
// elementwise epilogue one operation per output element and epilogue op,
// and the work spread over every core (one parallel region).
#pragma once
#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/cost_model.h"
#include "scheduler/schedule.h"

namespace tilegraph::scheduler {

// The features of kernel k, which must be of a micro-kernel kind.
KernelFeatures ukernel_features(const Graph& g, const KernelSchedule& k, const ArchSpec& arch);

// Sets features and estimate of every micro-kernel kernel of the schedule
// (after use_gemm_ukernels); other kernels are left as they are.
void estimate_ukernel_kernels(const Graph& g, Schedule& schedule, const ArchSpec& arch);

}  // namespace tilegraph::scheduler
