// Builds small ONNX models in memory for tests (frontend, passes, end to end).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "compiler/ir/graph.h"

namespace tilegraph::testing {

// n float32 values drawn uniformly from [lo, hi) by std::mt19937(seed), as the
// raw little-endian bytes an input tensor is fed with.
std::vector<uint8_t> random_float_bytes(int64_t n, unsigned seed, float lo, float hi);

class OnnxModelBuilder {
 public:
  explicit OnnxModelBuilder(int opset = 17);
  // Graph input / output declarations; dims < 0 are dynamic ("N").
  OnnxModelBuilder& input(const std::string& name, int elem_type, std::vector<int64_t> dims);
  OnnxModelBuilder& output(const std::string& name, int elem_type = 1);
  OnnxModelBuilder& initializer_f(const std::string& name, std::vector<int64_t> dims,
                                  std::vector<float> values);
  OnnxModelBuilder& initializer_i64(const std::string& name, std::vector<int64_t> dims,
                                    std::vector<int64_t> values);
  // An 8-bit integer initializer (elem_type 2 = uint8, 3 = int8), values in range.
  OnnxModelBuilder& initializer_8bit(const std::string& name, int elem_type, std::vector<int64_t> dims,
                                     std::vector<int> values);
  // Adds a node; returns it so attributes can be set with the helpers below.
  onnx::NodeProto& node(const std::string& op_type, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string& name = "");
  static void attr_int(onnx::NodeProto& n, const std::string& name, int64_t v);
  static void attr_ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v);
  static void attr_float(onnx::NodeProto& n, const std::string& name, float v);
  static void attr_string(onnx::NodeProto& n, const std::string& name, const std::string& v);

  const onnx::ModelProto& model() const { return model_; }
  // Writes the model to path (creating parent folders).
  void save(const std::string& path) const;
  // Saves the model as <temp>/tilegraph_unit/<name>/model.onnx and imports
  // it with the ONNX frontend (what most pass and scheduler tests start from).
  Graph import_as(const std::string& name) const;

 private:
  onnx::ModelProto model_;
};

}  // namespace tilegraph::testing
