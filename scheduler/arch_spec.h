// Hardware limits in one object (STYLE.md §8). GPU and CPU targets are data:
// scheduler/arch/*.json, embedded in the compiler, one file per --arch name;
// the host CPU is read from the machine (cores from the OS, caches from sysfs).
//
// Units: bytes, bytes per second, FLOP (or OP) per second. Capacities of
// block-scoped levels are per compute unit (per SM / CU / core); bandwidths
// are aggregate over the whole device.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tilegraph::scheduler {

// Where a memory level's contents are shared: the whole device (DRAM, L2),
// one block / compute unit (shared memory, L1), or one thread (registers).
enum class LevelScope { kDevice, kBlock, kThread };

struct MemoryLevel {
  std::string name;              // "dram", "l2", "shared", "registers", "l1", "l3"
  LevelScope scope = LevelScope::kDevice;
  int64_t capacity_bytes = 0;    // device: total; block: per compute unit; thread: per thread
  double bandwidth_bytes_per_s = 0;  // aggregate, device-wide
  int transaction_bytes = 32;    // smallest unit moved (DRAM sector, cache line)
};

struct ArchSpec {
  std::string name;              // the --arch name: "host", "H100", ...
  std::string target;            // printer family: "cpu", "cuda", "hip"
  std::string description;       // "NVIDIA H100 SXM5 80GB"
  std::string isa;               // "sm_90", "gfx90a", "x86-64-avx2", "armv8.6-a+dotprod+i8mm"

  // Parallelism.
  int compute_units = 1;         // SMs / CUs / cores
  int warp_size = 1;             // 32 (NVIDIA), 64 (AMD wave), 1 (CPU)
  int max_threads_per_block = 1;
  int max_threads_per_unit = 1;  // resident threads per SM / CU
  int max_blocks_per_unit = 1;   // resident blocks per SM / CU
  int64_t shared_bytes_per_block = 0;  // usable per block (static + dynamic)
  int64_t shared_bytes_per_unit = 0;
  int registers_per_unit = 0;    // 32-bit registers per SM / CU
  int max_registers_per_thread = 255;
  double kernel_launch_seconds = 0;    // per kernel in a captured graph / call overhead
  // CPU targets (optional JSON keys; a CPU spec without them gets the host's
  // defaults): what a kernel's parallel loop over its tiles costs besides the
  // work. A region that spreads tiles over more than one core wakes the other
  // threads and joins them at its end; every tile a core runs pays its loop
  // and scratch set-up.
  double parallel_region_seconds = 0;
  double block_overhead_seconds = 0;
  // CPU targets (optional JSON keys, 0 when absent): the GEMM micro-kernels'
  // achieved rates on L1-resident panels, whole device (`tilegraph
  // calibrate` measures them; 0: the peak rates below), and the rate at
  // which a kernel packs operands into their panels at run time, in bytes
  // of panel written (0: an eighth of the L1 bandwidth, about one element
  // per clock and core: each packed element evaluates its index expression).
  double ukernel_fp32_flops = 0;
  double ukernel_int8_ops = 0;
  double pack_bytes_per_s = 0;

  // Peak arithmetic rates (per second, whole device).
  double peak_fp32_flops = 0;
  double peak_fp16_flops = 0;          // tensor cores / matrix cores where present
  double peak_int8_ops = 0;
  // Whether the schedules may use the matrix units (tensor cores) that
  // peak_fp16_flops counts. Optional JSON key "tensor_cores" (default true;
  // written only when false). tune --no-tensor-cores clears it: see
  // without_tensor_cores.
  bool tensor_cores = true;

  // Memory levels from DRAM (first) inwards to registers (last).
  std::vector<MemoryLevel> levels;

  // CPU code generation (also meaningful for a CPU target's cost model).
  // Not keys of the JSON files: parse_arch_json sets cores = compute_units and
  // l1/l2/l3_bytes to the capacities of the levels named "l1" (else "shared"),
  // "l2" and "l3", 0 where there is none; vector_bytes is a JSON key.
  int cores = 1;                 // == compute_units on CPUs
  int vector_bytes = 32;         // widest SIMD register (AVX2: 32, AVX-512: 64, NEON: 16)
  int64_t l1_bytes = 32 << 10;
  int64_t l2_bytes = 1 << 20;
  int64_t l3_bytes = 8 << 20;
  // The core splits each FMA of its widest vectors into two halves on
  // narrower pipes (AMD Zen 4 runs AVX-512 on 256-bit units), retiring half
  // as many of them per clock as a core with full-width pipes. Optional JSON
  // key "half_width_fma", written only when true; the host sets it from
  // CPUID. Register tiles that pay by feeding more FMAs per loaded vector
  // (the float GEMM's 12-row panels) do not pay there.
  bool half_width_fma = false;

  bool is_gpu() const { return target == "cuda" || target == "hip"; }
  // The level by name, or nullptr.
  const MemoryLevel* level(const std::string& level_name) const;
  // DRAM is levels.front().
  const MemoryLevel& dram() const { return levels.front(); }
};

// ARCH with its tensor cores off (tune --no-tensor-cores, the paper's Fig. 11):
// no matmul phase is planned on them (scheduler/mma_plan.h) and fp16 is
// priced at the CUDA-core rate, which is the fp32 one because half operands
// are widened and accumulate in float. The spec names the change in its JSON
// (and so in the schedule cache's key).
ArchSpec without_tensor_cores(ArchSpec arch);

// The machine tilegraph runs on (cores from the OS, caches from sysfs).
// CORES > 0: the same machine as if it had that many cores, for kernels run
// on that many threads (the per-core rates and caches stay; the totals
// scale): what `tilegraph arch --cores N` prints.
ArchSpec host_arch(int cores = 0);
// An arch by its --arch name (case-insensitive); throws UserError listing the
// known names.
ArchSpec arch_by_name(const std::string& name);
// Every name arch_by_name accepts (canonical spelling), "host" first.
std::vector<std::string> known_arch_names();
// Parses one arch JSON document (the format of scheduler/arch/*.json);
// throws UserError naming `origin` and the missing or malformed field.
ArchSpec parse_arch_json(const std::string& text, const std::string& origin);
// An arch spec file (--arch-file, e.g. written by `tilegraph calibrate`);
// throws UserError naming the file when it cannot be read or parsed, as
// ORIGIN when given (default: "--arch-file 'PATH'").
ArchSpec arch_from_file(const std::string& path, const std::string& origin = "");
// The JSON document parse_arch_json reads back as `a` (every field it has).
std::string arch_to_json(const ArchSpec& a);

}  // namespace tilegraph::scheduler
