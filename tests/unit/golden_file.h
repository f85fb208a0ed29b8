// Golden files (STYLE.md §11): generated text pinned under tests/unit/golden/
// so that an unintended change to a lowering or a printer fails a test with
// the first lines that differ. After an intended change, regenerate with
//   TG_UPDATE_GOLDENS=1 build/bin/tilegraph_unit_tests --gtest_filter=...
// and review the diff of tests/unit/golden/ before committing it.
#pragma once
#include <string>

#include <gtest/gtest.h>

namespace tilegraph::testing {

// Whether `actual` equals tests/unit/golden/<name>. With TG_UPDATE_GOLDENS=1
// the file is (re)written with `actual` instead and the check passes.
::testing::AssertionResult matches_golden(const std::string& name, const std::string& actual);

}  // namespace tilegraph::testing
