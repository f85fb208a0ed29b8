#include "tests/unit/unit_temp_dir.h"

#include <gtest/gtest.h>

#include <string>

namespace tilegraph::testing {

std::filesystem::path unit_temp_dir() {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string name =
      test ? std::string(test->test_suite_name()) + "." + test->name() : std::string("outside_a_test");
  return std::filesystem::temp_directory_path() / "tilegraph_unit" / name;
}

}  // namespace tilegraph::testing
