#include "compiler/driver/cmake_build.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "compiler/ir/error.h"

namespace tilegraph::driver {

namespace fs = std::filesystem;

namespace {

// The toolchain file a configured build folder was set up with ("" for none),
// from its CMakeCache.txt; nullopt when the folder was never configured.
std::optional<std::string> configured_toolchain(const fs::path& build_dir) {
  std::ifstream in(build_dir / "CMakeCache.txt");
  if (!in) return std::nullopt;
  std::string line;
  const std::string key = "CMAKE_TOOLCHAIN_FILE:";
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return line.substr(line.find('=') + 1);
  return std::string();
}

}  // namespace

void build_project(const std::string& dir, int jobs, const std::string& toolchain) {
  const fs::path log = fs::path(dir) / "build.log";
  const fs::path build_dir = fs::path(dir) / "build";
  if (const std::optional<std::string> cached = configured_toolchain(build_dir); cached && *cached != toolchain) {
    fs::remove(build_dir / "CMakeCache.txt");
    fs::remove_all(build_dir / "CMakeFiles");
  }
  const std::string quoted_dir = "'" + dir + "'";
  const std::string toolchain_flag = toolchain.empty() ? "" : " -DCMAKE_TOOLCHAIN_FILE='" + toolchain + "'";
  const std::string configure = "cmake -S " + quoted_dir + " -B " + quoted_dir + "/build -DCMAKE_BUILD_TYPE=Release" +
                                toolchain_flag + " > '" + log.string() + "' 2>&1";
  const std::string build = "cmake --build " + quoted_dir + "/build -j " + std::to_string(jobs) +
                            " >> '" + log.string() + "' 2>&1";
  if (std::system(configure.c_str()) != 0 || std::system(build.c_str()) != 0) {
    std::ifstream in(log);
    std::string line, first_error;
    while (std::getline(in, line))
      if (first_error.empty() && line.find("error") != std::string::npos) first_error = line;
    throw UserError(str_cat("building the generated project failed (see ", log.string(), ")",
                            first_error.empty() ? "" : ": " + first_error));
  }
}


}  // namespace tilegraph::driver
