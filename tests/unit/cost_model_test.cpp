// The scheduler's cost model: box traffic against brute-force enumeration of
// the transactions a box touches, the shared-memory plan against a pairwise
// overlap check, and estimate_cost on hand-built GPU and CPU specs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "scheduler/cost_model.h"

namespace tilegraph::scheduler {
namespace {

// ---------------------------------------------------------------- specs

// A100-like (SXM4 40GB): 108 SMs, 2048 threads / 32 blocks / 64K registers /
// 164 KB shared per SM, up to 163 KB shared per block.
ArchSpec gpu_spec() {
  ArchSpec a;
  a.name = "test-a100";
  a.target = "cuda";
  a.compute_units = 108;
  a.warp_size = 32;
  a.max_threads_per_block = 1024;
  a.max_threads_per_unit = 2048;
  a.max_blocks_per_unit = 32;
  a.shared_bytes_per_block = 163 << 10;
  a.shared_bytes_per_unit = 164 << 10;
  a.registers_per_unit = 65536;
  a.max_registers_per_thread = 255;
  a.kernel_launch_seconds = 2e-6;
  a.peak_fp32_flops = 19.5e12;
  a.peak_fp16_flops = 312e12;
  a.peak_int8_ops = 624e12;
  a.levels = {
      {"dram", LevelScope::kDevice, int64_t{40} << 30, 1.555e12, 32},
      {"l2", LevelScope::kDevice, int64_t{40} << 20, 5e12, 32},
      {"shared", LevelScope::kBlock, 164 << 10, 19.5e12, 128},
      {"registers", LevelScope::kThread, 255 * 4, 0, 4},
  };
  return a;
}

// An 8-core AVX2 CPU.
ArchSpec cpu_spec() {
  ArchSpec a;
  a.name = "test-cpu";
  a.target = "cpu";
  a.compute_units = 8;
  a.cores = 8;
  a.shared_bytes_per_block = 1 << 20;  // a tile's scratch stays in the L2
  a.kernel_launch_seconds = 1e-6;
  a.peak_fp32_flops = 1e12;
  a.peak_int8_ops = 4e12;
  a.levels = {
      {"dram", LevelScope::kDevice, int64_t{64} << 30, 50e9, 64},
      {"l2", LevelScope::kBlock, 1 << 20, 400e9, 64},
      {"l1", LevelScope::kBlock, 32 << 10, 1.6e12, 64},
  };
  return a;
}

KernelFeatures memory_bound(int64_t blocks, int threads, int64_t dram_bytes) {
  KernelFeatures f;
  f.blocks = blocks;
  f.threads_per_block = threads;
  f.dram_bytes = dram_bytes;
  f.flops = 1e3;
  return f;
}

// ---------------------------------------------------------------- box traffic

// Reference: every element of the clipped box, the set of transactions its
// bytes fall in (a bitmap over the tensor's transactions).
int64_t brute_force_traffic(const std::vector<int64_t>& shape, int element_bytes,
                            const std::vector<int64_t>& lo, const std::vector<int64_t>& extent,
                            int transaction_bytes) {
  const size_t rank = shape.size();
  int64_t elements = 1;
  for (int64_t s : shape) elements *= s;
  std::vector<char> touched(static_cast<size_t>(elements * element_bytes / transaction_bytes + 2), 0);
  std::vector<int64_t> first(rank), last(rank);
  for (size_t d = 0; d < rank; ++d) {
    first[d] = std::max<int64_t>(lo[d], 0);
    last[d] = std::min(lo[d] + extent[d], shape[d]);
    if (last[d] <= first[d]) return 0;
  }
  std::vector<int64_t> index = first;
  while (true) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset = offset * shape[d] + index[d];
    int64_t byte = offset * element_bytes;
    for (int64_t t = byte / transaction_bytes; t <= (byte + element_bytes - 1) / transaction_bytes; ++t)
      touched[static_cast<size_t>(t)] = 1;
    // Next index in row-major order; done when the outermost dim wraps.
    size_t d = rank;
    while (d > 0 && ++index[d - 1] == last[d - 1]) {
      index[d - 1] = first[d - 1];
      --d;
    }
    if (d == 0) break;
  }
  int64_t count = 0;
  for (char c : touched) count += c;
  return count * transaction_bytes;
}

TEST(BoxTraffic, MatchesBruteForceOnRandomBoxes) {
  std::mt19937 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int element_sizes[] = {1, 2, 4, 8};  // int8, fp16, fp32, fp64
  const int transactions[] = {16, 32, 64, 128, 24};
  for (int trial = 0; trial < 20000; ++trial) {
    int rank = static_cast<int>(pick(1, 4));
    std::vector<int64_t> shape(rank), lo(rank), extent(rank);
    for (int d = 0; d < rank; ++d) {
      shape[d] = pick(1, d == rank - 1 ? 40 : 7);
      switch (pick(0, 3)) {
        case 0:  // the whole dim: rows merge
          lo[d] = 0;
          extent[d] = shape[d];
          break;
        case 1:  // partly outside on either side
          lo[d] = pick(-3, shape[d]);
          extent[d] = pick(0, shape[d] + 4);
          break;
        default:  // inside, misaligned start
          lo[d] = pick(0, shape[d] - 1);
          extent[d] = pick(1, shape[d] - lo[d]);
      }
    }
    int e = element_sizes[pick(0, 3)];
    int t = transactions[pick(0, 4)];
    ASSERT_EQ(box_traffic_bytes(shape, e, lo, extent, t), brute_force_traffic(shape, e, lo, extent, t))
        << "trial " << trial << " rank " << rank << " e " << e << " t " << t;
  }
}

TEST(BoxTraffic, HandCases) {
  // Whole fp32 rows of a [4, 8] tensor merge into one 128-byte run: 4 sectors.
  EXPECT_EQ(box_traffic_bytes({4, 8}, 4, {0, 0}, {4, 8}, 32), 128);
  // One fp32 column of [4, 8]: each element in its own sector.
  EXPECT_EQ(box_traffic_bytes({4, 8}, 4, {0, 3}, {4, 1}, 32), 4 * 32);
  // A misaligned 8-float run [4, 36) bytes straddles two sectors.
  EXPECT_EQ(box_traffic_bytes({1, 16}, 4, {0, 1}, {1, 8}, 32), 64);
  // Rows of 10 floats, box of 8 per row: sectors shared between rows count once
  // (bytes [0,32) [40,72) [80,112) [120,152) touch sectors 0..4).
  EXPECT_EQ(box_traffic_bytes({4, 10}, 4, {0, 0}, {4, 8}, 32), 5 * 32);
  // Empty, fully outside and negative boxes move nothing.
  EXPECT_EQ(box_traffic_bytes({4, 8}, 4, {0, 0}, {0, 8}, 32), 0);
  EXPECT_EQ(box_traffic_bytes({4, 8}, 4, {4, 0}, {2, 8}, 32), 0);
  EXPECT_EQ(box_traffic_bytes({4, 8}, 4, {-5, 0}, {3, 8}, 32), 0);
  // Partly outside: only rows 2..3 of [4, 8] fp16 (32 bytes) count.
  EXPECT_EQ(box_traffic_bytes({4, 8}, 2, {2, 0}, {5, 8}, 32), 32);
  // A scalar is one transaction.
  EXPECT_EQ(box_traffic_bytes({}, 4, {}, {}, 32), 32);
}

TEST(BoxTraffic, LargeBoxesAreArithmetic) {
  // 10^9-element boxes would take seconds to enumerate; these must not.
  auto start = std::chrono::steady_clock::now();
  // [1024, 1024, 1024] fp16, rows of 1000 at column 3: runs [6, 2006) mod 2048
  // touch 63 sectors each (bytes 6..2005 -> sectors 0..62), 1000*1000 runs.
  EXPECT_EQ(box_traffic_bytes({1024, 1024, 1024}, 2, {0, 0, 3}, {1000, 1000, 1000}, 32),
            int64_t{1000} * 1000 * 63 * 32);
  // int8 with a stride of 1001 bytes: every residue mod 128 occurs; checked
  // against the brute force on a slice small enough to enumerate.
  EXPECT_EQ(box_traffic_bytes({300, 1001}, 1, {5, 7}, {290, 900}, 128),
            brute_force_traffic({300, 1001}, 1, {5, 7}, {290, 900}, 128));
  EXPECT_EQ(box_traffic_bytes({7, 9, 11, 1001}, 1, {1, 2, 3, 50}, {6, 7, 8, 900}, 128),
            brute_force_traffic({7, 9, 11, 1001}, 1, {1, 2, 3, 50}, {6, 7, 8, 900}, 128));
  for (int i = 0; i < 1000; ++i)
    box_traffic_bytes({64, 4096, 4097}, 1, {1, 2, i}, {60, 4000, 4000}, 128);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
}

// ---------------------------------------------------------------- shared memory plan

void expect_valid_plan(const std::vector<SharedBufferUse>& buffers, const SharedMemoryPlan& plan,
                       int64_t alignment) {
  ASSERT_EQ(plan.offsets.size(), buffers.size());
  int64_t peak = 0;
  for (size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % alignment, 0) << "buffer " << i;
    EXPECT_GE(plan.offsets[i], 0);
    peak = std::max(peak, plan.offsets[i] + buffers[i].bytes);
    for (size_t j = 0; j < i; ++j) {
      const SharedBufferUse& a = buffers[i];
      const SharedBufferUse& b = buffers[j];
      bool live_together = a.first_phase <= b.last_phase && b.first_phase <= a.last_phase;
      bool bytes_overlap = plan.offsets[i] < plan.offsets[j] + b.bytes &&
                           plan.offsets[j] < plan.offsets[i] + a.bytes;
      EXPECT_FALSE(live_together && bytes_overlap && a.bytes > 0 && b.bytes > 0)
          << "buffers " << j << " and " << i;
    }
  }
  EXPECT_EQ(plan.peak_bytes, peak);
}

TEST(SharedMemoryPlan, DisjointLifetimesShareBytes) {
  std::vector<SharedBufferUse> buffers = {{4096, 0, 1}, {8192, 2, 3}};
  SharedMemoryPlan plan = plan_shared_memory(buffers);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(plan.peak_bytes, 8192);
  // Overlapping lifetimes stack, the second aligned to 16.
  buffers = {{100, 0, 1}, {100, 1, 2}};
  plan = plan_shared_memory(buffers);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 112}));
  EXPECT_EQ(plan.peak_bytes, 212);
}

TEST(SharedMemoryPlan, TakesTheSmallestGapThatFits) {
  // Placed largest first: A 300 @0 (phase 0), B 200 @300 (0..2), C 150 @500 (0),
  // D 120 @650 (0..2). E (1..2) overlaps only B and D: free gaps [0, 300) and
  // [500, 650); best fit takes the smaller one (first fit would take 0).
  std::vector<SharedBufferUse> buffers = {
      {300, 0, 0}, {200, 0, 2}, {150, 0, 0}, {120, 0, 2}, {100, 1, 2}};
  SharedMemoryPlan plan = plan_shared_memory(buffers, 1);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 300, 500, 650, 500}));
  EXPECT_EQ(plan.peak_bytes, 770);
}

TEST(SharedMemoryPlan, RandomPlansNeverOverlapLiveBuffers) {
  std::mt19937 rng(11);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<SharedBufferUse> buffers(static_cast<size_t>(pick(0, 12)));
    for (SharedBufferUse& b : buffers) {
      b.bytes = pick(0, 1000);
      b.first_phase = static_cast<int>(pick(0, 8));
      b.last_phase = b.first_phase + static_cast<int>(pick(0, 4));
    }
    int64_t alignment = std::vector<int64_t>{1, 16, 128}[static_cast<size_t>(pick(0, 2))];
    SharedMemoryPlan plan = plan_shared_memory(buffers, alignment);
    expect_valid_plan(buffers, plan, alignment);
    // Never below the bytes live at the busiest phase; deterministic.
    for (int phase = 0; phase <= 12; ++phase) {
      int64_t live = 0;
      for (const SharedBufferUse& b : buffers)
        if (b.first_phase <= phase && phase <= b.last_phase) live += b.bytes;
      EXPECT_GE(plan.peak_bytes, live);
    }
    SharedMemoryPlan again = plan_shared_memory(buffers, alignment);
    EXPECT_EQ(again.offsets, plan.offsets);
  }
}

// ---------------------------------------------------------------- estimate_cost

TEST(CostModel, InfeasibleConfigsNameTheLimit) {
  ArchSpec gpu = gpu_spec();
  KernelFeatures f = memory_bound(108, 2048, 1 << 20);
  CostEstimate c = estimate_cost(f, gpu);
  EXPECT_FALSE(c.feasible);
  EXPECT_TRUE(std::isinf(c.seconds));
  EXPECT_NE(c.infeasible_reason.find("threads per block 2048"), std::string::npos) << c.infeasible_reason;
  EXPECT_NE(c.infeasible_reason.find("1024"), std::string::npos);

  f = memory_bound(108, 256, 1 << 20);
  f.shared_bytes_per_block = 200000;
  c = estimate_cost(f, gpu);
  EXPECT_FALSE(c.feasible);
  EXPECT_NE(c.infeasible_reason.find("shared bytes per block 200000"), std::string::npos);
  EXPECT_NE(c.infeasible_reason.find("166912"), std::string::npos) << c.infeasible_reason;

  f = memory_bound(108, 256, 1 << 20);
  f.registers_per_thread = 300;
  c = estimate_cost(f, gpu);
  EXPECT_FALSE(c.feasible);
  EXPECT_NE(c.infeasible_reason.find("registers per thread 300"), std::string::npos);

  // 1024 threads x 128 registers cannot launch on 64K registers per SM.
  f = memory_bound(108, 1024, 1 << 20);
  f.registers_per_thread = 128;
  c = estimate_cost(f, gpu);
  EXPECT_FALSE(c.feasible);
  EXPECT_NE(c.infeasible_reason.find("registers per block 131072"), std::string::npos)
      << c.infeasible_reason;

  // CPU scratch beyond the per-core limit.
  f = memory_bound(8, 1, 1 << 20);
  f.shared_bytes_per_block = 2 << 20;
  EXPECT_FALSE(estimate_cost(f, cpu_spec()).feasible);
}

TEST(CostModel, OccupancyOfAHandComputedCase) {
  // 256 threads (8 warps), 48 KB shared, 64 registers on the A100-like spec:
  //   blocks limit      32
  //   threads           2048 / 256             = 8
  //   shared            167936 / 49152 = 3.4   -> 3
  //   registers         65536 / (64 * 256)     = 4
  // -> 3 blocks per SM, 768 of 2048 threads: occupancy 0.375.
  KernelFeatures f = memory_bound(108 * 3 * 4, 256, 1 << 30);
  f.shared_bytes_per_block = 48 << 10;
  f.registers_per_thread = 64;
  CostEstimate c = estimate_cost(f, gpu_spec());
  ASSERT_TRUE(c.feasible) << c.infeasible_reason;
  EXPECT_EQ(c.blocks_per_unit, 3);
  EXPECT_DOUBLE_EQ(c.occupancy, 0.375);
  EXPECT_DOUBLE_EQ(c.waves, 4.0);
  // 24 resident warps hide latency: full bandwidth, whole waves.
  EXPECT_DOUBLE_EQ(c.dram_seconds, double(1 << 30) / 1.555e12);
  EXPECT_DOUBLE_EQ(c.seconds, c.dram_seconds + 2e-6);

  // Threads round up to whole warps: 100 threads occupy 4 warps (128 threads),
  // so registers allow 65536 / (255 * 128) = 2 blocks.
  f = memory_bound(1000, 100, 1 << 20);
  f.registers_per_thread = 255;
  c = estimate_cost(f, gpu_spec());
  EXPECT_EQ(c.blocks_per_unit, 2);
}

TEST(CostModel, DoublingDramBytesDoublesDramSeconds) {
  ArchSpec gpu = gpu_spec();
  CostEstimate one = estimate_cost(memory_bound(1080, 256, 1 << 28), gpu);
  CostEstimate two = estimate_cost(memory_bound(1080, 256, 1 << 29), gpu);
  EXPECT_DOUBLE_EQ(two.dram_seconds, 2 * one.dram_seconds);
  EXPECT_NEAR((two.seconds - gpu.kernel_launch_seconds) / (one.seconds - gpu.kernel_launch_seconds),
              2.0, 1e-12);
  EXPECT_GT(one.dram_seconds, one.compute_seconds);
}

TEST(CostModel, PartialWavePaysForAWholeWave) {
  // Same work per block; 1.1 waves of 3 blocks per SM take as long as 2 waves.
  ArchSpec gpu = gpu_spec();
  const int64_t per_block = 1 << 20;
  auto run = [&](int64_t blocks) {
    KernelFeatures f = memory_bound(blocks, 256, blocks * per_block);
    f.shared_bytes_per_block = 48 << 10;
    return estimate_cost(f, gpu);
  };
  int64_t wave = 108 * 3;
  CostEstimate partial = run(wave * 11 / 10);
  CostEstimate two = run(2 * wave);
  EXPECT_NEAR(partial.waves, 1.1, 0.01);
  EXPECT_DOUBLE_EQ(two.waves, 2.0);
  EXPECT_NEAR(partial.seconds / two.seconds, 1.0, 1e-12);
  EXPECT_LT(run(wave).seconds, partial.seconds);

  // Fewer blocks than SMs: 54 blocks leave half the device idle, so they take
  // as long as 108 blocks of the same size.
  EXPECT_NEAR(run(54).seconds / run(108).seconds, 1.0, 1e-12);
}

TEST(CostModel, FewResidentWarpsCannotHideLatency) {
  // One warp per SM reaches 1/8 of the bandwidth; eight warps reach all of it.
  ArchSpec gpu = gpu_spec();
  CostEstimate one_warp = estimate_cost(memory_bound(108, 32, 1 << 26), gpu);
  CostEstimate eight_warps = estimate_cost(memory_bound(108, 256, 1 << 26), gpu);
  EXPECT_DOUBLE_EQ(one_warp.dram_seconds, 8 * eight_warps.dram_seconds);
  EXPECT_DOUBLE_EQ(eight_warps.dram_seconds, double(1 << 26) / 1.555e12);
}

TEST(CostModel, ComputeDtypePicksThePeak) {
  ArchSpec gpu = gpu_spec();
  KernelFeatures f = memory_bound(1080, 256, 1024);
  f.flops = 1e12;
  f.compute_dtype = DType::kF32;
  EXPECT_DOUBLE_EQ(estimate_cost(f, gpu).compute_seconds, 1e12 / 19.5e12);
  f.compute_dtype = DType::kF16;
  EXPECT_DOUBLE_EQ(estimate_cost(f, gpu).compute_seconds, 1e12 / 312e12);
  f.compute_dtype = DType::kI8;
  EXPECT_DOUBLE_EQ(estimate_cost(f, gpu).compute_seconds, 1e12 / 624e12);
  f.compute_dtype = DType::kU8;
  EXPECT_DOUBLE_EQ(estimate_cost(f, gpu).compute_seconds, 1e12 / 624e12);
  // The CPU spec has no f16 rate: f16 runs at the fp32 rate.
  f.threads_per_block = 1;
  f.compute_dtype = DType::kF16;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu_spec()).compute_seconds, 1e12 / 1e12);
}

TEST(CostModel, CpuRunsOneBlockPerCore) {
  ArchSpec cpu = cpu_spec();
  KernelFeatures f = memory_bound(12, 1, 1 << 30);
  f.shared_bytes_per_block = 16 << 10;  // fits the 32 KB L1
  f.shared_bytes_moved = int64_t{1} << 32;
  CostEstimate c = estimate_cost(f, cpu);
  ASSERT_TRUE(c.feasible);
  EXPECT_EQ(c.blocks_per_unit, 1);
  EXPECT_DOUBLE_EQ(c.occupancy, 1.0);
  EXPECT_DOUBLE_EQ(c.waves, 1.5);
  EXPECT_DOUBLE_EQ(c.dram_seconds, double(1 << 30) / 50e9);
  EXPECT_DOUBLE_EQ(c.shared_seconds, double(int64_t{1} << 32) / 1.6e12);  // through l1
  // 12 tiles on 8 cores: 1.5 waves pay for 2.
  EXPECT_DOUBLE_EQ(c.seconds, c.dram_seconds * 2 / 1.5 + 1e-6);
}

TEST(CostModel, CpuScratchBeyondL1StreamsFromL2) {
  KernelFeatures f = memory_bound(8, 1, 0);
  f.shared_bytes_moved = int64_t{1} << 32;
  f.shared_bytes_per_block = 24 << 10;  // 3/4 of the 32 KB L1: the rest streams rows
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu_spec()).shared_seconds, double(int64_t{1} << 32) / 1.6e12);
  // Beyond it a growing share misses: half of it at 60 KB, midway to 3 L1s
  // (the L2's half takes longer than the L1's), all of it from 96 KB on.
  f.shared_bytes_per_block = 60 << 10;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu_spec()).shared_seconds, double(int64_t{1} << 31) / 400e9);
  f.shared_bytes_per_block = 33 << 10;  // an eighth misses: the L1's 7/8 take longer
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu_spec()).shared_seconds, double(int64_t{1} << 32) * (7.0 / 8) / 1.6e12);
  f.shared_bytes_per_block = 96 << 10;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu_spec()).shared_seconds, double(int64_t{1} << 32) / 400e9);
  f.shared_bytes_per_block = 512 << 10;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu_spec()).shared_seconds, double(int64_t{1} << 32) / 400e9);
  // A GPU's shared memory has no such step.
  KernelFeatures g = memory_bound(8 * 108, 128, 0);
  g.shared_bytes_moved = int64_t{1} << 32;
  g.shared_bytes_per_block = 4 << 10;
  const double small = estimate_cost(g, gpu_spec()).shared_seconds;
  g.shared_bytes_per_block = 40 << 10;
  EXPECT_GT(estimate_cost(g, gpu_spec()).shared_seconds, 0);
  EXPECT_LE(small, estimate_cost(g, gpu_spec()).shared_seconds);
}

// Cache blocking: a CPU tile's scratch shares the L1 with the tile's own
// input footprints and output tile; and inputs its later phases read again
// (a layer norm's x) come from wherever that working set lives.
TEST(CostModel, CpuTileWorkingSetDecidesWhereScratchAndReReadsLive) {
  KernelFeatures f = memory_bound(8, 1, 0);
  f.shared_bytes_moved = int64_t{1} << 30;
  f.shared_bytes_per_block = 4 << 10;
  f.tile_footprint_bytes = 20 << 10;  // 24 KB in all: 3/4 of the L1
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu_spec()).shared_seconds, double(int64_t{1} << 30) / 1.6e12);
  f.tile_footprint_bytes = 92 << 10;  // 3 L1s
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu_spec()).shared_seconds, double(int64_t{1} << 30) / 400e9);
  f.reread_bytes = int64_t{1} << 30;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu_spec()).shared_seconds, double(int64_t{2} << 30) / 400e9);
  // A GPU block's global reads go through its caches, not shared memory:
  // neither term applies.
  KernelFeatures g = memory_bound(8 * 108, 128, 0);
  g.shared_bytes_moved = int64_t{1} << 30;
  g.shared_bytes_per_block = 4 << 10;
  const double plain = estimate_cost(g, gpu_spec()).shared_seconds;
  g.tile_footprint_bytes = 1 << 20;
  g.reread_bytes = int64_t{1} << 30;
  EXPECT_DOUBLE_EQ(estimate_cost(g, gpu_spec()).shared_seconds, plain);
}

// A tile whose working set spills the L1 reads its scratch and re-reads
// from the L2 on top of the kernel's own traffic through the L2 (one pass
// after another, not overlapped); one beyond the L2 from the L3 or DRAM.
TEST(CostModel, CpuSpilledScratchSharesTheLevelWithTheKernelsStreams) {
  ArchSpec cpu = cpu_spec();  // 8 cores, 1 MB of L2 each (8 MB in all), no L3
  KernelFeatures f = memory_bound(8, 1, 6 << 20);  // served from the L2s
  f.l2_bytes = 4 << 20;
  f.reread_bytes = 2 << 20;
  f.tile_footprint_bytes = 24 << 10;  // fits the L1: scratch at the L1 rate, alone
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).shared_seconds, double(2 << 20) / 1.6e12);
  f.tile_footprint_bytes = 512 << 10;  // the L2: the re-reads plus the 6 MB streamed through it
  CostEstimate c = estimate_cost(f, cpu);
  EXPECT_DOUBLE_EQ(c.dram_seconds, double(6 << 20) / 400e9);
  EXPECT_DOUBLE_EQ(c.shared_seconds, double(8 << 20) / 400e9);
  EXPECT_DOUBLE_EQ(c.seconds, double(8 << 20) / 400e9 + 1e-6);
  // Every tile's footprint reads cross the L2 too, when there are more of them.
  f.l2_bytes = 7 << 20;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).shared_seconds, double(9 << 20) / 400e9);
  // Tensors served from DRAM pass through the L2 all the same.
  f.dram_bytes = 16 << 20;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).shared_seconds, double(18 << 20) / 400e9);
  // Beyond the 1 MB L2: the re-reads come from DRAM (no L3), with the streams.
  f.tile_footprint_bytes = (1 << 20) + 64;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).shared_seconds, double(18 << 20) / 50e9);
  // With an L3 that holds it, from the L3; the tensors it does not hold
  // come from DRAM, past the L3.
  cpu.levels.insert(cpu.levels.begin() + 1, {"l3", LevelScope::kDevice, 12 << 20, 200e9, 64});
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).shared_seconds, double(18 << 20) / 200e9);
  // Tensors the L2s hold do not pass the L3.
  f.dram_bytes = 6 << 20;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).shared_seconds, double(2 << 20) / 200e9);
  // The vector tail scales the scratch traffic, not the streams.
  f.tile_footprint_bytes = 512 << 10;
  f.inner_extent = 16;  // 8 fp32 lanes of 32 bytes: 3 vector steps for 2
  cpu.vector_bytes = 32;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).shared_seconds, (double(2 << 20) * 1.5 + double(7 << 20)) / 400e9);
}

TEST(CostModel, CpuWorkingSetsInCacheAreReadFromThere) {
  ArchSpec cpu = cpu_spec();  // 8 cores with 1 MB of L2 each, no L3
  KernelFeatures f = memory_bound(8, 1, 8 << 20);
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).dram_seconds, double(8 << 20) / 400e9);
  f.dram_bytes = (8 << 20) + 64;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).dram_seconds, double((8 << 20) + 64) / 50e9);
  cpu.levels.insert(cpu.levels.begin() + 1, {"l3", LevelScope::kDevice, 32 << 20, 200e9, 64});
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).dram_seconds, double((8 << 20) + 64) / 200e9);
  f.dram_bytes = int64_t{1} << 30;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).dram_seconds, double(int64_t{1} << 30) / 50e9);
  // A GPU reads DRAM bytes from DRAM (its L2 reuse is in the features):
  // small and large working sets alike.
  KernelFeatures g = memory_bound(108, 128, 1 << 10);
  const double small = estimate_cost(g, gpu_spec()).dram_seconds;
  g.dram_bytes = int64_t{1} << 30;
  EXPECT_DOUBLE_EQ(estimate_cost(g, gpu_spec()).dram_seconds, small * double(1 << 20));
}

TEST(CostModel, CpuWeightsStreamFromDramHoweverSmall) {
  ArchSpec cpu = cpu_spec();  // 8 cores with 1 MB of L2 each (400 GB/s), DRAM 50 GB/s
  cpu.levels.insert(cpu.levels.begin() + 1, {"l3", LevelScope::kDevice, 32 << 20, 200e9, 64});
  // 16 MB that fits the L3 (not the L2s): read from there as activations ...
  KernelFeatures f = memory_bound(8, 1, 16 << 20);
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).dram_seconds, double(16 << 20) / 200e9);
  // ... and from DRAM as weights, read once per inference after the rest of
  // the model has passed through the caches (MobileNetV2's classifier).
  f.constant_bytes = 16 << 20;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).dram_seconds, double(16 << 20) / 50e9);
  // Activations and weights each at their own level's rate: the 1 MB of
  // activations alone fits the L2s.
  f.dram_bytes = 17 << 20;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).dram_seconds, double(1 << 20) / 400e9 + double(16 << 20) / 50e9);
  // A GPU's DRAM term was DRAM's rate for both already: unchanged.
  KernelFeatures g = memory_bound(108, 128, 6 << 20);
  const double all_dram = estimate_cost(g, gpu_spec()).dram_seconds;
  g.constant_bytes = 5 << 20;
  EXPECT_NEAR(estimate_cost(g, gpu_spec()).dram_seconds, all_dram, all_dram * 1e-12);
}

TEST(CostModel, CpuVectorTailsCostTheWholeLastVector) {
  ArchSpec cpu = cpu_spec();
  cpu.vector_bytes = 32;  // 8 fp32 lanes
  KernelFeatures f = memory_bound(8, 1, 0);
  f.flops = 1e9;
  f.inner_extent = 0;  // unknown: no tail
  const double plain = estimate_cost(f, cpu).compute_seconds;
  EXPECT_DOUBLE_EQ(plain, 1e9 / 1e12);
  // Rows of 16: 2 vectors and a row's loop overhead of about one more.
  f.inner_extent = 16;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).compute_seconds, plain * 3 / 2);
  f.inner_extent = 17;  // 3 vectors (the last one 1/8 used) + 1 for 17 lanes of work
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).compute_seconds, plain * 32 / 17);
  f.inner_extent = 4;  // half a vector
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).compute_seconds, plain * 16 / 4);
  // Longer rows amortize it: 32-element rows beat 16-element ones.
  f.inner_extent = 32;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).compute_seconds, plain * 5 / 4);
  // int8 kernels accumulate in int32 lanes: 8 of them too.
  f.compute_dtype = DType::kI8;
  f.inner_extent = 12;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).compute_seconds, 1e9 / 4e12 * 24 / 12);
  // An innermost loop that runs a lane at a time: every element one
  // vector's work, whatever its extent.
  f.compute_dtype = DType::kF32;
  f.scalar_inner = true;
  for (int64_t inner : {0, 4, 17, 512}) {
    f.inner_extent = inner;
    EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).compute_seconds, plain * 8) << inner;
  }
}

TEST(CostModel, CpuPaysTheParallelRegionAndEachTilesSetUp) {
  ArchSpec cpu = cpu_spec();
  cpu.parallel_region_seconds = 3e-7;
  cpu.block_overhead_seconds = 5e-8;
  KernelFeatures f = memory_bound(1, 1, 0);
  f.flops = 0;
  // One tile: one core, no other thread to wake.
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).seconds, 1e-6 + 5e-8);
  f.blocks = 2;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).seconds, 1e-6 + 3e-7 + 5e-8);
  // 17 tiles on 8 cores: the busiest core runs 3.
  f.blocks = 17;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).seconds, 1e-6 + 3e-7 + 3 * 5e-8);
  // For a tiny kernel (10 ns of work on 8 cores) that makes one tile beat
  // a spread of small ones.
  f.flops = 1e4;
  f.blocks = 1;
  const double one = estimate_cost(f, cpu).seconds;
  f.blocks = 17;
  EXPECT_LT(one, estimate_cost(f, cpu).seconds);
  // The GPU spec's terms are its own: these fields do not apply.
  ArchSpec gpu = gpu_spec();
  KernelFeatures g = memory_bound(108, 128, 1 << 20);
  const double before = estimate_cost(g, gpu).seconds;
  gpu.parallel_region_seconds = 1;
  gpu.block_overhead_seconds = 1;
  EXPECT_DOUBLE_EQ(estimate_cost(g, gpu).seconds, before);
}

// A one-row tile of a layer norm waits for its mean and its variance (each
// a chain of dependent vector adds along the row) before the phases that
// read them: 2 ns a vector of those reductions, per tile of the busiest
// core. A GPU spec pays nothing for it.
TEST(CostModel, CpuTilesWaitForTheReductionsALaterPhaseReads) {
  ArchSpec cpu = cpu_spec();
  cpu.vector_bytes = 64;  // 16 float lanes
  KernelFeatures f = memory_bound(80, 1, 1 << 20);  // 10 tiles a core
  const double free = estimate_cost(f, cpu).seconds;
  f.gated_reduction_points = 2 * 768;  // a mean and a variance over 768 floats: 96 vectors
  EXPECT_NEAR(estimate_cost(f, cpu).seconds - free, 10 * 96 * 2e-9, 1e-15);
  cpu.vector_bytes = 32;  // AVX2: 8 lanes, twice the vectors
  EXPECT_NEAR(estimate_cost(f, cpu).seconds - free, 10 * 192 * 2e-9, 1e-15);
  ArchSpec gpu = gpu_spec();
  KernelFeatures g = memory_bound(1080, 128, 1 << 30);
  const double gpu_free = estimate_cost(g, gpu).seconds;
  g.gated_reduction_points = 2 * 768;
  EXPECT_DOUBLE_EQ(estimate_cost(g, gpu).seconds, gpu_free);
}

// The micro-kernel kinds: their GEMM operations at the calibrated
// micro-kernel rate (else the peak), run-time packing at the packing rate
// (else an eighth of the L1's), the two adding up.
TEST(CostModel, CpuMicroKernelsRunAtTheirRatesAfterPacking) {
  ArchSpec cpu = cpu_spec();
  cpu.kernel_launch_seconds = 0;
  cpu.parallel_region_seconds = 0;
  cpu.block_overhead_seconds = 0;
  KernelFeatures f = memory_bound(8, 1, 0);
  f.flops = 0;
  f.ukernel_flops = 1e9;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).seconds, 1e9 / 1e12);  // the fp32 peak
  cpu.ukernel_fp32_flops = 0.5e12;
  CostEstimate c = estimate_cost(f, cpu);
  EXPECT_DOUBLE_EQ(c.ukernel_seconds, 2e-3);
  EXPECT_DOUBLE_EQ(c.seconds, 2e-3);
  f.compute_dtype = DType::kI8;  // the int8 rate: its peak until calibrated
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).seconds, 1e9 / 4e12);
  cpu.ukernel_int8_ops = 1e12;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).seconds, 1e-3);
  f.packed_bytes = 200'000'000;
  c = estimate_cost(f, cpu);
  EXPECT_DOUBLE_EQ(c.pack_seconds, 200e6 / (1.6e12 / 8));
  EXPECT_DOUBLE_EQ(c.seconds, 1e-3 + 1e-3);
  cpu.pack_bytes_per_s = 100e9;
  EXPECT_DOUBLE_EQ(estimate_cost(f, cpu).seconds, 1e-3 + 2e-3);
}

TEST(CostModel, ASplitPaysAboveTheParallelRegionsShareOfTheSavedTime) {
  ArchSpec cpu = cpu_spec();
  cpu.parallel_region_seconds = 3e-7;
  // Over c cores a split saves (c - 1) / c of the kernel: it pays above
  // region * c / (c - 1).
  cpu.cores = 2;
  EXPECT_DOUBLE_EQ(min_parallel_seconds(cpu), 6e-7);
  cpu.cores = 4;
  EXPECT_DOUBLE_EQ(min_parallel_seconds(cpu), 4e-7);
  // A one-core spec still runs a project with more threads: counted as 2.
  cpu.cores = 1;
  EXPECT_DOUBLE_EQ(min_parallel_seconds(cpu), 6e-7);
  // The calibrated region cost scales it.
  cpu.parallel_region_seconds = 2e-6;
  EXPECT_DOUBLE_EQ(min_parallel_seconds(cpu), 4e-6);
}

TEST(CostModel, PaddedTilesCostACpuTheirOverhangButNotAGpu) {
  // 197 rows in tiles of 128: 256 computed for 197 needed.
  KernelFeatures f = memory_bound(16, 1, 1 << 30);
  const double exact = estimate_cost(f, cpu_spec()).seconds - 1e-6;
  f.padding = 256.0 / 197.0;
  EXPECT_NEAR(estimate_cost(f, cpu_spec()).seconds - 1e-6, exact * 256.0 / 197.0, 1e-15);
  KernelFeatures g = memory_bound(16 * 108, 128, 1 << 30);
  const double gpu_exact = estimate_cost(g, gpu_spec()).seconds;
  g.padding = 2;
  EXPECT_DOUBLE_EQ(estimate_cost(g, gpu_spec()).seconds, gpu_exact);
}

TEST(CostModel, MoreWorkIsNeverFaster) {
  std::mt19937 rng(3);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const ArchSpec specs[] = {gpu_spec(), cpu_spec()};
  const DType dtypes[] = {DType::kF32, DType::kF16, DType::kI8};
  for (int trial = 0; trial < 5000; ++trial) {
    const ArchSpec& arch = specs[trial % 2];
    KernelFeatures f;
    f.blocks = pick(1, 5000);
    f.threads_per_block = arch.is_gpu() ? static_cast<int>(pick(1, 1024)) : 1;
    f.shared_bytes_per_block = pick(0, 100 << 10);
    f.registers_per_thread = static_cast<int>(pick(16, 64));
    f.dram_bytes = pick(0, int64_t{1} << 32);
    f.shared_bytes_moved = pick(0, int64_t{1} << 32);
    f.flops = double(pick(0, int64_t{1} << 40));
    f.compute_dtype = dtypes[pick(0, 2)];
    CostEstimate base = estimate_cost(f, arch);
    if (!base.feasible) continue;
    KernelFeatures more = f;
    more.flops = f.flops * 1.5 + double(pick(1, 1 << 30));
    EXPECT_GE(estimate_cost(more, arch).seconds, base.seconds);
    more = f;
    more.dram_bytes = f.dram_bytes + pick(1, int64_t{1} << 30);
    EXPECT_GE(estimate_cost(more, arch).seconds, base.seconds);
    more = f;
    more.shared_bytes_moved = f.shared_bytes_moved + pick(1, int64_t{1} << 30);
    EXPECT_GE(estimate_cost(more, arch).seconds, base.seconds);
  }
}

}  // namespace
}  // namespace tilegraph::scheduler
