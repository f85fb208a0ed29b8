#include "tests/unit/lowering_test_util.h"
#include "tests/unit/unit_temp_dir.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"
#include "frontends/onnx/import.h"

namespace tilegraph::testing {

std::string test_model_path(const std::string& suite, const std::string& name) {
  return (testing::unit_temp_dir() / suite / name / "model.onnx").string();
}

std::map<std::string, std::string> read_tree(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    files[e.path().filename().string()] =
        std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  return files;
}

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<uint8_t> bytes_of_i64(const std::vector<int64_t>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(int64_t));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

LoweredModel run_lowered(const OnnxModelBuilder& b, const std::string& path,
                         const std::vector<std::vector<uint8_t>>& inputs) {
  b.save(path);
  LoweredModel r{onnx_frontend::import_model(path), {}};
  verify(r.graph);
  const auto raw = evaluate_graph(r.graph, inputs);
  for (size_t o = 0; o < raw.size(); ++o) {
    const Tensor& t = r.graph.tensor(r.graph.outputs[o]);
    std::vector<double> values;
    for (int64_t i = 0; i < num_elements(t.shape); ++i)
      values.push_back(scalar_as_double(read_element(raw[o].data(), t.dtype, i), t.dtype));
    r.outputs.push_back(values);
  }
  return r;
}

std::string import_error_of(const OnnxModelBuilder& b, const std::string& path) {
  b.save(path);
  try {
    onnx_frontend::import_model(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace tilegraph::testing
