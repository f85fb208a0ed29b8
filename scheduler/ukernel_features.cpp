#include "scheduler/ukernel_features.h"

#include <algorithm>
#include <set>

#include "compiler/ir/error.h"
#include "scheduler/int_gemm.h"
#include "scheduler/winograd_conv.h"

namespace tilegraph::scheduler {

namespace {

bool on_ukernel(KernelKind kind) {
  return kind == KernelKind::kIntGemm || kind == KernelKind::kFloatGemm || kind == KernelKind::kDirectConv ||
         kind == KernelKind::kWinogradConv;
}

// Bytes of the tensors the kernel reads from outside itself and of those it
// writes (its root and extra outputs), each once; *constant: of them, the
// constants' (weights).
int64_t external_bytes(const Graph& g, const KernelSchedule& k, int64_t* constant) {
  std::set<TensorId> produced, read;
  for (int op : k.ops) produced.insert(g.ops[static_cast<size_t>(op)].output);
  for (int op : k.ops)
    for (TensorId t : g.ops[static_cast<size_t>(op)].inputs)
      if (!produced.count(t)) read.insert(t);
  int64_t bytes = g.tensor(g.ops[static_cast<size_t>(k.ops.back())].output).bytes();
  for (int op : k.extra_outputs) bytes += g.tensor(g.ops[static_cast<size_t>(op)].output).bytes();
  *constant = 0;
  for (TensorId t : read) {
    bytes += g.tensor(t).bytes();
    if (g.tensor(t).kind == TensorKind::kConstant) *constant += g.tensor(t).bytes();
  }
  return bytes;
}

// Bytes of panel a GEMM writes at run time: each operand not read from
// constants, B once per block of rows.
int64_t run_time_packed_bytes(const Graph& g, const Op& op, const Gemm& m, const ArchSpec& arch) {
  const int64_t element = m.element == DType::kF32 ? 4 : 1;
  int64_t bytes = 0;
  if (!reads_only_constants(g, op, m.a)) bytes += m.batches() * m.rows() * m.k * element;
  if (!reads_only_constants(g, op, m.b)) {
    const int64_t rows_per_block = std::max<int64_t>(1, arch.l2_bytes / 2 / std::max<int64_t>(m.k * element, 1));
    const int64_t row_blocks = (m.rows() + rows_per_block - 1) / rows_per_block;
    bytes += m.batches() * m.cols() * m.k * element * row_blocks;
  }
  return bytes;
}

}  // namespace

KernelFeatures ukernel_features(const Graph& g, const KernelSchedule& k, const ArchSpec& arch) {
  TG_CHECK(on_ukernel(k.kind), "kernel of kind ", kernel_kind_name(k.kind), " is not on a micro-kernel");
  const std::vector<Op> phases = phase_ops(g, k);
  TG_CHECK(!phases.empty(), "a micro-kernel kernel without ops");
  const Op& first = phases.front();
  const Shape& out_shape = g.tensor(phases.back().output).shape;
  const int64_t outputs = num_elements(out_shape);
  KernelFeatures f;
  f.blocks = arch.compute_units;
  f.dram_bytes = external_bytes(g, k, &f.constant_bytes);
  f.flops = double(outputs) * double(phases.size() - 1);  // the epilogue
  if (k.kind == KernelKind::kDirectConv) {
    int64_t taps = 1;
    for (int64_t e : first.reduce_extents) taps *= e;
    f.flops += 2.0 * double(num_elements(g.tensor(first.output).shape)) * double(taps);
    f.inner_extent = out_shape.empty() ? 0 : out_shape.back();
    return f;
  }
  if (k.kind == KernelKind::kWinogradConv) {
    // 16 GEMMs (one per transformed position) of filters x channels x tiles
    // on the micro-kernel; the transformed input planes are written at run time.
    const std::optional<WinogradConv> c = match_winograd_conv(g, first, 1);
    TG_CHECK(c.has_value(), "kernel '", first.name, "' is no Winograd conv");
    const double tiles = double(c->batch) * double(c->tiles());
    f.compute_dtype = DType::kF32;
    const double positions = double(kWinogradPositions);
    f.ukernel_flops = 2.0 * positions * tiles * double(c->channels) * double(c->filters);
    f.flops += tiles * (positions * 4.0 * double(c->channels) + 24.0 * double(c->filters));  // the transforms' adds
    f.packed_bytes = int64_t(tiles) * kWinogradPositions * c->channels * 4;
    f.inner_extent = out_shape.empty() ? 0 : out_shape.back();
    return f;
  }
  const std::optional<Gemm> m = match_gemm(g, first);
  TG_CHECK(m.has_value(), "kernel '", first.name, "' of kind ", kernel_kind_name(k.kind), " is no GEMM");
  f.compute_dtype = m->element;
  f.ukernel_flops = 2.0 * double(m->batches()) * double(m->rows()) * double(m->cols()) * double(m->k);
  f.packed_bytes = run_time_packed_bytes(g, first, *m, arch);
  return f;
}

void estimate_ukernel_kernels(const Graph& g, Schedule& schedule, const ArchSpec& arch) {
  for (KernelSchedule& k : schedule.kernels) {
    if (!on_ukernel(k.kind)) continue;
    k.features = ukernel_features(g, k, arch);
    k.estimate = estimate_cost(k.features, arch);
  }
}

}  // namespace tilegraph::scheduler
