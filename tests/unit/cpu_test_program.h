// Builds and runs a small test program around printed CPU kernels (a main()
// that fills inputs and prints outputs), for tests that check what a
// rewritten kernel computes, not only how it reads.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace tilegraph::testing {

// Writes `source` to dir/main.cpp, compiles it with the host g++ (-O2
// -fopenmp, then `flags`: an ISA such as -mavx512f) and runs it, both
// without a shell. On success *printed holds the program's stdout; on
// failure the result names the step and its output.
::testing::AssertionResult run_cpu_test_program(const std::filesystem::path& dir, const std::string& source,
                                                std::string* printed, const std::vector<std::string>& flags = {});

}  // namespace tilegraph::testing
