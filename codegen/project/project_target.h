// The targets a generated project is built for, as data (STYLE.md §6: a new
// target is a table): the kernels' dialect, the source extension, the
// compiler and its flags, and the CMake lines that follow from them. The CPU,
// CUDA and HIP model projects (emit_cpu_project, emit_cuda_project) and the
// top-k profiling harness (emit_profile_project) all build from here.
#pragma once
#include <string>

#include "codegen/printing/c_printer.h"

namespace tilegraph::codegen {

enum class ProjectLanguage { kCpu, kCuda, kHip };

struct ProjectTarget {
  ProjectLanguage language;
  Dialect dialect;           // how kernels are printed
  std::string source_ext;    // of model and kernel sources: ".cpp", ".cu", ".hip"
  // The ISA the compiler is told: GCC's -march ("native", "armv8.2-a+dotprod"),
  // CMake's CUDA architecture ("90"), hipcc's --offload-arch ("gfx90a").
  std::string arch;
  // GPU: the runtime/model/device_shim_*.h that spells the device API for
  // the model runtime and the kernel launchers. CPU: empty.
  std::string device_shim;
  // manifest.json's "target" for GPU projects ("cuda", "hip").
  std::string name;

  bool gpu() const { return language != ProjectLanguage::kCpu; }
  // CPU: the kernels' loops run on the project's thread pool.
  bool thread_pool() const { return dialect.pool_parallel_loops; }
};

// A model's CPU project, compiled with -march=<march>: its kernels' parallel
// loops run on the project's one thread pool (cpu_pool_dialect,
// codegen/thread_pool/tg_thread_pool.h), which model.cpp's runtime then
// sizes (TG_THREAD_POOL).
ProjectTarget cpu_model_target(const std::string& march);

// A GPU arch's kernels emulated on the CPU: a parallel loop is an OpenMP
// `parallel for` (cpu_dialect); with `sanitizer_warp_size` > 0 every access
// is checked and blocks run in turn (sanitizer_dialect).
ProjectTarget cpu_emulation_target(int sanitizer_warp_size, const std::string& march);

// The top-k profiling harness's CPU variants (OpenMP loops, -march=native).
ProjectTarget cpu_profile_target();

// The GPU target of an arch spec's ISA: "sm_NN" is CUDA, "gfxNNN" HIP;
// anything else is a UserError naming it.
ProjectTarget gpu_project_target(const std::string& gpu_isa);

// CMakeLists.txt from cmake_minimum_required to the build type and the
// packages the target needs, for project `project_name`. `after_project`:
// lines right after project() (a check of the toolchain).
std::string cmake_preamble(const ProjectTarget& t, const std::string& project_name,
                           const std::string& after_project = "");

// The lines compiling `cmake_target`'s sources for t (flags: no fast math,
// the arch) and linking what they need; `cublaslt`: CUDA library GEMMs.
std::string cmake_compile_options(const ProjectTarget& t, const std::string& cmake_target, bool cublaslt = false);

}  // namespace tilegraph::codegen
