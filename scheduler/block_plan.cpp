#include "scheduler/block_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "compiler/ir/error.h"
#include "compiler/ir/flops.h"
#include "compiler/ir/int_math.h"

namespace tilegraph::scheduler {

int64_t on_chip_bytes(DType t) { return dtype_size(compute_dtype(t)); }

namespace {

// Bytes a tile's `loads` element reads of an input cost when its footprint
// is loose (a gather's whole table): a transaction per load, except where
// the loads run along the table's innermost dimension, which holds as many
// elements as the tile's innermost extent (`tile_inner`, the vectorized
// loop): a gathered row of an embedding table, whose loads share their
// transactions. A transaction per float priced bert's word-embedding gather
// (128 rows of 768 floats) at 6.3 MB for any tile, 16x its 384 KB, at
// DRAM's rate. A table indexed along its innermost dimension, or whose
// innermost dimension is not the loop's (swin's relative position bias,
// [169, heads], read along the keys), keeps a transaction per load, as do
// regions that are not loose (strided reads touch every line of their box).
int64_t loose_read_bytes(int64_t loads, const Region& region, int64_t tile_inner, int64_t element_bytes,
                         int64_t transaction) {
  const bool loose =
      std::any_of(region.dims.begin(), region.dims.end(), [](const RegionDim& d) { return d.whole_dim; });
  int64_t run = element_bytes;
  if (loose && !region.dims.back().whole_dim && region.dims.back().extent == tile_inner)
    run = std::clamp<int64_t>(tile_inner * element_bytes, element_bytes, transaction);
  return ceil_div(num_elements({loads, transaction}) * element_bytes, run);
}

// Does the union over all blocks of `r` cover every element of `shape`?
// Sufficient rule: each dim is either whole in every block, or steps with its
// own block var by no more than its extent (adjacent blocks touch).
bool covers_tensor(const Region& r, const Shape& shape, const GroupTiling& t) {
  std::set<int> used;
  for (size_t d = 0; d < shape.size(); ++d) {
    const RegionDim& rd = r.dims[d];
    int64_t c = 0;
    if (is_const_int(rd.base, &c)) {
      if (c + rd.lo > 0 || c + rd.lo + rd.extent < shape[d]) return false;
      continue;
    }
    // base = b * step for a block var b.
    Expr v = rd.base;
    int64_t step = 1;
    if (v->kind == ExprKind::kBinary && v->binary_op == BinaryOp::kMul && is_const_int(v->args[1], &step)) v = v->args[0];
    if (v->kind != ExprKind::kVar) return false;
    const int id = static_cast<int>(v->int_value);
    size_t which = t.block_vars.size();
    for (size_t b = 0; b < t.block_vars.size(); ++b)
      if (t.block_vars[b] == id) which = b;
    if (which == t.block_vars.size() || !used.insert(id).second) return false;
    if (rd.lo > 0 || rd.lo + rd.extent < step || t.blocks_per_dim[which] * step < shape[d]) return false;
  }
  return true;
}

std::vector<Expr> phase_axis_values(const OpTile& t) {
  std::vector<Expr> v = t.coords;
  for (int r : t.reduce_vars) v.push_back(var(r));
  return v;
}

// Outer-var values of a representative (interior) block, chunk 0: the
// middle one of each grid dim, the first of two. Not the last of two: where
// the tile does not divide the tensor it is the partial one, and its clamped
// box priced every block (swin's layer-norm means over 784 rows in two tiles
// of 512: 272 rows each, 0.42 MB of a 0.60 MB tensor; the tiles ranked first
// and measured 2.2x the whole-tensor tile).
std::vector<int64_t> representative_block(const GroupTiling& t) {
  std::vector<int64_t> values(t.vars.names.size(), 0);
  for (size_t d = 0; d < t.block_vars.size(); ++d) values[t.block_vars[d]] = (t.blocks_per_dim[d] - 1) / 2;
  return values;
}

// Bytes per block that a CPU core fetches into a cache of `cache_bytes` of
// an input whose blocks run one after another on that core (the last grid
// dim fastest): lines a block shares with its neighbour along grid dim d hit
// that cache when what the blocks in between touch (`block_bytes` each)
// fits in it. Then a sweep along d loads the union of its blocks' boxes
// once, and each block pays its share. Returns `per_block` when no dim reuses.
// With the L1 as the cache: the L2's traffic. vit's patch-embedding
// transpose reads one token's 128 channels of a channel-major [384, 49]
// tensor: 128 lines, priced 8 KB per block, of which the next token's block
// reads every line again (1 x 1 x 128 tiles measured 1.35x faster than the
// 50 x 64 ones priced cheapest). A tensor every block reads whole (a layer
// norm's scale) costs its bytes once per sweep.
// With the L2 as the cache: the bytes from beyond it. swin's reverse roll
// reads each token's row of the windowed tensor through a four-way Select:
// the box of the four branches' rows spans most of the tensor (0.6 MB), and
// summed over 784 one-token blocks it priced 6.6 MB from the L3 for the 1.8
// MB the kernel moves (one-token tiles measured fastest, 1.45x the pick).
int64_t cpu_swept_bytes_per_block(const Tensor& t, const Region& region, const GroupTiling& tiling,
                                  const std::vector<int64_t>& block, int64_t per_block, int64_t block_bytes,
                                  int64_t cache_bytes, int transaction) {
  int64_t best = per_block;
  int64_t distance = 1;  // blocks between a block and its neighbour along d
  std::vector<int64_t> extent;
  for (const RegionDim& d : region.dims) extent.push_back(d.extent);
  for (int d = static_cast<int>(tiling.block_vars.size()) - 1; d >= 0; --d) {
    const int64_t n = tiling.blocks_per_dim[static_cast<size_t>(d)];
    if (n > 1 && num_elements({distance, block_bytes}) <= cache_bytes) {
      std::vector<int64_t> first_values = block, last_values = block;
      first_values[static_cast<size_t>(tiling.block_vars[static_cast<size_t>(d)])] = 0;
      last_values[static_cast<size_t>(tiling.block_vars[static_cast<size_t>(d)])] = n - 1;
      const std::vector<int64_t> first = region_origin(region, first_values);
      const std::vector<int64_t> last = region_origin(region, last_values);
      std::vector<int64_t> lo(first.size()), span(first.size());
      for (size_t i = 0; i < first.size(); ++i) {
        lo[i] = std::min(first[i], last[i]);
        span[i] = std::max(first[i], last[i]) + extent[i] - lo[i];
      }
      const int64_t swept =
          box_traffic_bytes(t.shape, static_cast<int>(dtype_size(t.dtype)), lo, span, transaction);
      best = std::min(best, ceil_div(swept, n));
    }
    distance = num_elements({distance, n});
  }
  return best;
}

// The points a tile's reductions sum per output element, of the reductions
// whose result a later, wider phase of the tile reads (directly or through
// narrower phases): a layer norm's mean, which every element of x - mean
// waits for, and its variance, which the normalization waits for. A
// reduction read only by phases of its own width (a mean's scaling) gates
// nothing.
int64_t gated_reduction_points(const std::vector<Op>& phases, const std::vector<PhasePlan>& plans) {
  int64_t points = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    if (phases[i].reduction == Reduction::kNone) continue;
    std::set<TensorId> reached = {phases[i].output};
    for (size_t j = i + 1; j < phases.size(); ++j) {
      const std::vector<TensorId>& in = phases[j].inputs;
      if (std::none_of(in.begin(), in.end(), [&](TensorId t) { return reached.count(t) > 0; })) continue;
      if (plans[j].elements > plans[i].elements) {
        points += reduce_points(phases[i]);
        break;
      }
      reached.insert(phases[j].output);
    }
  }
  return points;
}

}  // namespace

BlockPlan plan_block_kernel(const Graph& g, const KernelSchedule& k, const TileConfig& config,
                            const ArchSpec& arch) {
  BlockPlan p;
  p.config = config;
  p.phases = phase_ops(g, k);
  std::vector<const Op*> ptrs;
  for (const Op& op : p.phases) ptrs.push_back(&op);
  p.tiling = propagate_tiles(g, ptrs, config.tile);
  const int64_t threads = std::max(1, config.threads);
  std::map<TensorId, int> phase_of;
  for (size_t i = 0; i < p.phases.size(); ++i) phase_of[p.phases[i].output] = static_cast<int>(i);
  const int last = static_cast<int>(p.phases.size()) - 1;
  std::set<TensorId> extra_outputs;
  for (int op : k.extra_outputs) extra_outputs.insert(g.ops.at(static_cast<size_t>(op)).output);

  int64_t shared_reads = 0, shared_writes = 0;
  double flops = 0;
  int64_t max_accumulators = 0;
  for (int i = 0; i <= last; ++i) {
    const Op& op = p.phases[i];
    const OpTile& tile = p.tiling.ops[i];
    PhasePlan pp;
    pp.elements = tile.region.volume();
    pp.per_thread = ceil_div(pp.elements, threads);
    const DType dtype = g.tensor(op.output).dtype;
    const int64_t elem = on_chip_bytes(dtype);
    if (i != last && extra_outputs.count(op.output)) {
      pp.writes_global = true;
      if (p.uncovered_output.empty() && !covers_tensor(tile.region, g.tensor(op.output).shape, p.tiling))
        p.uncovered_output = g.tensor(op.output).name;
    }
    if (i != last) {
      pp.buffer = static_cast<int>(p.buffers.size());
      p.buffers.push_back({str_cat("t", i), compute_dtype(dtype), pp.elements, i, i});
      shared_writes += pp.elements * elem;
    }
    flops += static_cast<double>(pp.elements) * static_cast<double>(reduce_points(op)) *
             static_cast<double>(arithmetic_per_point(op, FlopRule::kAllArithmetic));
    if (op.reduction != Reduction::kNone) max_accumulators = std::max(max_accumulators, pp.per_thread);
    if (op.reduction != Reduction::kNone && threads == 1) {
      pp.accumulator = static_cast<int>(p.buffers.size());
      p.buffers.push_back({str_cat("a", i), compute_dtype(dtype), pp.elements, i, i});
    }

    // Reduce chunks staged through shared memory (GPU blocks only: on a CPU
    // the caches do this).
    int64_t phase_reads = 0;  // shared memory bytes this phase reads
    const bool chunked = op.reduction != Reduction::kNone && threads > 1 && config.reduce_step > 0 &&
                         !op.reduce_extents.empty() && op.reduce_extents[0] > 1;
    if (chunked) {
      pp.step = std::min(config.reduce_step, op.reduce_extents[0]);
      pp.chunks = ceil_div(op.reduce_extents[0], pp.step);
      pp.chunk_var = p.tiling.vars.add(str_cat("p", i, "_k"), pp.chunks, true);
      pp.chunk_local_var = p.tiling.vars.add(str_cat("p", i, "_kk"), pp.step, false);
      std::vector<Expr> values = phase_axis_values(tile);
      values[tile.coords.size()] = var(pp.chunk_var) * pp.step + var(pp.chunk_local_var);
      // Per chunk, each thread reads every staged element about
      // elements*step/volume times: stage what is reused.
      int64_t other_reduce = 1;
      for (size_t r = 1; r < op.reduce_extents.size(); ++r) other_reduce *= op.reduce_extents[r];
      std::vector<bool> from_memory(op.inputs.size());
      for (size_t s = 0; s < op.inputs.size(); ++s) from_memory[s] = !phase_of.count(op.inputs[s]);
      const std::vector<InputFootprint> footprints = input_footprints(g, op, values, p.tiling.vars, from_memory);
      for (size_t s = 0; s < op.inputs.size(); ++s) {
        if (!from_memory[s]) continue;
        const InputFootprint& f = footprints[s];
        if (!f.loaded) continue;
        bool whole = false;
        for (const RegionDim& d : f.region.dims) whole |= d.whole_dim;
        const int64_t volume = f.region.volume();
        if (whole || volume * 2 > pp.elements * pp.step * other_reduce) continue;
        StagedInput st;
        st.slot = static_cast<int>(s);
        st.region = f.region;
        st.buffer = static_cast<int>(p.buffers.size());
        const DType in_type = g.tensor(op.inputs[s]).dtype;
        p.buffers.push_back({str_cat("s", i, "_", s),
                             compute_dtype(in_type), volume, i, i});
        shared_writes += volume * on_chip_bytes(in_type) * pp.chunks;
        phase_reads += pp.elements * reduce_points(op) * f.loads * on_chip_bytes(in_type);
        pp.staged.push_back(std::move(st));
      }
      if (pp.staged.empty()) pp.step = 0, pp.chunks = 1;
    }
    if (op.reduction != Reduction::kNone && threads > 1)
      pp.mma = plan_mma(g, op, tile.region, static_cast<int>(threads), pp.step, arch);
    // Reads of producers kept on chip.
    const std::vector<int> loads_of = count_loads_by_slot(op.body, op.inputs.size());
    for (size_t s = 0; s < op.inputs.size(); ++s) {
      auto it = phase_of.find(op.inputs[s]);
      if (it == phase_of.end() || it->second >= i) continue;
      p.buffers[p.phase_plans[it->second].buffer].last_phase = i;
      const int loads = loads_of[s];
      phase_reads += pp.elements * reduce_points(op) * loads * elem;
    }
    if (pp.mma) {
      // Every lane loads 8 + 4 fragment values per 16 x 8 x 16 step, not two
      // operands per multiply-add.
      const int64_t inner = reduce_points(op) / op.reduce_extents[0];  // per index of reduce axis 0
      const int64_t depth = pp.step > 0 ? pp.chunks * ceil_div(pp.step * inner, kMmaK)
                                        : ceil_div(reduce_points(op), kMmaK);
      const int64_t steps = pp.elements / (kMmaM * kMmaN) * depth;
      phase_reads = steps * kWarpLanes * 12 * on_chip_bytes(DType::kF16);
    }
    shared_reads += phase_reads;
    p.phase_plans.push_back(std::move(pp));
  }

  std::vector<SharedBufferUse> uses;
  for (const SharedBuffer& b : p.buffers)
    uses.push_back({b.elements * std::max<int64_t>(dtype_size(b.dtype), 1), b.first_phase, b.last_phase});
  p.shared = plan_shared_memory(uses, 16);

  // Traffic: each block reads its inputs' footprints through L2; DRAM sees
  // each tensor once when it fits in L2 (the rest of the reuse hits there).
  KernelFeatures& f = p.features;
  f.blocks = p.tiling.blocks();
  f.threads_per_block = static_cast<int>(threads);
  f.shared_bytes_per_block = p.shared.peak_bytes;
  f.registers_per_thread = static_cast<int>(std::min<int64_t>(24 + (threads > 1 ? max_accumulators : 8), 255));
  const MemoryLevel* l2 = arch.level("l2");
  const int64_t l2_bytes = l2 ? l2->capacity_bytes : 0;
  const int transaction = arch.levels.empty() ? 32 : arch.dram().transaction_bytes;
  const std::vector<int64_t> block = representative_block(p.tiling);
  // Element reads per block of each input from DRAM: a bound on its
  // transactions when the footprint is loose (a gather's whole table).
  std::map<TensorId, int64_t> reads;
  for (int i = 0; i <= last; ++i) {
    const Op& op = p.phases[i];
    const std::vector<int> loads_of = count_loads_by_slot(op.body, op.inputs.size());
    for (size_t s = 0; s < op.inputs.size(); ++s) {
      if (phase_of.count(op.inputs[s])) continue;
      const int64_t loads = loads_of[s];
      reads[op.inputs[s]] += num_elements({p.phase_plans[i].elements, reduce_points(op), loads});
    }
  }
  // Phases of the tile that load each input: all but the first read it again.
  std::map<TensorId, int> loading_phases;
  for (int i = 0; i <= last; ++i) {
    std::set<TensorId> loaded;
    for (TensorId in : p.phases[i].inputs)
      if (!phase_of.count(in)) loaded.insert(in);
    for (TensorId in : loaded) ++loading_phases[in];
  }
  int64_t dram = 0, l2_traffic = 0, footprint = 0, reread = 0, constant = 0;
  const int64_t tile_inner = config.tile.empty() ? 1 : config.tile.back();
  // Bytes of the tile's outputs a block writes, of each input it loads, and
  // of everything it touches.
  int64_t written_bytes = 0;
  for (int i = 0; i <= last; ++i)
    if (i == last || extra_outputs.count(p.phases[i].output))
      written_bytes += p.phase_plans[i].elements * dtype_size(g.tensor(p.phases[i].output).dtype);
  std::map<TensorId, int64_t> block_reads;
  int64_t block_bytes = written_bytes;
  for (const auto& [tensor, region] : p.tiling.input_regions) {
    const Tensor& t = g.tensor(tensor);
    std::vector<int64_t> extent;
    for (const RegionDim& d : region.dims) extent.push_back(d.extent);
    block_reads[tensor] = std::min(
        box_traffic_bytes(t.shape, static_cast<int>(dtype_size(t.dtype)), region_origin(region, block), extent,
                          transaction),
        loose_read_bytes(reads[tensor], region, tile_inner, dtype_size(t.dtype), transaction));
    block_bytes += block_reads[tensor];
  }
  for (const auto& [tensor, region] : p.tiling.input_regions) {
    const Tensor& t = g.tensor(tensor);
    const int64_t per_block = block_reads[tensor];
    // A loose footprint (a gather's whole table) holds only the rows the
    // tile loads: the table itself never sits in the tile's cache level.
    const int64_t region_bytes = std::min(region.volume() * dtype_size(t.dtype), per_block);
    footprint += region_bytes;
    reread += region_bytes * std::max(loading_phases[tensor] - 1, 0);
    const int64_t through_l2 = num_elements({per_block, f.blocks});
    const int64_t l2_per_block =
        arch.is_gpu() ? per_block
                      : cpu_swept_bytes_per_block(t, region, p.tiling, block, per_block, block_bytes, arch.l1_bytes,
                                               transaction);
    const int64_t once = box_traffic_bytes(t.shape, static_cast<int>(dtype_size(t.dtype)),
                                           std::vector<int64_t>(t.shape.size(), 0), t.shape, transaction);
    const int64_t from_dram = t.bytes() * 2 <= l2_bytes ? std::min(through_l2, once)
                              : arch.is_gpu()           ? through_l2
                                                        : num_elements({cpu_swept_bytes_per_block(
                                                                            t, region, p.tiling, block, per_block,
                                                                            block_bytes, l2_bytes, transaction),
                                                                        f.blocks});
    dram += from_dram;
    // A weight's first read (its re-reads by later blocks hit the caches).
    if (t.kind == TensorKind::kConstant) constant += std::min(from_dram, once);
    l2_traffic += num_elements({l2_per_block, f.blocks});
  }
  const Tensor& out = g.tensor(p.phases.back().output);
  for (TensorId written : extra_outputs) {
    const Tensor& t = g.tensor(written);
    dram += box_traffic_bytes(t.shape, static_cast<int>(dtype_size(t.dtype)), std::vector<int64_t>(t.shape.size(), 0),
                              t.shape, transaction);
  }
  dram += box_traffic_bytes(out.shape, static_cast<int>(dtype_size(out.dtype)),
                            std::vector<int64_t>(out.shape.size(), 0), out.shape, transaction);
  f.dram_bytes = dram;
  f.constant_bytes = constant;
  f.l2_bytes = l2_traffic;
  f.tile_footprint_bytes = footprint + written_bytes;
  f.reread_bytes = num_elements({reread, f.blocks});
  f.gated_reduction_points = gated_reduction_points(p.phases, p.phase_plans);
  f.shared_bytes_moved = num_elements({shared_reads + shared_writes, f.blocks});
  f.flops = flops * static_cast<double>(f.blocks);
  // Half is computed in float on CUDA cores; only tensor-core phases run at
  // the fp16 (tensor) rate.
  bool tensor_cores = false;
  for (const PhasePlan& pp : p.phase_plans) tensor_cores |= pp.mma.has_value();
  f.compute_dtype = tensor_cores ? DType::kF16 : compute_dtype(out.dtype);
  const double root_waste = static_cast<double>(num_elements({p.phase_plans.back().elements, f.blocks})) /
                            static_cast<double>(std::max<int64_t>(num_elements(out.shape), 1));
  f.padding = root_waste;
  f.inner_extent = config.tile.empty() ? 0 : config.tile.back();
  f.scalar_inner = !arch.is_gpu() && p.phases.size() > 1 && !config.tile.empty() && !out.shape.empty() &&
                   out.shape.back() % config.tile.back() != 0;
  for (int i = 0; i < last; ++i) {
    const double computed = static_cast<double>(num_elements({p.phase_plans[i].elements, f.blocks}));
    const double needed = static_cast<double>(std::max<int64_t>(num_elements(g.tensor(p.phases[i].output).shape), 1));
    p.recompute = std::max(p.recompute, computed / needed / root_waste);
  }
  return p;
}

}  // namespace tilegraph::scheduler
