// Writes the standalone CPU project of a compiled model:
//   model.cpp        the C API of runtime/tilegraph_model.h: the kernel launch sequence
//   kernels.h, kernels_NNN.cpp  the kernels, 64 per file (parallel builds)
//   weights.bin      constants, 64-byte aligned, at MemoryPlan offsets
//   manifest.json    inputs/outputs, kernels (ONNX nodes, schedule), memory plan
//   CMakeLists.txt   builds libmodel.so and main_test (C++17 + OpenMP only)
//   runtime files    copied from the compiler's embedded runtime/
// Output is deterministic: the same inputs give byte-identical files.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/kernel_ir.h"
#include "codegen/memory_plan.h"
#include "codegen/project_files.h"
#include "compiler/ir/graph.h"

namespace tilegraph::codegen {

// Returns the manifest written.
nlohmann::json emit_cpu_project(const Graph& g, const std::vector<Kernel>& kernels,
                                const MemoryPlan& plan, const ProjectInfo& info,
                                const std::string& out_dir);

}  // namespace tilegraph::codegen
