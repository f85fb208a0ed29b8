#include "tests/unit/onnx_model_builder.h"

#include <filesystem>
#include <cstring>
#include <fstream>
#include <random>

#include "frontends/onnx/import.h"
#include "tests/unit/unit_temp_dir.h"

namespace tilegraph::testing {

std::vector<uint8_t> random_float_bytes(int64_t n, unsigned seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * 4);
  for (int64_t i = 0; i < n; ++i) {
    const float v = dist(rng);
    std::memcpy(bytes.data() + i * 4, &v, 4);
  }
  return bytes;
}

OnnxModelBuilder::OnnxModelBuilder(int opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("tilegraph-tests");
  auto* op = model_.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  model_.mutable_graph()->set_name("test_graph");
}

OnnxModelBuilder& OnnxModelBuilder::input(const std::string& name, int elem_type,
                                          std::vector<int64_t> dims) {
  auto* in = model_.mutable_graph()->add_input();
  in->set_name(name);
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
    else dim->set_dim_param("N");
  }
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::output(const std::string& name, int elem_type) {
  auto* out = model_.mutable_graph()->add_output();
  out->set_name(name);
  out->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::initializer_f(const std::string& name, std::vector<int64_t> dims,
                                                  std::vector<float> values) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::initializer_i64(const std::string& name,
                                                    std::vector<int64_t> dims,
                                                    std::vector<int64_t> values) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (int64_t v : values) t->add_int64_data(v);
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::initializer_8bit(const std::string& name, int elem_type,
                                                     std::vector<int64_t> dims, std::vector<int> values) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(elem_type);
  for (int64_t d : dims) t->add_dims(d);
  for (int v : values) t->add_int32_data(v);  // ONNX stores 8-bit values in int32_data
  return *this;
}

onnx::NodeProto& OnnxModelBuilder::node(const std::string& op_type, std::vector<std::string> inputs,
                                        std::vector<std::string> outputs, const std::string& name) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op_type);
  n->set_name(name.empty() ? op_type + "_" + std::to_string(model_.graph().node_size()) : name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return *n;
}

void OnnxModelBuilder::attr_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void OnnxModelBuilder::attr_ints(onnx::NodeProto& n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void OnnxModelBuilder::attr_float(onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void OnnxModelBuilder::attr_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

void OnnxModelBuilder::save(const std::string& path) const {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  model_.SerializeToOstream(&out);
}

Graph OnnxModelBuilder::import_as(const std::string& name) const {
  const std::string path = (testing::unit_temp_dir() / name / "model.onnx").string();
  save(path);
  return onnx_frontend::import_model(path);
}

}  // namespace tilegraph::testing
