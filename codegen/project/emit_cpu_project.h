// Writes the standalone CPU project of a compiled model:
//   model.cpp        the C API of runtime/tilegraph_model.h: the generated tables,
//                    runtime/model/cpu_model_runtime.h (create/destroy, threads,
//                    profiling), then tg_model_run, the kernel sequence
//   cpu_model_runtime.h, tg_model_info.h  copied from runtime/model/
//   kernels.h, kernels_NNN.cpp  the kernels, 64 per file (parallel builds)
//   weights.bin      constants, 64-byte aligned, at MemoryPlan offsets
//   manifest.json    inputs/outputs, kernels (ONNX nodes, schedule), memory plan
//   CMakeLists.txt   builds libmodel.so and main_test (C++17 + OpenMP only), with
//                    -march=native, or for an AArch64 arch spec its ISA's -march
//                    (codegen/project/project_target.h)
//   aarch64-toolchain.cmake  AArch64 arch specs only: cross-compiles the project on
//                    another host (aarch64-linux-gnu-g++; main_test under qemu-aarch64)
//   runtime files    copied from the compiler's embedded runtime/
// Output is deterministic: the same inputs give byte-identical files.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/kernel_ir/kernel_ir.h"
#include "codegen/project/memory_plan.h"
#include "codegen/project/project_files.h"
#include "compiler/ir/graph.h"

namespace tilegraph::codegen {

// The CMake toolchain file an AArch64 project carries for cross builds.
inline constexpr const char* kAarch64ToolchainFile = "aarch64-toolchain.cmake";

// Whether an arch spec's ISA is an AArch64 one ("armv8.2-a+dotprod", "armv9-a+i8mm").
bool is_aarch64_isa(const std::string& isa);

// GCC's -march value for an AArch64 ISA. It is the ISA itself, except that a
// +dotprod or +i8mm on an armv8-a / armv8.1-a base moves the base to armv8.2-a:
// GNU as 2.40 rejects the by-element sdot and smmla there even with the
// extension named. A malformed ISA is a UserError naming it.
std::string aarch64_march(const std::string& isa);

// Returns the manifest written.
nlohmann::json emit_cpu_project(const Graph& g, const std::vector<Kernel>& kernels,
                                const MemoryPlan& plan, const ProjectInfo& info,
                                const std::string& out_dir);

}  // namespace tilegraph::codegen
