#include "codegen/lowering/lower_kernel.h"

#include "codegen/lowering/int_gemm_variant.h"
#include "codegen/lowering/lower_block_kernel.h"
#include "codegen/lowering/lower_cpu_kernel.h"
#include "codegen/lowering/lower_direct_conv_kernel.h"
#include "codegen/lowering/lower_float_gemm_kernel.h"
#include "codegen/lowering/lower_int_gemm_kernel.h"
#include "codegen/lowering/lower_library_gemm.h"
#include "compiler/ir/error.h"
#include "scheduler/block_plan.h"
#include "scheduler/cost_model.h"

namespace tilegraph::codegen {

namespace {

Kernel lower_by_kind(Graph& g, const scheduler::KernelSchedule& ks, const scheduler::ArchSpec& arch) {
  switch (ks.kind) {
    case scheduler::KernelKind::kLoopNest:
      return lower_cpu_kernel(g, ks);
    case scheduler::KernelKind::kBlock:
      return lower_block_kernel(g, ks, scheduler::plan_block_kernel(g, ks, ks.config, arch));
    case scheduler::KernelKind::kIntGemm: {
      const IntGemmVariant variant = int_gemm_variant_for(arch);
      const PackedWeights packed = prepack_int_gemm_weights(g, ks, variant);
      return lower_int_gemm_kernel(g, ks, variant, packed, arch.compute_units);
    }
    case scheduler::KernelKind::kFloatGemm: {
      const FloatGemmVariant variant = float_gemm_variant_for(arch);
      const FloatGemmPacks packed = prepack_float_gemm_operands(g, ks, variant);
      return lower_float_gemm_kernel(g, ks, variant, packed, arch);
    }
    case scheduler::KernelKind::kDirectConv:
      return lower_direct_conv_kernel(g, ks);
    case scheduler::KernelKind::kLibraryGemm:
      return lower_library_gemm_kernel(g, ks);
  }
  TG_CHECK(false, "unknown kernel kind ", static_cast<int>(ks.kind));
}

}  // namespace

Kernel lower_kernel(Graph& g, const scheduler::KernelSchedule& ks, const scheduler::ArchSpec& arch) {
  Kernel k = lower_by_kind(g, ks, arch);
  // Kernels without an estimate (0) split.
  const double seconds = ks.estimate.seconds;
  k.single_thread = !arch.is_gpu() && seconds > 0 && seconds < scheduler::min_parallel_seconds(arch);
  return k;
}

}  // namespace tilegraph::codegen
