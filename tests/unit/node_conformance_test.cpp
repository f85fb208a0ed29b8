// ONNX backend node tests (Debian's libonnx-testdata) run through the frontend
// and the reference interpreter. Catches lowering bugs in-process, in seconds;
// tests/conformance/run_node_tests.py runs the same tests through the
// generated code (`tilegraph tune` + `run`).
//
// Env: TG_NODE_FILTER=substring limits the tests; TG_NODE_VERBOSE=1 prints each.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <algorithm>
#include <set>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"
#include "frontends/onnx/import.h"
#include "frontends/onnx/op_table.h"
#include "frontends/onnx/tensor_proto.h"

namespace tilegraph {
namespace {

namespace fs = std::filesystem;
const char* kNodeTestDir = "/usr/share/libonnx-testdata/data/node";

onnx::TensorProto read_tensor(const fs::path& p) {
  onnx::TensorProto t;
  std::ifstream in(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!t.ParseFromString(bytes)) throw std::runtime_error("cannot parse " + p.string());
  return t;
}

// The skip list: "test_name<whitespace>reason" per line, # comments.
std::set<std::string> read_skip_list() {
  std::set<std::string> names;
  std::ifstream in(fs::path(TG_SOURCE_DIR) / "tests/conformance/skip_list.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    names.insert(line.substr(0, line.find_first_of(" \t")));
  }
  return names;
}

// Does the model use only ops we lower? (Tests of other ops are not ours to pass.)
bool uses_only_supported_ops(const fs::path& model_path, std::string* op_types) {
  onnx::ModelProto m;
  std::ifstream in(model_path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!m.ParseFromString(bytes)) return false;
  int opset = 1;
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
  bool ok = true;
  for (const auto& n : m.graph().node()) {
    *op_types += n.op_type() + " ";
    ok &= (n.domain().empty() || n.domain() == "ai.onnx") &&
          onnx_frontend::find_lowering(n.op_type(), opset) != nullptr;
  }
  return ok;
}

// The model's graph inputs (initializers excluded), in order.
std::vector<std::string> graph_input_names(const fs::path& model_path) {
  onnx::ModelProto m;
  std::ifstream in(model_path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  m.ParseFromString(bytes);
  std::set<std::string> inits;
  for (const auto& i : m.graph().initializer()) inits.insert(i.name());
  std::vector<std::string> names;
  for (const auto& i : m.graph().input())
    if (!inits.count(i.name())) names.push_back(i.name());
  return names;
}

// Imports the test's model; when shapes depend on graph inputs (Reshape's
// shape, Resize's scales...), retries with them frozen to the test's values
// like `tune --freeze-input`: every input but the first, then all of them.
Graph import_freezing_if_needed(const fs::path& model_path, const fs::path& data) {
  const std::vector<std::string> names = graph_input_names(model_path);
  std::string first_error;
  for (size_t frozen_from : {names.size(), size_t{1}, size_t{0}}) {
    onnx_frontend::ImportOptions options;
    for (size_t k = frozen_from; k < names.size(); ++k)
      options.frozen_inputs[names[k]] = onnx_frontend::tensor_from_proto(
          read_tensor(data / ("input_" + std::to_string(k) + ".pb")), "", "input");
    try {
      return onnx_frontend::import_model(model_path.string(), options);
    } catch (const UserError& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  throw UserError(first_error);
}

// Compares, ONNX backend-test style: |a-b| <= atol + rtol*|b|, NaNs equal.
std::string compare(const Tensor& expected, const std::vector<uint8_t>& got, DType got_dtype,
                    const Shape& got_shape) {
  if (got_shape != expected.shape)
    return str_cat("shape ", shape_to_string(got_shape), " != expected ", shape_to_string(expected.shape));
  if (got_dtype != expected.dtype)
    return str_cat("dtype ", dtype_name(got_dtype), " != expected ", dtype_name(expected.dtype));
  const int64_t n = num_elements(expected.shape);
  for (int64_t i = 0; i < n; ++i) {
    const double e = expected.value_as_double(i);
    const double g = scalar_as_double(read_element(got.data(), got_dtype, i), got_dtype);
    if (std::isnan(e) && std::isnan(g)) continue;
    if (std::isinf(e) && e == g) continue;
    const double tol = is_float(got_dtype) ? 1e-4 + 1e-3 * std::fabs(e) : 0;
    if (!(std::fabs(e - g) <= tol)) return str_cat("element ", i, ": got ", g, ", expected ", e);
  }
  return "";
}

TEST(NodeConformance, InterpreterMatchesOnnxBackendNodeTests) {
  if (!fs::exists(kNodeTestDir)) GTEST_SKIP() << "libonnx-testdata is not installed";
  const char* filter = std::getenv("TG_NODE_FILTER");
  const bool verbose = std::getenv("TG_NODE_VERBOSE") != nullptr;
  const std::set<std::string> skip = read_skip_list();
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(kNodeTestDir)) dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  int passed = 0, skipped = 0;
  std::vector<std::string> failures;
  for (const fs::path& dir : dirs) {
    const std::string name = dir.filename().string();
    if (filter && name.find(filter) == std::string::npos) continue;
    std::string op_types;
    if (!uses_only_supported_ops(dir / "model.onnx", &op_types)) continue;
    if (skip.count(name)) { ++skipped; continue; }
    std::string error;
    try {
      const fs::path data = dir / "test_data_set_0";
      Graph g = import_freezing_if_needed(dir / "model.onnx", data);
      verify(g);
      // Graph inputs left after freezing, matched to their test-data files by name.
      std::vector<std::vector<uint8_t>> inputs;
      const std::vector<std::string> names = graph_input_names(dir / "model.onnx");
      for (TensorId id : g.inputs) {
        const size_t k = static_cast<size_t>(
            std::find(names.begin(), names.end(), g.tensor(id).name) - names.begin());
        Tensor t = onnx_frontend::tensor_from_proto(read_tensor(data / ("input_" + std::to_string(k) + ".pb")), "", "input");
        inputs.push_back(*t.data);
      }
      auto outputs = evaluate_graph(g, inputs);
      for (size_t o = 0; o < outputs.size() && error.empty(); ++o) {
        Tensor expected = onnx_frontend::tensor_from_proto(read_tensor(data / ("output_" + std::to_string(o) + ".pb")), "", "output");
        const Tensor& out = g.tensor(g.outputs[o]);
        error = compare(expected, outputs[o], out.dtype, out.shape);
        if (!error.empty()) error = str_cat("output ", o, ": ", error);
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (error.empty()) ++passed;
    else failures.push_back(name + " [" + op_types + "]: " + error);
    if (verbose) std::cout << name << ": " << (error.empty() ? "ok" : error) << "\n";
  }
  for (const std::string& f : failures) ADD_FAILURE() << f;
  std::cout << "node conformance (interpreter): " << passed << " passed, " << failures.size()
            << " failed, " << skipped << " skipped\n";
}

}  // namespace
}  // namespace tilegraph
