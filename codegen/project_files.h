// Pieces every generated project shares, whatever its target: writing files
// only when they change, the tensor tables of the C API, the manifest, the
// runtime sources, the weights file.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/int_gemm_variant.h"
#include "codegen/kernel_ir.h"
#include "codegen/memory_plan.h"
#include "codegen/source_text.h"
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
  // CPU: the kernels' parallel loops run on one thread pool shared by the
  // whole inference (codegen/thread_pool/tg_thread_pool.h) instead of an
  // OpenMP fork/join each. Host-arch projects; GPU emulations keep OpenMP.
  bool thread_pool = false;
  // 16 hex digits naming this compile (the driver hashes the model, the
  // flags and the tilegraph version): weights.bin's header, model.cpp's
  // kProjectHash and the manifest carry it; the model refuses a weights.bin
  // from another compile (runtime/weights_file.h).
  std::string project_hash = "0000000000000000";
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

// `kKernelNames[]` and `kKernelNodes[]` (comma-separated ONNX nodes per kernel)
// for tg_kernel_name / tg_kernel_nodes.
std::string kernel_name_tables(const std::vector<Kernel>& kernels);

// For a graph with CheckIndex sites (compiler/ir/expr.h): their table and
// `std::string index_error_message(long long site, long long index)`, the
// one-line error tg_model_run reports (index_check_message's wording), for
// the model source's anonymous namespace. Empty for a graph without sites.
std::string index_check_table(const Graph& g);

// The C API's table lookups (tg_last_error, tg_num_inputs, tg_input_info,
// tg_kernel_name ...) over the tables above; inside extern "C".
std::string model_info_functions();

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
