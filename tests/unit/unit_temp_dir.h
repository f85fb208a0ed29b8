// Scratch space for unit tests that write files (models, projects).
#pragma once
#include <filesystem>

namespace tilegraph::testing {

// <tmp>/tilegraph_unit/<TestSuite.TestName>: one folder per running test.
// ctest runs every test in its own process, several at once; tests that
// shared a folder by model name raced (one read a model.onnx another was
// still writing and found it empty). Keyed by the test's name, a folder is
// written by one process at a time and reused by the next run of that test.
std::filesystem::path unit_temp_dir();

}  // namespace tilegraph::testing
