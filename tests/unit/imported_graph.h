// A test model built with OnnxModelBuilder, saved under the test's scratch
// folder, imported and optimized as tune does (default options).
#pragma once
#include <string>

#include "driver/pipeline.h"
#include "frontends/onnx/import.h"
#include "tests/unit/onnx_model_builder.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph::testing {

inline Graph import_and_optimize(const OnnxModelBuilder& b, const std::string& name) {
  const std::string path = (unit_temp_dir() / name / "model.onnx").string();
  b.save(path);
  return driver::optimize_graph(driver::CompileOptions{}, onnx_frontend::import_model(path));
}

}  // namespace tilegraph::testing
