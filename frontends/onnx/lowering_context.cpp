#include "frontends/onnx/lowering_context.h"

#include <cstring>

#include "compiler/ir/evaluate.h"
#include "compiler/passes/fold_constants.h"

namespace tilegraph::onnx_frontend {

LoweringContext::LoweringContext(Graph& graph, const onnx::NodeProto& node, int opset,
                                 std::vector<TensorId> inputs)
    : graph_(graph), node_(node), opset_(opset), inputs_(std::move(inputs)) {}

std::string LoweringContext::describe() const {
  const bool default_domain = node_.domain().empty() || node_.domain() == "ai.onnx";
  return str_cat("node '", node_.name().empty() ? node_.output_size() ? node_.output(0) : "?"
                                                 : node_.name(),
                 "' (", default_domain ? "" : node_.domain() + ".", node_.op_type(), ", opset ",
                 opset_, ")");
}

void LoweringContext::fail(const std::string& message) const {
  throw UserError(describe() + ": " + message);
}

TensorId LoweringContext::input(int i) const {
  if (!has_input(i)) fail(str_cat("missing required input ", i));
  return inputs_[i];
}

std::vector<int64_t> LoweringContext::const_ints(int i, const char* what) const {
  if (!is_constant(i))
    fail(str_cat("input ", i, " (", what, ", '", tensor(i).name,
                 "') must be known at compile time; it depends on a model input. Give static "
                 "input shapes with --input-shape NAME=DIMS"));
  const Tensor& t = tensor(i);
  std::vector<int64_t> values(static_cast<size_t>(num_elements(t.shape)));
  for (size_t k = 0; k < values.size(); ++k) values[k] = t.value_as_int(static_cast<int64_t>(k));
  return values;
}

std::vector<double> LoweringContext::const_floats(int i, const char* what) const {
  if (!is_constant(i))
    fail(str_cat("input ", i, " (", what, ", '", tensor(i).name,
                 "') must be a constant for this lowering"));
  const Tensor& t = tensor(i);
  std::vector<double> values(static_cast<size_t>(num_elements(t.shape)));
  for (size_t k = 0; k < values.size(); ++k) values[k] = t.value_as_double(static_cast<int64_t>(k));
  return values;
}

const onnx::AttributeProto* LoweringContext::attr(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

bool LoweringContext::has_attr(const std::string& name) const { return attr(name) != nullptr; }

int64_t LoweringContext::attr_int(const std::string& name, int64_t fallback) const {
  const auto* a = attr(name);
  return a ? a->i() : fallback;
}

float LoweringContext::attr_float(const std::string& name, float fallback) const {
  const auto* a = attr(name);
  return a ? a->f() : fallback;
}

std::string LoweringContext::attr_string(const std::string& name,
                                         const std::string& fallback) const {
  const auto* a = attr(name);
  return a ? a->s() : fallback;
}

std::vector<int64_t> LoweringContext::attr_ints(const std::string& name,
                                                std::vector<int64_t> fallback) const {
  const auto* a = attr(name);
  if (!a) return fallback;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<float> LoweringContext::attr_floats(const std::string& name) const {
  const auto* a = attr(name);
  if (!a) return {};
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

TensorId LoweringContext::emit(const std::string& kind, const Shape& shape, DType dtype,
                               std::vector<TensorId> inputs, Expr body, Reduction reduction,
                               std::vector<int64_t> reduce_extents) {
  for (int64_t d : shape)
    if (d < 0) fail(str_cat("computed a negative dimension for ", kind, " (", shape_to_string(shape), ")"));
  if (num_elements(shape) > kMaxTensorElements)
    fail(str_cat("computed an impossibly large tensor for ", kind, " (", shape_to_string(shape), ")"));
  const std::string name = graph_.unique_op_name(kind);
  Tensor out;
  out.name = name + "_out";
  out.dtype = dtype;
  out.shape = shape;
  TensorId out_id = graph_.add_tensor(std::move(out));
  Op op;
  op.name = name;
  op.source_nodes = {node_.name().empty() ? (node_.output_size() ? node_.output(0) : "") : node_.name()};
  op.inputs = std::move(inputs);
  op.output = out_id;
  op.reduction = reduction;
  op.reduce_extents = std::move(reduce_extents);
  op.body = cast(dtype, std::move(body));
  if (auto folded = fold_ ? passes::try_fold(graph_, op) : nullptr) {
    Tensor& t = graph_.tensor(out_id);
    t.kind = TensorKind::kConstant;
    t.data = std::move(folded);
    return out_id;
  }
  graph_.ops.push_back(std::move(op));
  return out_id;
}

TensorId LoweringContext::constant(const Shape& shape, DType dtype, std::vector<uint8_t> bytes) {
  Tensor t;
  t.name = graph_.unique_op_name(op_type() + "_const");
  t.dtype = dtype;
  t.shape = shape;
  t.kind = TensorKind::kConstant;
  TG_CHECK(static_cast<int64_t>(bytes.size()) == t.bytes(), "constant size mismatch");
  t.data = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  return graph_.add_tensor(std::move(t));
}

TensorId LoweringContext::constant_scalar(double value, DType dtype) {
  std::vector<uint8_t> bytes(static_cast<size_t>(dtype_size(dtype)));
  write_element(bytes.data(), dtype, 0, scalar_of(value, dtype));
  return constant({}, dtype, std::move(bytes));
}

TensorId LoweringContext::constant_ints(const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * 8);
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return constant({static_cast<int64_t>(values.size())}, DType::kI64, std::move(bytes));
}

}  // namespace tilegraph::onnx_frontend
