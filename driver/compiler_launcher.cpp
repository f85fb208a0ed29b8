#include "driver/compiler_launcher.h"

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "compiler/ir/error.h"
#include "driver/process.h"

namespace tilegraph::driver {

namespace fs = std::filesystem;

namespace {

bool plain_name_char(unsigned char c) { return std::isalnum(c) || std::string_view("._+-").find(c) != std::string_view::npos; }

// The sum of a sccache counter group ({"counts": {"C/C++": 3, "CUDA": 1}, ...}).
long long sum_counts(const nlohmann::json& group) {
  long long total = 0;
  if (!group.is_object() || !group.contains("counts") || !group["counts"].is_object()) return 0;
  for (const auto& [language, count] : group["counts"].items())
    if (count.is_number_integer()) total += count.get<long long>();
  return total;
}

}  // namespace

std::string resolve_compiler_launcher(const std::string& value) {
  if (value.empty()) return "";
  const std::string flag = "--compiler-launcher '" + value + "'";
  for (unsigned char c : value)
    if (!plain_name_char(c) && c != '/')
      throw UserError(flag + ": give one program, by name or path (letters, digits, / . _ + -), without arguments "
                             "or shell syntax");
  std::string path = value;
  if (value.find('/') == std::string::npos) {
    path = find_on_path(value);
    if (path.empty()) throw UserError(flag + ": no such program on PATH");
  }
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || ::access(path.c_str(), X_OK) != 0)
    throw UserError(flag + ": not an executable file");
  path = fs::absolute(path).lexically_normal().string();
  // CMake stores the launcher in its line-based cache and runs it from
  // generated build files: the path itself must be plain too.
  for (unsigned char c : path)
    if (!plain_name_char(c) && c != '/')
      throw UserError(flag + ": its path '" + path + "' holds characters CMake cannot run it by; give a plain path");
  return path;
}

std::optional<LauncherCounts> read_launcher_counts(const std::string& launcher) {
  if (launcher.empty() || fs::path(launcher).filename() != "sccache") return std::nullopt;
  ProcessOptions capture;
  capture.capture = true;
  capture.timeout_seconds = 60;  // the first call starts sccache's server
  ProcessResult r;
  try {
    r = run_process({launcher, "--show-stats", "--stats-format", "json"}, capture);
  } catch (const UserError&) {
    return std::nullopt;
  }
  if (!r.ok()) return std::nullopt;
  // The report is the last line; a starting server may print a line before it.
  const size_t brace = r.output.find('{');
  if (brace == std::string::npos) return std::nullopt;
  const nlohmann::json report = nlohmann::json::parse(r.output.substr(brace), nullptr, /*allow_exceptions=*/false);
  if (!report.is_object() || !report.contains("stats")) return std::nullopt;
  return LauncherCounts{sum_counts(report["stats"].value("cache_hits", nlohmann::json())),
                        sum_counts(report["stats"].value("cache_misses", nlohmann::json()))};
}

}  // namespace tilegraph::driver
