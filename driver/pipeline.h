// The compile pipeline: one straight-line function (STYLE.md §5).
//   import (frontends/onnx) → passes → schedule → codegen → emit project → build
#pragma once
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "scheduler/graph_connecting.h"

namespace tilegraph::driver {

struct CompileOptions {
  std::string model_path;                      // PREFIX/model.onnx
  std::string output_dir;                      // PREFIX/tilegraph_rt/<arch>
  std::string arch = "host";
  std::string arch_file;                       // --arch-file: this spec (a known arch's name) instead of arch's own
  std::string cpu_features;                    // --cpu-features "+dotprod,-i8mm" (scheduler/cpu_features.h)
  int topk = 20;
  // --fusion-level none|register|full (--no-fusion = none): scheduler/graph_connecting.h
  scheduler::FusionLevel fusion = scheduler::FusionLevel::kFull;
  bool float_ukernels = true;                  // CPU: float32 GEMMs/convs on the sgemm micro-kernels (--no-float-ukernels: off)
  bool winograd = true;                        // CPU: stride-1 3x3 convs as Winograd F(2x2, 3x3) where it runs (--no-winograd: off)
  // --profile-topk: time each kernel's top-k configs on the device and keep
  // the fastest (driver/profile_topk.h). "auto": on for a CUDA arch when an
  // NVIDIA GPU is present (and the project is built); "on": also on the host
  // CPU, an error where the device is absent; "off": the cost model decides.
  std::string profile_topk = "auto";
  bool tensor_cores = true;                    // GPU archs: --no-tensor-cores clears it (scheduler::without_tensor_cores)
  bool fp16 = false;                           // --fp16: float32 tensors stored in half (passes/to_half_precision.h)
  bool emulate = false;                        // GPU archs: also write + build the CPU emulation
  bool sanitize = false;                       // with emulate: the emulation checks every access (codegen/sanitizer)
  bool skip_dot = false;                       // CUDA archs: float GEMMs call cuBLASLt (scheduler/library_gemm.h)
  bool build_gpu = true;                       // GPU archs: build the CUDA/HIP project when its compiler exists
  // --memory-budget: bytes the model may hold (driver/memory_budget.h); 0: no budget.
  int64_t memory_budget = 0;
  std::map<std::string, Shape> input_shapes;
  std::map<std::string, Tensor> frozen_inputs;  // --freeze-input
  bool build = true;                           // run cmake + build after emitting
  int build_jobs = 0;                          // 0: all cores
  // --compiler-launcher: every compile of the project and of the profiling
  // harness runs through it (an absolute path; driver/compiler_launcher.h)
  std::string compiler_launcher;
  std::vector<std::string> dump_after;         // pass names ("import", "inline_index_maps", ...) or "all"
  bool verbose = false;
};

struct CompileReport {
  int num_kernels = 0;
  int num_kernels_unfused = 0;
  int64_t dram_bytes = 0, dram_bytes_unfused = 0;  // predicted
  int cache_hits = 0, cache_misses = 0;            // schedule cache
  double seconds_frontend = 0, seconds_passes = 0, seconds_schedule = 0, seconds_codegen = 0,
         seconds_build = 0;
  int profiled_kernels = 0;                        // configs chosen by --profile-topk
  // The compiler launcher's cache hits / misses during this compile (sccache; -1: unknown)
  long long launcher_hits = -1, launcher_misses = -1;
};

// Throws UserError for bad models/flags; prints progress to stderr.
// Writes output_dir (the target's project; for GPU archs with emulate also
// output_dir/emulation, the CPU emulation of the same kernels).
CompileReport compile(const CompileOptions& options);

// The names --dump-after accepts besides "all": "import" and each pass, in pipeline order.
const std::vector<std::string>& dump_points();

// Where a GPU arch's CPU emulation project lives.
std::string emulation_dir(const std::string& output_dir);

// The first two steps alone (for tools and tests that inspect the IR); gpu:
// the target is a GPU (passes that pick by what its kernels do well).
Graph import_graph(const CompileOptions& options);
Graph optimize_graph(const CompileOptions& options, const Graph& imported, bool gpu = false);

}  // namespace tilegraph::driver
