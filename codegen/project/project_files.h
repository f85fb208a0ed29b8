// Pieces every generated project shares, whatever its target: writing files
// only when they change, the tensor tables of the C API, the manifest, the
// runtime sources, the weights file.
#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/lowering/int_gemm_variant.h"
#include "codegen/kernel_ir/kernel_ir.h"
#include "codegen/project/memory_plan.h"
#include "codegen/project/project_target.h"
#include "codegen/printing/source_text.h"
#include "compiler/ir/graph.h"

namespace tilegraph::codegen {

struct ProjectInfo {
  std::string arch;                  // "host", "H100", ...
  std::string model_path;            // for the manifest
  nlohmann::json compile_stats;      // merged into manifest["compile"]
  nlohmann::json explain;            // the scheduler's explain report (manifest["explain"])
  std::optional<IntGemmVariant> int_gemm;      // CPU: the int8 GEMM micro-kernel to ship (its header), if used
  std::optional<FloatGemmVariant> float_gemm;  // CPU: the float32 GEMM micro-kernel to ship, if used
  std::string cpu_isa;               // CPU: the arch spec's ISA ("armv8.6-a+dotprod+i8mm"); empty: -march=native
  // A GPU arch's CPU emulation tuned with --sanitize: the emulated warp size
  // (the kernels check every access: codegen/sanitizer/tg_sanitizer.h); 0: off.
  int sanitizer_warp_size = 0;
  // A GPU arch's kernels emulated on the CPU (emit_cpu_project; the project
  // target follows: cpu_emulation_target, else cpu_model_target).
  bool gpu_emulation = false;
  // 16 hex digits naming this compile (the driver hashes the model, the
  // flags and the tilegraph version): weights.bin's header, model.cpp's
  // kProjectHash and the manifest carry it; the model refuses a weights.bin
  // from another compile (runtime/weights_file.h).
  std::string project_hash = "0000000000000000";
  // --memory-budget's batch tiling (driver/memory_budget.h): the kernels are
  // compiled for one micro-batch and tg_model_run runs them this many times
  // over consecutive chunks of the inputs and outputs, whose C API shapes
  // are the whole batch's. 1: no tiling.
  int64_t batch_chunks = 1;
};

// The bytes before the weights in weights.bin (runtime/weights_file.h).
inline constexpr int64_t kWeightsHeaderBytes = 64;

// model.cpp's line declaring kProjectHash.
std::string project_hash_constant(const ProjectInfo& info);

// Writes contents unless the file already holds exactly that (unchanged
// files keep their timestamps, so re-tuning rebuilds only what changed);
// a symlink in its place is replaced, never followed (compiler/ir/replace_file.h).
void write_file(const std::filesystem::path& path, const std::string& contents);

// `const tg_tensor_info <prefix>_info[]` and its shape arrays.
std::string tensor_info_table(const Graph& g, const std::vector<TensorId>& ids, const char* prefix);

// g with the leading dimension of its inputs and outputs multiplied by
// chunks: the C API's view of a graph compiled for one micro-batch of
// ProjectInfo::batch_chunks. g itself when chunks is 1.
Graph whole_batch_io(const Graph& g, int64_t chunks);

// `kKernelNames[]` and `kKernelNodes[]` (comma-separated ONNX nodes per kernel)
// for tg_kernel_name / tg_kernel_nodes.
std::string kernel_name_tables(const std::vector<Kernel>& kernels);

// For a graph with CheckIndex sites (compiler/ir/expr.h): their table and
// `std::string index_error_message(long long site, long long index)`, the
// one-line error tg_model_run reports (index_check_message's wording), for
// the model source's anonymous namespace. Empty for a graph without sites.
std::string index_check_table(const Graph& g);

// A kernel's parameters: its global buffers, in order.
std::vector<const Buffer*> global_buffers(const Kernel& k);
// A global buffer's parameter type: `const float*` (read only), `uint16_t*` ...
std::string param_type(const Buffer& b);

// Where each tensor sits in the C API's input and output arrays (-1: it is
// not a graph input / output). Inputs are looked up before outputs.
struct TensorSlots {
  std::vector<int> input, output;
};
TensorSlots tensor_slots(const Graph& g);

// The memory a model source's pointer expressions name: the weights (W), the
// arena of intermediates (A), the inputs and outputs arrays (names vary: the
// CPU's are the caller's, a GPU's its device copies).
struct ModelMemory {
  const char* inputs;   // "inputs", "d_in"
  const char* outputs;  // "outputs", "d_out"
  // Which of them expressions used so far.
  bool weights = false, arena = false, input = false, output = false;
};

// The typed pointer to tensor id: `(const float*)(W + 64)`, `(float*)(A + 0)`,
// `(const int64_t*)(inputs[1])` ...; notes in memory which it used.
std::string pointer_expr(const Graph& g, const MemoryPlan& plan, TensorId id, const TensorSlots& slots,
                         ModelMemory& memory);

// `const int64_t <name>[] = {...};`: the byte sizes of the tensors.
std::string byte_sizes(const Graph& g, const std::vector<TensorId>& ids, const char* name);

// Kernels go to several source files so a big model builds in parallel
// (one 2.7 MB translation unit took 275 s on one core).
inline constexpr size_t kKernelsPerSourceFile = 64;

// Writes `<stem>_NNN<ext>` for items [0, count), kKernelsPerSourceFile per
// file, each with the text contents(file, first, last) gives for items
// [first, last); removes the further numbered files a previous tune of a
// bigger model left. Returns the names written.
std::vector<std::string> write_numbered_sources(
    const std::string& out_dir, const std::string& stem, const std::string& ext, size_t count,
    const std::function<std::string(size_t file, size_t first, size_t last)>& contents);

// Writes the host side of the model that is not generated (runtime/model/):
// the CPU or GPU model runtime, the table lookups, a GPU target's device shim.
void write_model_runtime_files(const ProjectTarget& t, const std::string& out_dir);

// A GPU target's device shim alone (runtime/model/device_shim_*.h).
void write_device_shim(const ProjectTarget& t, const std::string& out_dir);

// The top-k profiling harness's timing (runtime/model/tg_profile_timing.h).
void write_profile_timing(const std::string& out_dir);

nlohmann::json manifest_json(const Graph& g, const std::vector<Kernel>& kernels, const MemoryPlan& plan,
                             const ProjectInfo& info);

// CMake lines building main_test (plain C++, the runtime sources) against
// the project's `model` library, found next to it at run time.
std::string main_test_cmake(const std::vector<std::string>& main_test_sources);

// Creates out_dir, writes the runtime sources; returns the main_test sources.
std::vector<std::string> write_runtime_files(const std::string& out_dir);

// weights.bin: the header naming info.project_hash, then the constants at
// the plan's offsets.
void write_weights(const Graph& g, const MemoryPlan& plan, const ProjectInfo& info, const std::string& out_dir);

}  // namespace tilegraph::codegen
