// A compiler launcher (sccache, ccache) that the generated projects' C++ and
// CUDA compiles run through (`tune --compiler-launcher`), so identical
// kernels compiled on any machine sharing the launcher's cache are not
// compiled again.
#pragma once
#include <optional>
#include <string>

namespace tilegraph::driver {

// The launcher `value` names, as an absolute path ("" for ""): a program
// name found on PATH or a path to an executable file. Nothing else is
// accepted (no arguments, no shell syntax, no `;`, which CMake would read as
// a list separator): CMake runs the launcher as a command, so the value must
// be exactly one program. Throws UserError naming --compiler-launcher.
std::string resolve_compiler_launcher(const std::string& value);

// The launcher's cache counters, where it reports them (sccache: its
// `--show-stats --stats-format json`); nullopt for other launchers or when
// the report cannot be read. The counters are the launcher server's since it
// started, so a build's share is the difference of two readings (and
// includes other builds using the same server at the same time).
struct LauncherCounts {
  long long hits = 0;
  long long misses = 0;
};
std::optional<LauncherCounts> read_launcher_counts(const std::string& launcher);

}  // namespace tilegraph::driver
