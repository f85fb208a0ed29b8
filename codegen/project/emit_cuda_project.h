// Writes the standalone GPU project of a compiled model (CUDA, or HIP with
// the hip dialect): the same C API as the CPU project (runtime/tilegraph_model.h)
// and the same main_test. CUDA and HIP projects differ only in their target
// (codegen/project/project_target.h): dialect, extension, device shim and CMake lines.
//   model.cu         the generated tables (tensors, sizes, kernel names, library
//                    GEMM shapes), then runtime/model/gpu_model_runtime.h, then
//                    the launch sequence it calls (enqueue_kernels, copy_outputs,
//                    take_index_errors)
//   gpu_model_runtime.h, tg_model_info.h  the host side, copied from
//                    runtime/model/: device memory from the static plan, weights
//                    uploaded once at create, every device call checked and
//                    reported with the kernel's name, a device graph per model
//   device_shim_cuda.h / device_shim_hip.h  tg_device_* over cuda* / hip*
//   kernels_NNN.cu   the block kernels printed with the GPU dialect, plus a
//                    host launch function per kernel (grid, threads, dynamic
//                    shared memory; opts into >48 KiB where needed)
//   CMakeLists.txt   CUDA: CUDA language, CMAKE_CUDA_ARCHITECTURES from the arch;
//                    HIP: hipcc as the C++ compiler, --offload-arch from the arch
//   tg_cublaslt.h    with library GEMMs (tune --skip-dot) only: model.cu
//                    calls cuBLASLt for them (linking CUDA::cublasLt)
//   weights.bin, manifest.json, runtime files   as in the CPU project
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/printing/c_printer.h"
#include "codegen/kernel_ir/kernel_ir.h"
#include "codegen/project/memory_plan.h"
#include "codegen/project/project_files.h"
#include "compiler/ir/graph.h"

namespace tilegraph::codegen {

// `gpu_arch`: the ISA of the arch spec ("sm_90", "gfx90a"). Every kernel
// must be a block kernel (Kernel::grid > 0) or, for CUDA, a library GEMM
// (codegen/lowering/lower_library_gemm.h). Returns the manifest written.
nlohmann::json emit_cuda_project(const Graph& g, const std::vector<Kernel>& kernels, const MemoryPlan& plan,
                                 const ProjectInfo& info, const std::string& gpu_arch,
                                 const std::string& out_dir);

// A CUDA block kernel's source and its host launcher
// `tg_device_error launch_<name>(params..., tg_device_stream)` over the device
// shim (grid, threads, dynamic shared memory, opting into more than 48 KiB),
// for harnesses that launch kernels outside a project (top-k profiling).
std::string cuda_kernel_with_launcher(const Kernel& k);

}  // namespace tilegraph::codegen
