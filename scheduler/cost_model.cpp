// estimate_cost: a roofline over the kernel's DRAM traffic, shared-memory
// (or L1) traffic and arithmetic, corrected for how much of the machine the
// launch configuration can keep busy. box_traffic_bytes and
// plan_shared_memory, the other two functions of cost_model.h, live in
// box_traffic.cpp and shared_memory_plan.cpp.
//
// The model, per kernel:
//   blocks_per_unit  = min(max_blocks_per_unit,
//                          max_threads_per_unit / threads_w,
//                          shared_bytes_per_unit / shared_bytes,
//                          registers_per_unit / (registers * threads_w))
//                      where threads_w = threads rounded up to whole warps
//                      (GPU; a CPU core runs one block at a time: 1).
//   n                = ceil(blocks / units)       blocks of the busiest unit
//   resident         = min(blocks_per_unit, n)    of them at once
//   rounds           = ceil(n / resident)
//   wave_efficiency  = blocks / (units * resident * rounds)
//   latency_hiding   = min(1, resident * warps_per_block / 8)   (GPU; CPU: 1)
//   X_seconds        = X / (rate_X * latency_hiding)   for dram, shared, compute
//   seconds          = max(X_seconds) * padding / wave_efficiency + kernel_launch_seconds
//                      (padding: computed / needed output elements; CPU only)
//
// A CPU core runs its n tiles one after another, so on a CPU also:
//   tail             = (ceil(inner / lanes) + 1) * lanes / inner   (vector
//                      lanes of the compute dtype; the last vector of a row is
//                      partly used, and a row's loop start costs about one more);
//                      lanes where the innermost loop runs a lane at a time
//                      (a block kernel whose tile overhangs the innermost axis)
//   compute_seconds  *= tail
//   shared_seconds   scratch traffic and the re-reads of inputs by a tile's
//                      later phases (both * tail), at the rate of the level
//                      the tile's working set (scratch + its inputs'
//                      footprints + its output tile) fits: the L1, the L2
//                      (from 3/4 to 3 L1s a growing share),
//                      else the L3 or DRAM (cache blocking); beyond the L1
//                      plus the kernel's streamed bytes that pass through
//                      that level (dram_bytes when served from it or beyond;
//                      on the L2 at least l2_bytes): they share its bandwidth
//   dram_seconds     at the rate of the innermost level that holds all of the
//                      kernel's DRAM bytes but its constants': the L2s of all
//                      cores, the L3, DRAM; plus the constants' first read
//                      at DRAM's rate (weights: read once per inference)
//   compute_seconds += ukernel_flops / the micro-kernel's achieved rate
//   pack_seconds     = packed_bytes / pack_bytes_per_s   (packing precedes
//                      the micro-kernel's compute: the two add up in the bound)
//   seconds         += (block_overhead_seconds + kGatedReductionVectorSeconds
//                       * gated_reduction_points / lanes) * n
//                      + parallel_region_seconds   when the tiles use > 1 core
//
// With at least one full wave (n >= blocks_per_unit) wave_efficiency equals
// waves / ceil(waves), waves = blocks / (units * blocks_per_unit): a kernel
// of 1.1 waves pays for 2. With less than a full wave the busiest unit holds
// all its n blocks at once, so fewer blocks than units leaves
// 1 - blocks/units of the device idle, and a few small blocks per unit are
// charged through latency_hiding instead of as empty block slots.
#include "scheduler/cost_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/ir/error.h"
#include "compiler/ir/int_math.h"

namespace tilegraph::scheduler {

namespace {

// Resident warps a GPU compute unit needs to hide memory and pipeline
// latency; with fewer, achieved bandwidth and throughput fall in proportion.
constexpr double kSaturatingWarps = 8;

// Looked up here rather than through ArchSpec::level so the cost model
// depends on the spec's fields only, not on the loader's code.
const MemoryLevel* find_level(const ArchSpec& arch, const std::string& name) {
  for (const MemoryLevel& level : arch.levels)
    if (level.name == name) return &level;
  return nullptr;
}

// The level shared_bytes_moved goes through: shared memory on a GPU, the
// innermost cache that holds a tile's working set on a CPU: the L1 (to 3/4
// of it), else the L2 (l1_spill: the share that misses the L1), else the L3
// or DRAM (one core's whole-tensor tile beyond its L2).
const MemoryLevel* scratch_level(const ArchSpec& arch, int64_t working_set) {
  if (arch.is_gpu()) return find_level(arch, "shared");
  const MemoryLevel* l1 = find_level(arch, "l1");
  if (l1 && working_set * 4 <= l1->capacity_bytes * 3) return l1;
  const MemoryLevel* l2 = find_level(arch, "l2");
  if (!l2) return l1;
  if (working_set <= l2->capacity_bytes || l2->bandwidth_bytes_per_s <= 0) return l2;
  const MemoryLevel* l3 = find_level(arch, "l3");
  if (l3 && l3->bandwidth_bytes_per_s > 0 && working_set <= l3->capacity_bytes) return l3;
  return &arch.dram();
}

// Position of a level from DRAM (0) inwards: a byte served by a level passes
// through every level after it on its way to the core.
size_t depth(const ArchSpec& arch, const MemoryLevel* level) {
  return static_cast<size_t>(level - arch.levels.data());
}

// Where a CPU kernel's "DRAM" traffic comes from: the tensors a kernel
// reads were written by the kernels just before it, so a working set that
// fits the per-core L2s (all cores') or the L3 is served from there.
const MemoryLevel& memory_level(const ArchSpec& arch, int64_t bytes) {
  if (arch.is_gpu()) return arch.dram();
  const MemoryLevel* l2 = find_level(arch, "l2");
  if (l2 && l2->bandwidth_bytes_per_s > 0 && bytes <= l2->capacity_bytes * arch.compute_units) return *l2;
  const MemoryLevel* l3 = find_level(arch, "l3");
  if (l3 && l3->bandwidth_bytes_per_s > 0 && bytes <= l3->capacity_bytes) return *l3;
  return arch.dram();
}

// What a CPU tile waits per vector of a reduction that a later, wider phase
// of it reads (KernelFeatures::gated_reduction_points): the reduction adds
// its row's vectors into one accumulator, a dependent add each (about 4
// clocks), and the phase after it cannot start before the sum. A tile of
// several rows overlaps one row's chain with another's; a one-row tile
// waits for each chain in full. Measured on one Zen 4 core: vit's first
// layer norm (mean and variance over 384 floats, 24 vectors each) 12.0 us in
// one tile of its 50 tokens and 15.3 in one-token tiles (33 ns a chain,
// 1.4 ns a vector), bert's over 768 floats 27.1 us in 2-row tiles and 31.6
// in 1-row ones (1.5 ns a vector). 1-2 ns ranked the 47 profiled kernels of
// the model set best (swin's means, which gate nothing, stay fastest in
// one-row tiles).
constexpr double kGatedReductionVectorSeconds = 2e-9;

// A row's loop start and exit (address set-up, the exit branch, a break in
// the prefetcher's stream) cost about one vector operation.
constexpr double kRowOverheadVectors = 1;

// Lanes of a vector of the compute dtype (>= 1).
int64_t vector_lanes(DType compute, const ArchSpec& arch) {
  const int64_t element = std::max<int64_t>(dtype_size(compute), 1);
  // Integer kernels accumulate in 32 bits: their lanes are int32's.
  return std::max<int64_t>(arch.vector_bytes / std::max<int64_t>(element, 4), 1);
}

// How much more vector work a CPU tile does than its elements need, rows
// of `inner` elements: the last, partly filled vector of each row and the
// row's loop overhead; >= 1. Long rows (a tile spanning the tensor's rows)
// amortize both.
double vector_tail(int64_t inner, DType compute, const ArchSpec& arch) {
  const int64_t lanes = vector_lanes(compute, arch);
  if (inner <= 1 || lanes <= 1) return 1;
  return (double(ceil_div(inner, lanes)) + kRowOverheadVectors) * double(lanes) / double(inner);
}

// The vector tail of a CPU kernel's loops, or the lanes of its vectors
// when its innermost loop runs a lane at a time (KernelFeatures::scalar_inner).
double cpu_vector_factor(const KernelFeatures& f, const ArchSpec& arch) {
  if (f.scalar_inner) return double(vector_lanes(f.compute_dtype, arch));
  return vector_tail(f.inner_extent, f.compute_dtype, arch);
}

// Scratch a CPU tile may keep cache-resident: the spec's per-block limit, or
// the per-core L2 when a CPU spec leaves that limit unset.
int64_t shared_limit(const ArchSpec& arch) {
  if (!arch.is_gpu() && arch.shared_bytes_per_block == 0) return arch.l2_bytes;
  return arch.shared_bytes_per_block;
}

// Peak rate of the compute dtype; a spec without a dedicated f16 or int8 rate
// computes those at the fp32 rate.
double peak_rate(DType t, const ArchSpec& arch) {
  if (t == DType::kF16 && arch.peak_fp16_flops > 0) return arch.peak_fp16_flops;
  if ((t == DType::kI8 || t == DType::kU8) && arch.peak_int8_ops > 0) return arch.peak_int8_ops;
  return arch.peak_fp32_flops;
}

// The GEMM micro-kernels' achieved rates (calibrated), else the peaks.
double ukernel_rate(DType t, const ArchSpec& arch) {
  if (t == DType::kI8 || t == DType::kU8) return arch.ukernel_int8_ops > 0 ? arch.ukernel_int8_ops : peak_rate(t, arch);
  return arch.ukernel_fp32_flops > 0 ? arch.ukernel_fp32_flops : peak_rate(t, arch);
}

// Bytes per second a kernel packs operand panels at run time: calibrated,
// else an eighth of the L1 bandwidth (about an element per clock and core).
double pack_rate(const ArchSpec& arch) {
  if (arch.pack_bytes_per_s > 0) return arch.pack_bytes_per_s;
  const MemoryLevel* l1 = find_level(arch, "l1");
  return l1 && l1->bandwidth_bytes_per_s > 0 ? l1->bandwidth_bytes_per_s / 8 : arch.dram().bandwidth_bytes_per_s;
}

// The first per-block or per-thread limit the kernel exceeds, or "".
std::string exceeded_limit(const KernelFeatures& f, const ArchSpec& arch) {
  if (f.threads_per_block > arch.max_threads_per_block)
    return str_cat("threads per block ", f.threads_per_block, " exceed the limit ",
                   arch.max_threads_per_block, " of ", arch.name);
  if (f.shared_bytes_per_block > shared_limit(arch))
    return str_cat("shared bytes per block ", f.shared_bytes_per_block, " exceed the limit ",
                   shared_limit(arch), " of ", arch.name);
  if (!arch.is_gpu()) return "";
  if (f.registers_per_thread > arch.max_registers_per_thread)
    return str_cat("registers per thread ", f.registers_per_thread, " exceed the limit ",
                   arch.max_registers_per_thread, " of ", arch.name);
  // A block whose registers do not fit in one unit cannot launch at all.
  int64_t threads = ceil_div(f.threads_per_block, arch.warp_size) * arch.warp_size;
  int64_t registers = int64_t{f.registers_per_thread} * threads;
  if (arch.registers_per_unit > 0 && registers > arch.registers_per_unit)
    return str_cat("registers per block ", registers, " (", f.registers_per_thread, " x ", threads,
                   " threads) exceed the limit ", arch.registers_per_unit, " of ", arch.name);
  return "";
}

// Resident blocks per compute unit: the tightest of the unit's limits.
// Limits a spec leaves at 0 are not applied; a feasible block always fits once.
int blocks_per_unit(const KernelFeatures& f, const ArchSpec& arch) {
  if (!arch.is_gpu()) return 1;
  int64_t threads = ceil_div(f.threads_per_block, arch.warp_size) * arch.warp_size;
  int64_t n = arch.max_blocks_per_unit;
  n = std::min<int64_t>(n, arch.max_threads_per_unit / threads);
  if (f.shared_bytes_per_block > 0 && arch.shared_bytes_per_unit > 0)
    n = std::min(n, arch.shared_bytes_per_unit / f.shared_bytes_per_block);
  if (f.registers_per_thread > 0 && arch.registers_per_unit > 0)
    n = std::min(n, arch.registers_per_unit / (int64_t{f.registers_per_thread} * threads));
  return static_cast<int>(std::max<int64_t>(n, 1));
}

// Time to move or compute `amount` at `rate` scaled by `utilization`.
double seconds_at(double amount, double rate, double utilization, const char* what,
                  const ArchSpec& arch) {
  if (amount <= 0) return 0;
  TG_CHECK(rate > 0, "arch ", arch.name, " has no rate for ", what);
  return amount / (rate * utilization);
}

// The fraction of a CPU tile's scratch traffic that misses the L1: none
// while its working set fits 3/4 of the L1 (the rest holds the lines
// streaming in and out), all of it from 3 L1s on, linear between. The
// working set counts every footprint and scratch buffer of the tile at once,
// while a phase touches only some of them, and an LRU cache loses a growing
// share as the reuse distance passes its size, not all at once. Fitted to
// the profiled tiles of full-size bert's and vit's layer norms and softmaxes
// and of NAFNet_small (one core): a step at half the L1 ranked bert's 2-row
// layer-norm tiles (0.9 L1, the fastest measured) below 1-row ones; no
// spill below the whole L1 ranked NAFNet's 40 KB tiles above its 20 KB ones
// (measured 1.1-1.6x slower).
double l1_spill(int64_t working_set, const MemoryLevel& l1) {
  const double fits = double(l1.capacity_bytes) * 3 / 4, spilled = double(l1.capacity_bytes) * 3;
  return std::clamp((double(working_set) - fits) / (spilled - fits), 0.0, 1.0);
}

// A CPU tile's scratch traffic and its inputs' re-reads (both * the vector
// tail) come from the level its working set fits (scratch_level). Beyond
// the L1 they share that level's bandwidth with the kernel's own reads and
// writes passing through it: the tensors a level at or beyond it serves
// (and on the L2 every tile's footprint reads, l2_bytes). A whole-tensor
// layer norm or softmax whose x spills the L1 reads x from the L2 twice,
// one pass after the other; a tile that fits the L1 reads it from the L2
// once, and its scratch traffic hits the L1 while the L2 fills the next
// lines (L1 loads and fills overlap). Between 3/4 and 3 L1s the spilled
// share (l1_spill) goes to the L2, the rest to the L1, overlapped.
double cpu_scratch_seconds(const KernelFeatures& f, const ArchSpec& arch, const MemoryLevel& streamed_from) {
  const double scratch_bytes =
      double(f.shared_bytes_moved + f.reread_bytes) * cpu_vector_factor(f, arch);
  const int64_t working_set = f.shared_bytes_per_block + f.tile_footprint_bytes;
  const MemoryLevel* level = scratch_level(arch, working_set);
  if (!level || scratch_bytes <= 0) return 0;
  const MemoryLevel* l1 = find_level(arch, "l1");
  if (level == l1) return seconds_at(scratch_bytes, level->bandwidth_bytes_per_s, 1, "l1 bandwidth", arch);
  double passing = depth(arch, &streamed_from) <= depth(arch, level) ? double(f.dram_bytes) : 0.0;
  double spilled = scratch_bytes, in_l1 = 0;
  if (level == find_level(arch, "l2")) {
    passing = std::max(passing, double(f.l2_bytes));
    if (l1 && l1->bandwidth_bytes_per_s > 0) {
      spilled = scratch_bytes * l1_spill(working_set, *l1);
      in_l1 = seconds_at(scratch_bytes - spilled, l1->bandwidth_bytes_per_s, 1, "l1 bandwidth", arch);
    }
  }
  return std::max(in_l1, seconds_at(spilled + passing, level->bandwidth_bytes_per_s, 1, "scratch bandwidth", arch));
}

}  // namespace

CostEstimate estimate_cost(const KernelFeatures& f, const ArchSpec& arch) {
  TG_CHECK(f.blocks >= 1 && f.threads_per_block >= 1, "blocks ", f.blocks, " threads ",
           f.threads_per_block);
  TG_CHECK(!arch.levels.empty() && arch.compute_units >= 1 && arch.warp_size >= 1,
           "arch ", arch.name, " lacks memory levels or compute units");
  CostEstimate c;
  c.infeasible_reason = exceeded_limit(f, arch);
  if (!c.infeasible_reason.empty()) {
    c.feasible = false;
    c.seconds = std::numeric_limits<double>::infinity();
    return c;
  }

  const int64_t units = arch.compute_units;
  c.blocks_per_unit = blocks_per_unit(f, arch);
  c.occupancy = arch.is_gpu() ? std::min(1.0, double(c.blocks_per_unit) * f.threads_per_block /
                                                  arch.max_threads_per_unit)
                              : 1.0;
  c.waves = double(f.blocks) / double(units * c.blocks_per_unit);

  // Work of the busiest unit, in rounds of `resident` concurrent blocks.
  const int64_t n = ceil_div(f.blocks, units);
  const int64_t resident = std::min<int64_t>(c.blocks_per_unit, n);
  const int64_t rounds = ceil_div(n, resident);
  const double wave_efficiency = double(f.blocks) / double(units * resident * rounds);

  double latency_hiding = 1;
  if (arch.is_gpu()) {
    double warps = double(resident * ceil_div(f.threads_per_block, arch.warp_size));
    latency_hiding = std::min(1.0, warps / kSaturatingWarps);
  }

  // On a CPU the weights come from DRAM however few they are: MobileNetV2's
  // 1280 x 1000 classifier (5.1 MB, of 14 MB of weights) was priced at the
  // L3's rate, 0.066 ms, and measured 0.40-0.45 (the DRAM's 12-14 GB/s).
  // A GPU's DRAM term is DRAM's rate for all of them alike.
  const int64_t constant = std::clamp<int64_t>(f.constant_bytes, 0, f.dram_bytes);
  const int64_t streamed = f.dram_bytes - constant;
  const MemoryLevel& streamed_from = memory_level(arch, streamed);
  c.dram_seconds = seconds_at(double(streamed), streamed_from.bandwidth_bytes_per_s, latency_hiding,
                              "dram bandwidth", arch) +
                   seconds_at(double(constant), arch.dram().bandwidth_bytes_per_s, latency_hiding,
                              "dram bandwidth", arch);
  if (arch.is_gpu()) {
    if (const MemoryLevel* shared = scratch_level(arch, f.shared_bytes_per_block))
      c.shared_seconds = seconds_at(double(f.shared_bytes_moved), shared->bandwidth_bytes_per_s, latency_hiding,
                                    "shared bandwidth", arch);
  } else {
    c.shared_seconds = cpu_scratch_seconds(f, arch, streamed_from);
  }
  c.compute_seconds = seconds_at(f.flops, peak_rate(f.compute_dtype, arch), latency_hiding,
                                 dtype_name(f.compute_dtype), arch);
  if (!arch.is_gpu()) {
    c.compute_seconds *= cpu_vector_factor(f, arch);
    c.ukernel_seconds = seconds_at(f.ukernel_flops, ukernel_rate(f.compute_dtype, arch), 1, "micro-kernel", arch);
    c.compute_seconds += c.ukernel_seconds;
    c.pack_seconds = seconds_at(double(f.packed_bytes), pack_rate(arch), 1, "packing", arch);
  }
  // Level "l2" (GPUs; CPUs: the per-core L2 that blocks' footprints stream through).
  for (const MemoryLevel& level : arch.levels)
    if (level.name == "l2" && level.bandwidth_bytes_per_s > 0)
      c.l2_seconds = seconds_at(double(f.l2_bytes), level.bandwidth_bytes_per_s, latency_hiding, "l2 bandwidth", arch);
  double bound = std::max({c.dram_seconds, c.l2_seconds, c.shared_seconds, c.compute_seconds + c.pack_seconds});
  // A GPU's padded threads idle inside blocks the waves already pay for; a
  // CPU core runs a tile's padded elements like any others.
  const double padding = arch.is_gpu() ? 1.0 : std::max(1.0, f.padding);
  c.seconds = bound * padding / wave_efficiency + arch.kernel_launch_seconds;
  if (!arch.is_gpu()) {
    const double gated_vectors = double(f.gated_reduction_points) / double(vector_lanes(f.compute_dtype, arch));
    c.seconds += (arch.block_overhead_seconds + kGatedReductionVectorSeconds * gated_vectors) * double(n) +
                 (std::min(f.blocks, units) > 1 ? arch.parallel_region_seconds : 0);
  }
  return c;
}

double min_parallel_seconds(const ArchSpec& arch) {
  const double cores = std::max(2, arch.cores);
  return arch.parallel_region_seconds * cores / (cores - 1);
}

}  // namespace tilegraph::scheduler
