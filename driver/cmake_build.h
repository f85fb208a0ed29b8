// Building a generated CMake project (the target's project, the GPU
// emulation, the top-k profiling harness).
#pragma once
#include <string>

namespace tilegraph::driver {

// Configures and builds dir with CMake into dir/build (Release, -j jobs);
// the full log goes to dir/build.log. A non-empty `toolchain_file` (a CMake
// toolchain file inside dir) cross-compiles; a build folder configured with
// another toolchain (or none), or in another folder, is configured afresh,
// since CMake can switch neither in place. Throws UserError naming the log
// and its first error.
//
// cmake runs without a shell (process.h). CMake itself cannot build in a
// folder whose path holds a newline, a quote, `$` and the like (its cache is
// line-based, its generated Makefiles are shell), so such a folder is built
// through an alias: a symlink with a plain name in a private per-user folder
// ($TMPDIR/tilegraph-<uid>, mode 0700), named by a hash of the real path so
// the next build finds the same CMake cache.
//
// A non-empty `compiler_launcher` (an absolute path, from
// resolve_compiler_launcher) becomes CMAKE_CXX_COMPILER_LAUNCHER and
// CMAKE_CUDA_COMPILER_LAUNCHER, so every compile runs through it (sccache).
void build_project(const std::string& dir, int jobs, const std::string& toolchain_file = "",
                   const std::string& compiler_launcher = "");

}  // namespace tilegraph::driver
