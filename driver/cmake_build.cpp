#include "driver/cmake_build.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "driver/process.h"
#include "compiler/ir/content_hash.h"
#include "compiler/ir/error.h"

namespace tilegraph::driver {

namespace fs = std::filesystem;

namespace {

// The value of `key` (e.g. "CMAKE_TOOLCHAIN_FILE:") in a configured build
// folder's CMakeCache.txt ("" when absent); nullopt when the folder was
// never configured.
std::optional<std::string> cached_value(const fs::path& build_dir, const std::string& key) {
  std::ifstream in(build_dir / "CMakeCache.txt");
  if (!in) return std::nullopt;
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return line.substr(line.find('=') + 1);
  return std::string();
}

// Paths CMake and make take as they are.
bool cmake_safe(const std::string& path) {
  for (unsigned char c : path)
    if (!std::isalnum(c) && std::string_view("/._-+=,@~").find(static_cast<char>(c)) == std::string_view::npos)
      return false;
  return true;
}

// The private folder of build aliases; refuses one that another user could
// write into or that is a symlink.
fs::path alias_folder() {
  const char* tmp = std::getenv("TMPDIR");
  const fs::path folder = fs::path(tmp && *tmp ? tmp : "/tmp") / str_cat("tilegraph-", ::geteuid());
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST)
    throw UserError(str_cat("cannot create '", folder.string(), "': ", std::strerror(errno)));
  struct stat st;
  if (::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0)
    throw UserError(str_cat("'", folder.string(), "' is not a private folder of this user (mode 0700): tilegraph "
                            "builds projects with unusual paths through it; remove it or set TMPDIR"));
  return folder;
}

// `dir` as CMake will see it: itself, or an alias to it (see the header).
std::string cmake_path_of(const std::string& dir) {
  const std::string absolute = fs::absolute(dir).lexically_normal().string();
  if (cmake_safe(absolute)) return absolute;
  const fs::path alias = alias_folder() / hash_hex(content_hash(absolute));
  std::error_code ec;
  fs::remove(alias, ec);  // the folder is ours alone: re-point the link every time
  fs::create_directory_symlink(absolute, alias, ec);
  if (ec) throw UserError(str_cat("cannot create the build alias '", alias.string(), "': ", ec.message()));
  return alias.string();
}

}  // namespace

void build_project(const std::string& dir, int jobs, const std::string& toolchain_file,
                   const std::string& compiler_launcher) {
  const fs::path log = fs::path(dir) / "build.log";
  const std::string source = cmake_path_of(dir);
  const std::string build = source + "/build";
  const std::string toolchain = toolchain_file.empty() ? "" : source + "/" + toolchain_file;
  // CMake cannot switch compilers or move a build folder in place: start afresh.
  const fs::path build_dir = fs::path(dir) / "build";
  const std::optional<std::string> cached_toolchain = cached_value(build_dir, "CMAKE_TOOLCHAIN_FILE:");
  if (cached_toolchain && *cached_toolchain != toolchain) {
    fs::remove(build_dir / "CMakeCache.txt");
    fs::remove_all(build_dir / "CMakeFiles");
  }
  if (const std::optional<std::string> at = cached_value(build_dir, "CMAKE_CACHEFILE_DIR:"); at && *at != build)
    fs::remove_all(build_dir);

  std::vector<std::string> configure = {"cmake", "-S", source, "-B", build, "-DCMAKE_BUILD_TYPE=Release"};
  if (!toolchain.empty()) configure.push_back("-DCMAKE_TOOLCHAIN_FILE=" + toolchain);
  // Only when given: without it, CMake's own CMAKE_CXX_COMPILER_LAUNCHER
  // environment variable (ccache in scripts/test.sh) still applies.
  if (!compiler_launcher.empty()) {
    if (!cmake_safe(compiler_launcher))
      throw InternalError(str_cat("compiler launcher '", compiler_launcher, "' was not validated"));
    configure.push_back("-DCMAKE_CXX_COMPILER_LAUNCHER=" + compiler_launcher);
    configure.push_back("-DCMAKE_CUDA_COMPILER_LAUNCHER=" + compiler_launcher);
  }
  ProcessOptions to_log;
  to_log.stdout_path = to_log.stderr_path = log.string();
  bool ok = run_process(configure, to_log).ok();
  to_log.append = true;
  ok = ok && run_process({"cmake", "--build", build, "-j", std::to_string(jobs)}, to_log).ok();
  if (!ok) {
    std::ifstream in(log);
    std::string line, first_error;
    while (std::getline(in, line))
      if (first_error.empty() && line.find("error") != std::string::npos) first_error = line;
    throw UserError(str_cat("building the generated project failed (see ", log.string(), ")",
                            first_error.empty() ? "" : ": " + first_error));
  }
}

}  // namespace tilegraph::driver
