// Building a generated CMake project (the target's project, the GPU
// emulation, the top-k profiling harness).
#pragma once
#include <string>

namespace tilegraph::driver {

// Configures and builds dir with CMake into dir/build (Release, -j jobs);
// the full log goes to dir/build.log. A non-empty `toolchain` (a CMake
// toolchain file) cross-compiles; a build folder configured with another
// toolchain (or none) is configured afresh, since CMake cannot switch
// compilers in place. Throws UserError naming the log and its first error.
void build_project(const std::string& dir, int jobs, const std::string& toolchain = "");

}  // namespace tilegraph::driver
