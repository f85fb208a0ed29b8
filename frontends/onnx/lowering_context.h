// LoweringContext: what one ONNX node's lowering sees — its inputs (as graph
// tensors, constant where known), its attributes, and emit(), which appends a
// compute definition to the graph or, when every input is constant, folds it
// into a new constant right away (so shape subgraphs vanish during import).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "compiler/ir/error.h"
#include "compiler/ir/graph.h"

namespace tilegraph::onnx_frontend {

class LoweringContext {
 public:
  LoweringContext(Graph& graph, const onnx::NodeProto& node, int opset,
                  std::vector<TensorId> inputs);

  Graph& graph() { return graph_; }
  const onnx::NodeProto& node() const { return node_; }
  int opset() const { return opset_; }  // of the node's domain
  const std::string& op_type() const { return node_.op_type(); }

  // ---- inputs (an optional input left empty in the model is "absent")
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs_[i] >= 0; }
  TensorId input(int i) const;
  // A reference into the graph: emit() may invalidate it (copy what you keep).
  const Tensor& tensor(int i) const { return graph_.tensor(input(i)); }
  Shape shape(int i) const { return tensor(i).shape; }
  int rank(int i) const { return static_cast<int>(shape(i).size()); }
  DType dtype(int i) const { return tensor(i).dtype; }
  bool is_constant(int i) const { return has_input(i) && tensor(i).data != nullptr; }
  // Values of a constant input; a user error naming the node if it is not
  // constant (a data-dependent shape the compiler cannot make static).
  std::vector<int64_t> const_ints(int i, const char* what) const;
  std::vector<double> const_floats(int i, const char* what) const;

  // ---- attributes
  bool has_attr(const std::string& name) const;
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(const std::string& name) const;
  const onnx::AttributeProto* attr(const std::string& name) const;

  // ---- building
  // Appends `out = body` (or a reduction) reading `inputs`, named after kind;
  // folds it when all inputs are constant. Returns the output tensor.
  TensorId emit(const std::string& kind, const Shape& shape, DType dtype,
                std::vector<TensorId> inputs, Expr body, Reduction reduction = Reduction::kNone,
                std::vector<int64_t> reduce_extents = {});
  // Emitted ops of constant inputs fold into constants unless turned off
  // (a dequantized weight stays an op for compiler/passes/quantize_matmul,
  // which folds what it does not use).
  void set_folding(bool fold) { fold_ = fold; }
  TensorId constant(const Shape& shape, DType dtype, std::vector<uint8_t> bytes);
  TensorId constant_scalar(double value, DType dtype);
  TensorId constant_ints(const std::vector<int64_t>& values);  // 1-D int64

  // A user error: "node 'NAME' (OpType, opset N): message" (contrib ops:
  // "com.microsoft.OpType").
  [[noreturn]] void fail(const std::string& message) const;
  std::string describe() const;

 private:
  Graph& graph_;
  const onnx::NodeProto& node_;
  int opset_;
  std::vector<TensorId> inputs_;
  bool fold_ = true;
};

using LowerFn = std::function<std::vector<TensorId>(LoweringContext&)>;

}  // namespace tilegraph::onnx_frontend
