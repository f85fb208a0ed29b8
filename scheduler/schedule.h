// Schedules: the decisions that turn a Graph into kernels, as data (STYLE.md
// §8) so they can be dumped, replayed and tested without re-running a search.
//
// A kernel is a fused group of ops (tile-graph scheduler: GraphConnecting
// decides the groups and the memory level of each edge, SubGraphTiling the
// tile per group) or one op under the simple CPU loop rules.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "scheduler/arch_spec.h"
#include "scheduler/cost_model.h"
#include "scheduler/library_gemm.h"

namespace tilegraph::scheduler {

// Where a producer's values go on their way to a consumer in the same kernel.
//  kRegister: the producer (elementwise) is recomputed inside the consumer's
//             expression — its values never leave registers;
//  kShared:   the producer computes its tile into shared memory (GPU) or a
//             cache-resident scratch buffer (CPU) that the consumer reads;
//  kDram:     different kernels (not an edge inside a kernel).
enum class Connection { kRegister, kShared, kDram };
const char* connection_name(Connection c);

struct FusedEdge {
  int producer = -1;           // Graph::ops indices
  int consumer = -1;
  Connection level = Connection::kShared;
};

// One point of SubGraphTiling's search space.
struct TileConfig {
  std::vector<int64_t> tile;   // per output dim of the kernel's root (last) op
  int threads = 1;             // per block (CPU: 1)
  int64_t reduce_step = 0;     // chunk of the first reduce axis staged through shared memory (0: none)
  std::string to_string() const;  // "tile=1x64x64 threads=128 step=32"
};

// Which lowering turns a kernel into Kernel IR (codegen/lowering/lower_kernel.h
// dispatches on it); every kernel is exactly one kind.
enum class KernelKind {
  // CPU: a single op (after register-level inlining) as a loop nest; the
  // parallel depth and register tile below are its decisions.
  kLoopNest,
  // A grid of blocks, each computing one tile of the root (GPUs; CPU groups
  // with shared edges): scheduler/block_plan.h plans it from `config`.
  kBlock,
  // CPU: the first phase is an integer GEMM (scheduler/int_gemm.h) computed
  // by the int8 micro-kernel; a second phase, if any, is its elementwise
  // epilogue, applied to each accumulator tile before it is stored.
  kIntGemm,
  // CPU: the same for a float32 GEMM on the float micro-kernel (sgemm_*.h).
  kFloatGemm,
  // CPU: the first phase is a depthwise convolution (scheduler/direct_conv.h)
  // computed by the direct kernel (codegen/lowering/lower_direct_conv_kernel.h); a
  // second phase, if any, is its elementwise epilogue, applied in its store.
  kDirectConv,
  // CPU: the first phase is a stride-1, pad-1 3x3 convolution
  // (scheduler/winograd_conv.h) computed as Winograd F(2x2, 3x3) around the
  // float micro-kernel (codegen/lowering/lower_winograd_conv_kernel.h); a
  // second phase, if any, is its elementwise epilogue, applied in its store.
  kWinogradConv,
  // GPU with --skip-dot: the kernel's single op (and its bias / ReLU
  // epilogue) is a float GEMM handed to cuBLASLt (emulated by a reference
  // GEMM on the CPU); never fused. Its tile and estimate are still the
  // tiling search's, as the cost model's stand-in for the library's time.
  kLibraryGemm,
};
// "loop_nest", "block", "int_gemm", "float_gemm", "direct_conv", "winograd_conv", "library_gemm": the
// kind's name in explain and manifest.json.
const char* kernel_kind_name(KernelKind kind);

struct KernelSchedule {
  KernelKind kind = KernelKind::kLoopNest;
  std::vector<int> ops;        // indices into Graph::ops computed by this kernel (topological, root last)
  int parallel_depth = 0;      // leading output loops collapsed into one parallel loop
  // Register tile for reductions: out[..., i, j] is accumulated in a
  // tile_rows x tile_cols block while the reduce loops run outside it, so the
  // innermost loop walks j (contiguous, vectorized) with loads reused across rows.
  int row_axis = -1;           // output axis tiled by tile_rows (-1: none)
  int64_t tile_rows = 1;       // along row_axis
  int64_t tile_cols = 1;       // along reduction_col_axis (the last output axis but for keepdims)
  // Reduction loop nest, outermost first: every output axis but row_axis and
  // the column axis, then the row-block loop, then the column-block loop;
  // inside, the reduce loops, then the tile loops.

  // Tile-graph decisions.
  std::vector<FusedEdge> edges;         // internal edges (kRegister / kShared)
  // Ops besides the root whose outputs the kernel also writes to DRAM
  // (read by later kernels, or graph outputs): a fused kernel may have
  // several outputs, of different ranks.
  std::vector<int> extra_outputs;
  // The library call's description: set exactly when kind is kLibraryGemm.
  std::optional<LibraryGemm> library_gemm;
  TileConfig config;                    // the chosen tile
  std::vector<TileConfig> candidates;   // top-k by the cost model, best first
  std::vector<CostEstimate> candidate_estimates;  // the search's, parallel to candidates
  KernelFeatures features;              // of the chosen config
  CostEstimate estimate;
  // Top-k profiling (tune --profile-topk): each candidate's measured median
  // time in seconds, parallel to candidates (empty: chosen by the cost model).
  std::vector<double> measured_seconds;
};

struct Schedule {
  std::string arch;
  std::vector<KernelSchedule> kernels;
};

// The ops a kernel computes as phases: its ops with every kRegister
// producer inlined into its consumers (and dropped), root last.
std::vector<Op> phase_ops(const Graph& g, const KernelSchedule& k);

Schedule schedule_one_op_per_kernel(const Graph& g, const ArchSpec& arch);

// The CPU loop decisions (parallel depth, register tile) for a kernel that
// computes the single op `op` (after register-level inlining).
void apply_cpu_loop_rules(const Graph& g, const Op& op, const ArchSpec& arch, KernelSchedule& k);

// Do the op's loads walk its innermost reduce axis contiguously (in their
// last index) and none walk its innermost output axis there? Then reducing
// each element in an inner loop reads memory in order, where a register tile
// over output elements would gather across rows (a partial reduction's rows).
bool reads_along_reduce_axis(const Graph& g, const Op& op);

// Does a load's innermost axis longer than 1 (where it is contiguous: a 1x1
// conv's weights are [C_out, C_in, 1, 1]) move with the op's innermost
// reduce axis longer than 1? Then each element's own vectorized reduce loop
// reads that operand in order.
bool loads_walk_reduce_axis(const Graph& g, const Op& op);

// The output axis a reduction's register tile runs along (tile_cols): the
// last one, except where the last ones are 1 (a keepdims reduction: a layer
// norm's mean over NCHW channels is [N, 1, H, W] or, after a Transpose,
// [N, HW, 1]) and no load walks the reduce axis contiguously: then the last
// axis longer than 1, so the tile's vector loop moves along memory while the
// reduce loop strides outside it. Each element reducing alone read one value
// per cache line instead (Restormer's layer norms over 96 channels at
// 256 x 256: 16 ms per mean).
int reduction_col_axis(const Graph& g, const Op& op);

}  // namespace tilegraph::scheduler
