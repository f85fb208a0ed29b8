#include "codegen/lowering/lower_kernel.h"

#include <algorithm>
#include <optional>

#include "codegen/lowering/drop_unread_constants.h"
#include "codegen/lowering/int_gemm_variant.h"
#include "codegen/lowering/lower_block_kernel.h"
#include "codegen/lowering/lower_cpu_kernel.h"
#include "codegen/lowering/lower_direct_conv_kernel.h"
#include "codegen/lowering/lower_library_gemm.h"
#include "codegen/lowering/lower_pool_kernel.h"
#include "codegen/lowering/lower_quantize_kernel.h"
#include "codegen/lowering/lower_softmax_kernel.h"
#include "codegen/lowering/lower_winograd_conv_kernel.h"
#include "codegen/lowering/hoist_reciprocals.h"
#include "codegen/lowering/prefetch_next_tile.h"
#include "codegen/lowering/split_div_mod_loops.h"
#include "codegen/lowering/split_piecewise_loops.h"
#include "compiler/ir/error.h"
#include "scheduler/block_plan.h"
#include "scheduler/cost_model.h"

namespace tilegraph::codegen {

namespace {

// A kernel of `phases` (scheduler::phase_ops of ks) that quantizes x to 8
// bits with one scale and zero point, or computes DynamicQuantizeLinear's
// range (then its scale and zero point), on the quantize micro-kernel
// `variant` (lower_quantize_kernel.h); else nullopt.
std::optional<Kernel> lower_quantize(const Graph& g, const scheduler::KernelSchedule& ks,
                                     const std::vector<Op>& phases, const std::string& variant) {
  if (phases.size() == 1 && ks.extra_outputs.empty())
    if (const std::optional<QuantizeSlots> slots = quantize_slots(g, phases.front()))
      return lower_quantize_kernel(g, ks, phases.front(), *slots, variant);
  // The range kernel writes the later phases' outputs, not the partials.
  const auto writes_partials = [&](const QuantizeRange& range) {
    return range.extremes_phase > 0 &&
           std::any_of(ks.extra_outputs.begin(), ks.extra_outputs.end(),
                       [&](int op) { return g.ops.at(static_cast<size_t>(op)).output == phases.front().output; });
  };
  if (const std::optional<QuantizeRange> range = quantize_range(g, phases); range && !writes_partials(*range))
    return lower_quantize_range_kernel(g, ks, phases, *range, variant);
  return std::nullopt;
}

// The quantize micro-kernel's variant on a CPU target, else empty.
std::string cpu_quantize_variant(const scheduler::ArchSpec& arch) {
  return arch.is_gpu() ? "" : quantize_variant_for(arch);
}

// A loop-nest kernel: on a target with the quantize or pooling micro-kernel,
// an op it computes takes it (lower_quantize_kernel.h, lower_pool_kernel.h);
// any other op the loops.
Kernel lower_loop_nest(const Graph& g, const scheduler::KernelSchedule& ks, const scheduler::ArchSpec& arch) {
  const std::string quantize = cpu_quantize_variant(arch);
  const std::string pool = arch.is_gpu() ? "" : max_pool_variant_for(arch);
  if (quantize.empty() && pool.empty()) return lower_cpu_kernel(g, ks);
  const std::vector<Op> phases = scheduler::phase_ops(g, ks);
  if (!quantize.empty())
    if (std::optional<Kernel> k = lower_quantize(g, ks, phases, quantize)) return std::move(*k);
  if (!pool.empty() && phases.size() == 1)
    if (const std::optional<MaxPoolPlane> plane = max_pool_3x3_s2_plane(g, phases.front()))
      return lower_max_pool_kernel(g, ks, phases.front(), *plane, pool);
  return lower_cpu_kernel(g, ks);
}

// A block kernel: on a target with the softmax micro-kernel, a softmax over
// the last axis, plain or behind fused elementwise producers, takes it
// (lower_softmax_kernel.h), as a quantization takes the quantize one;
// anything else the planned block.
Kernel lower_block(const Graph& g, const scheduler::KernelSchedule& ks, const scheduler::ArchSpec& arch) {
  if (const std::string quantize = cpu_quantize_variant(arch); !quantize.empty())
    if (std::optional<Kernel> k = lower_quantize(g, ks, scheduler::phase_ops(g, ks), quantize)) return std::move(*k);
  const std::string variant = arch.is_gpu() ? "" : softmax_variant_for(arch);
  if (!variant.empty() && ks.extra_outputs.empty()) {
    const std::vector<Op> phases = softmax_phases(g, ks);
    if (const std::optional<SoftmaxRows> rows = softmax_rows(g, phases))
      return lower_softmax_kernel(g, ks, phases, *rows, variant);
  }
  return lower_block_kernel(g, ks, scheduler::plan_block_kernel(g, ks, ks.config, arch));
}

Kernel lower_by_kind(const Graph& g, const scheduler::KernelSchedule& ks, const scheduler::ArchSpec& arch,
                     const KernelPacks& packs) {
  switch (ks.kind) {
    case scheduler::KernelKind::kLoopNest:
      return lower_loop_nest(g, ks, arch);
    case scheduler::KernelKind::kBlock:
      return lower_block(g, ks, arch);
    case scheduler::KernelKind::kIntGemm:
      return lower_int_gemm_kernel(g, ks, int_gemm_variant_for(arch), packs.int_gemm, arch);
    case scheduler::KernelKind::kFloatGemm:
      return lower_float_gemm_kernel(g, ks, float_gemm_variant_for(arch), packs.float_gemm, arch);
    case scheduler::KernelKind::kDirectConv:
      return lower_direct_conv_kernel(g, ks, arch.is_gpu() ? "" : depthwise_variant_for(arch));
    case scheduler::KernelKind::kWinogradConv:
      return lower_winograd_conv_kernel(g, ks, float_gemm_variant_for(arch), packs.winograd_u, arch);
    case scheduler::KernelKind::kLibraryGemm:
      return lower_library_gemm_kernel(g, ks);
  }
  TG_CHECK(false, "unknown kernel kind ", static_cast<int>(ks.kind));
}

// A GPU block's shared arena in whole 16-byte units. The device compiler may
// merge a loop's neighbouring shared loads into one aligned 16-byte load that
// reaches past the last buffer's end when that buffer's size is not a multiple
// of 16 bytes: compute-sanitizer's memcheck on an H200 reported such a read
// (ResNet-50's fused conv + global average pool: a 16-byte load at byte 448
// of a 452-byte arena). The hardware allots shared memory in larger units, so
// the run was right, but the read is out of bounds all the same.
constexpr int64_t kSharedArenaUnit = 16;

}  // namespace

KernelPacks pack_constant_operands(Graph& g, const scheduler::KernelSchedule& ks, const scheduler::ArchSpec& arch) {
  KernelPacks packs;
  if (ks.kind == scheduler::KernelKind::kIntGemm)
    packs.int_gemm = prepack_int_gemm_weights(g, ks, int_gemm_variant_for(arch));
  if (ks.kind == scheduler::KernelKind::kFloatGemm)
    packs.float_gemm = prepack_float_gemm_operands(g, ks, float_gemm_variant_for(arch), arch);
  if (ks.kind == scheduler::KernelKind::kWinogradConv)
    packs.winograd_u = prepack_winograd_filters(g, ks, float_gemm_variant_for(arch));
  return packs;
}

Kernel lower_kernel(const Graph& g, const scheduler::KernelSchedule& ks, const scheduler::ArchSpec& arch,
                    const KernelPacks& packs) {
  Kernel k = drop_unread_constants(g, lower_by_kind(g, ks, arch, packs));
  if (arch.is_gpu())
    k.shared_bytes = (k.shared_bytes + kSharedArenaUnit - 1) / kSharedArenaUnit * kSharedArenaUnit;
  else
    k = prefetch_next_tile(hoist_reciprocals(split_div_mod_loops(split_piecewise_loops(std::move(k)))),
                           arch.l1_bytes, arch.l2_bytes);
  // Kernels without an estimate (0) split.
  const double seconds = ks.estimate.seconds;
  k.single_thread = !arch.is_gpu() && seconds > 0 && seconds < scheduler::min_parallel_seconds(arch);
  return k;
}

}  // namespace tilegraph::codegen
