// Shared by the lowering tests: save a built model, import it, run it with the
// reference interpreter, and read outputs back as doubles.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "tests/unit/onnx_model_builder.h"

namespace tilegraph::testing {

// <tmp>/tilegraph_unit/<suite>/<name>/model.onnx
std::string test_model_path(const std::string& suite, const std::string& name);

std::vector<uint8_t> bytes_of(const std::vector<float>& v);
std::vector<uint8_t> bytes_of_i64(const std::vector<int64_t>& v);

struct LoweredModel {
  Graph graph;
  std::vector<std::vector<double>> outputs;  // every output, converted to double
  Shape shape(size_t o) const { return graph.tensor(graph.outputs[o]).shape; }
};

// Saves b to `path`, imports, verifies and interprets it; inputs are raw
// buffers in graph-input order.
LoweredModel run_lowered(const OnnxModelBuilder& b, const std::string& path,
                         const std::vector<std::vector<uint8_t>>& inputs);

// Every regular file directly in dir: name -> contents (determinism checks).
std::map<std::string, std::string> read_tree(const std::string& dir);

// Saves b to `path`, imports it and returns the UserError's message ("" if none).
std::string import_error_of(const OnnxModelBuilder& b, const std::string& path);

}  // namespace tilegraph::testing
