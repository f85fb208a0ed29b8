#include "tests/unit/golden_file.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace tilegraph::testing {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Where expected and actual first differ, with a few lines of context
// ("  " both, "- " golden only, "+ " generated only).
std::string first_difference(const std::string& expected, const std::string& actual) {
  const std::vector<std::string> want = lines_of(expected), got = lines_of(actual);
  size_t at = 0;
  while (at < want.size() && at < got.size() && want[at] == got[at]) ++at;
  std::ostringstream out;
  out << "first difference at line " << at + 1 << " (golden " << want.size() << " lines, generated "
      << got.size() << "):\n";
  for (size_t i = at >= 3 ? at - 3 : 0; i < at; ++i) out << "  " << want[i] << "\n";
  constexpr size_t kShown = 6;
  for (size_t i = at; i < std::min(want.size(), at + kShown); ++i) out << "- " << want[i] << "\n";
  for (size_t i = at; i < std::min(got.size(), at + kShown); ++i) out << "+ " << got[i] << "\n";
  if (at == want.size() && at == got.size()) out << "(the texts differ only in a final newline)\n";
  return out.str();
}

}  // namespace

::testing::AssertionResult matches_golden(const std::string& name, const std::string& actual) {
  const fs::path path = fs::path(TG_SOURCE_DIR) / "tests/unit/golden" / name;
  const char* update = std::getenv("TG_UPDATE_GOLDENS");
  if (update && std::string(update) == "1") {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << actual;
    return ::testing::AssertionSuccess() << "rewrote " << path;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return ::testing::AssertionFailure() << "missing golden " << path << " (TG_UPDATE_GOLDENS=1 writes it)";
  std::stringstream expected;
  expected << in.rdbuf();
  if (expected.str() == actual) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "generated text differs from golden " << path << "\n"
                                       << first_difference(expected.str(), actual)
                                       << "(an intended change? TG_UPDATE_GOLDENS=1 rewrites it; review the diff)";
}

}  // namespace tilegraph::testing
