#include "tests/unit/cpu_test_program.h"

#include <fstream>

#include "driver/process.h"

namespace tilegraph::testing {

::testing::AssertionResult run_cpu_test_program(const std::filesystem::path& dir, const std::string& source,
                                                std::string* printed, const std::vector<std::string>& flags) {
  std::filesystem::create_directories(dir);
  const std::string main_cpp = (dir / "main.cpp").string(), exe = (dir / "main").string();
  std::ofstream(main_cpp) << source;
  driver::ProcessOptions options;
  options.capture = true;
  options.timeout_seconds = 300;
  std::vector<std::string> command = {"g++", "-std=c++17", "-O2", "-fopenmp", "-w"};
  command.insert(command.end(), flags.begin(), flags.end());
  command.insert(command.end(), {"-o", exe, main_cpp});
  const driver::ProcessResult built = driver::run_process(command, options);
  if (!built.ok()) return ::testing::AssertionFailure() << "g++: " << built.describe() << "\n" << built.output << source;
  options.stderr_path = (dir / "stderr.txt").string();  // only stdout is captured
  const driver::ProcessResult ran = driver::run_process({exe}, options);
  if (!ran.ok()) return ::testing::AssertionFailure() << exe << ": " << ran.describe();
  *printed = ran.output;
  return ::testing::AssertionSuccess();
}

}  // namespace tilegraph::testing
