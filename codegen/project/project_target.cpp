#include "codegen/project/project_target.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "compiler/ir/error.h"

namespace tilegraph::codegen {

namespace {

// Whether s is `prefix` followed by one or more letters and digits.
bool is_isa(const std::string& s, const std::string& prefix) {
  return s.size() > prefix.size() && s.compare(0, prefix.size(), prefix) == 0 &&
         std::all_of(s.begin() + static_cast<std::ptrdiff_t>(prefix.size()), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
}

#if defined(__x86_64__) || defined(_M_X64)
constexpr bool kHostIsX86 = true;
#else
constexpr bool kHostIsX86 = false;
#endif

// -march=native on an AVX-512 x86 host (Ice Lake, Sapphire Rapids: GCC 12
// takes SPR for "rocketlake") also tunes for 256-bit vectors
// (-mprefer-vector-width=256), so every `omp simd` loop, softmax and layer
// norm rows, GELU epilogues and GEMM packing, ran on ymm registers with
// scalar tails while only the intrinsic micro-kernels used zmm. Asking for
// 512 bits there makes those loops 1.1-1.2x faster (a bert-base softmax
// 171 us against 197 us, its layer norm 33 against 38); on a host without
// AVX-512 the option selects nothing wider than the ISA has. GCC and Clang
// both accept it; other x86 compilers fall through the generator expression.
std::string wide_vector_option(const std::string& cmake_target) {
  return str_cat("target_compile_options(", cmake_target,
                 " PRIVATE $<$<OR:$<CXX_COMPILER_ID:GNU>,$<CXX_COMPILER_ID:Clang>>:-mprefer-vector-width=512>)\n");
}

ProjectTarget cpu_target(const Dialect& d, const std::string& march) {
  return {ProjectLanguage::kCpu, d, ".cpp", march, "", "cpu"};
}

}  // namespace

ProjectTarget cpu_model_target(const std::string& march) { return cpu_target(cpu_pool_dialect(), march); }

ProjectTarget cpu_emulation_target(int sanitizer_warp_size, const std::string& march) {
  return cpu_target(sanitizer_warp_size > 0 ? sanitizer_dialect(sanitizer_warp_size) : cpu_dialect(), march);
}

ProjectTarget cpu_profile_target() { return cpu_target(cpu_dialect(), "native"); }

ProjectTarget gpu_project_target(const std::string& gpu_isa) {
  if (is_isa(gpu_isa, "sm_"))
    return {ProjectLanguage::kCuda, cuda_dialect(), ".cu", gpu_isa.substr(3), "device_shim_cuda.h", "cuda"};
  if (is_isa(gpu_isa, "gfx"))
    return {ProjectLanguage::kHip, hip_dialect(), ".hip", gpu_isa, "device_shim_hip.h", "hip"};
  throw UserError(str_cat("GPU arch '", gpu_isa, "' is neither CUDA (sm_NN) nor HIP (gfxNNN)"));
}

std::string cmake_preamble(const ProjectTarget& t, const std::string& project_name,
                           const std::string& after_project) {
  std::ostringstream out;
  switch (t.language) {
    case ProjectLanguage::kCpu:
      out << "cmake_minimum_required(VERSION 3.16)\nproject(" << project_name << " CXX)\n" << after_project;
      break;
    case ProjectLanguage::kCuda:
      out << "cmake_minimum_required(VERSION 3.18)\n"
          // Before project(): it would otherwise default to the compiler's oldest arch.
          << "if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)\n"
          << "  set(CMAKE_CUDA_ARCHITECTURES " << t.arch << ")\n"
          << "endif()\n"
          << "project(" << project_name << " CXX CUDA)\n" << after_project;
      break;
    case ProjectLanguage::kHip:
      // CMake's HIP language needs ROCm's hip-lang CMake package, which
      // Debian's ROCm (hipcc 5.2) does not ship: hipcc compiles every source
      // as the C++ compiler instead, each told the arch (without it hipcc
      // asks the machine's GPUs).
      out << "cmake_minimum_required(VERSION 3.16)\n"
          << "if(NOT DEFINED CMAKE_CXX_COMPILER)\n  set(CMAKE_CXX_COMPILER hipcc)\nendif()\n"
          << "project(" << project_name << " CXX)\n" << after_project
          << "set(TG_HIP_ARCHITECTURES " << t.arch
          << " CACHE STRING \"the AMD GPU the kernels are compiled for (hipcc --offload-arch)\")\n"
          << "add_compile_options(--offload-arch=${TG_HIP_ARCHITECTURES})\n"
          << "add_link_options(--offload-arch=${TG_HIP_ARCHITECTURES})\n";
      break;
  }
  out << "set(CMAKE_CXX_STANDARD 17)\nset(CMAKE_CXX_STANDARD_REQUIRED ON)\n";
  if (t.language == ProjectLanguage::kCuda)
    out << "set(CMAKE_CUDA_STANDARD 17)\nset(CMAKE_CUDA_STANDARD_REQUIRED ON)\n";
  out << "if(NOT CMAKE_BUILD_TYPE)\n  set(CMAKE_BUILD_TYPE Release)\nendif()\n";
  if (t.language == ProjectLanguage::kCpu) out << "find_package(OpenMP REQUIRED)\n";
  if (t.language == ProjectLanguage::kCuda) out << "find_package(CUDAToolkit REQUIRED)\n";
  return out.str();
}

std::string cmake_compile_options(const ProjectTarget& t, const std::string& cmake_target, bool cublaslt) {
  std::ostringstream out;
  switch (t.language) {
    case ProjectLanguage::kCpu:
      out << "# No -ffast-math: results must keep IEEE semantics (NaN, inf) to match onnxruntime.\n"
          << "# -fno-split-loops (GCC): at -O3 GCC 12 splits a tile's row loop at its bounds clamp into two\n"
          << "# copies, and only one copy's `omp simd` reduction is vectorized: a 1- or 2-row layer norm\n"
          << "# or softmax tile then sums its rows scalar, 2-5x slower than the cost model prices it.\n"
          << "# -fno-tree-loop-distribute-patterns (GCC): a packing loop's short contiguous copy stays a\n"
          << "# vector loop; as a memcpy GCC moved it in 32-byte pieces through the stack, and the 64-byte\n"
          << "# loads after them stalled on store forwarding (ResNet-50's stem conv 4% slower).\n"
          << "target_compile_options(" << cmake_target << " PRIVATE -O3 -march=" << t.arch
          << " -fno-math-errno -fno-trapping-math"
          << " $<$<CXX_COMPILER_ID:GNU>:-fno-split-loops>"
          << " $<$<CXX_COMPILER_ID:GNU>:-fno-tree-loop-distribute-patterns>)\n";
      if (t.arch == "native" && kHostIsX86) out << wide_vector_option(cmake_target);
      out << "target_link_libraries(" << cmake_target << " PRIVATE OpenMP::OpenMP_CXX)\n";
      break;
    case ProjectLanguage::kCuda:
      out << "# No fast math: results must keep IEEE semantics (NaN, inf, denormals) to match onnxruntime.\n"
          << "# -lineinfo: profilers attribute time to kernel source lines.\n"
          << "target_compile_options(" << cmake_target << " PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)\n"
          << "set_target_properties(" << cmake_target << " PROPERTIES CUDA_RUNTIME_LIBRARY Shared)\n"
          << "target_link_libraries(" << cmake_target << " PRIVATE CUDA::cudart" << (cublaslt ? " CUDA::cublasLt" : "")
          << ")\n";
      break;
    case ProjectLanguage::kHip:
      // CMake knows .hip sources only for its HIP language: they are C++ to
      // hipcc's CXX (which links the HIP runtime itself).
      out << "# No fast math: results must keep IEEE semantics (NaN, inf, denormals) to match onnxruntime.\n"
          << "get_target_property(tg_sources " << cmake_target << " SOURCES)\n"
          << "list(FILTER tg_sources INCLUDE REGEX \"\\\\.hip$\")\n"
          << "set_source_files_properties(${tg_sources} PROPERTIES LANGUAGE CXX)\n";
      break;
  }
  return out.str();
}

}  // namespace tilegraph::codegen
