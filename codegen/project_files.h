// Pieces every generated project shares, whatever its target: writing files
// only when they change, the tensor tables of the C API, the manifest, the
// runtime sources, the weights file.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
  // CPU: the GEMM micro-kernel headers to ship ("qgemm_avx2.h", "sgemm_avx512.h"), those used.
  std::vector<std::string> ukernel_headers;
  std::string cpu_isa;               // CPU: the arch spec's ISA ("armv8.6-a+dotprod+i8mm"); empty: -march=native
};

// Writes contents unless the file already holds exactly that (unchanged
// files keep their timestamps, so re-tuning rebuilds only what changed).
void write_file(const std::filesystem::path& path, const std::string& contents);

// `const tg_tensor_info <prefix>_info[]` and its shape arrays.
std::string tensor_info_table(const Graph& g, const std::vector<TensorId>& ids, const char* prefix);

// `kKernelNames[]` and `kKernelNodes[]` (comma-separated ONNX nodes per kernel)
// for tg_kernel_name / tg_kernel_nodes.
std::string kernel_name_tables(const std::vector<Kernel>& kernels);

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

// weights.bin at the plan's offsets.
void write_weights(const Graph& g, const MemoryPlan& plan, const std::string& out_dir);

}  // namespace tilegraph::codegen
