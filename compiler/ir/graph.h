// Graph: tensors and the ops that compute them — tilegraph's tensor-expression IR.
//
// An Op is a compute definition (TVM te.compute style):
//   out[v0..v{r-1}] = combine_{reduce axes} body(v0..v{r+q-1})
// where r = rank of the output (spatial axes, Var ids 0..r-1) and q =
// reduce_extents.size() (reduce axes, Var ids r..r+q-1). With Reduction::kNone
// there are no reduce axes and out = body. Otherwise the value starts at the
// combiner's identity (0 for Sum, 1 for Prod, the dtype's lowest/highest value
// for Max/Min — the "init") and every point of the reduce domain is combined
// into it in an unspecified order (floating-point sums may be reassociated).
// A reduction's body has the output's dtype (accumulation happens in that dtype).
//
// All shapes are static. Ops are kept in a topological order: an op reads only
// graph inputs, constants, and outputs of earlier ops.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/dtype.h"
#include "compiler/ir/expr.h"

namespace tilegraph {

using Shape = std::vector<int64_t>;
using TensorId = int;

// Saturates at INT64_MAX instead of overflowing (shapes come from untrusted models).
int64_t num_elements(const Shape& s);
// The row-major coordinates of element `flat` of a tensor of `shape`, and
// the position of `coords` there (one per axis, each within its extent).
std::vector<int64_t> coords_of(int64_t flat, const Shape& shape);
int64_t flat_index_of(const std::vector<int64_t>& coords, const Shape& shape);
// Larger tensors are rejected as user errors (2^40 elements: beyond any real model).
constexpr int64_t kMaxTensorElements = int64_t{1} << 40;
std::string shape_to_string(const Shape& s);  // "1x3x224x224"; "scalar" for rank 0

enum class TensorKind { kInput, kConstant, kIntermediate };

struct Tensor {
  std::string name;  // the ONNX value name (unique in a graph)
  DType dtype = DType::kF32;
  Shape shape;
  TensorKind kind = TensorKind::kIntermediate;
  // Constants only: num_elements(shape) * dtype_size(dtype) bytes, little-endian.
  std::shared_ptr<const std::vector<uint8_t>> data;

  int64_t bytes() const { return num_elements(shape) * dtype_size(dtype); }
  // Element i of a constant, converted (constants only).
  double value_as_double(int64_t i) const;
  int64_t value_as_int(int64_t i) const;
};

#define TG_REDUCTIONS(X) X(None) X(Sum) X(Prod) X(Max) X(Min)

enum class Reduction {
#define TG_ENUM(name) k##name,
  TG_REDUCTIONS(TG_ENUM)
#undef TG_ENUM
};
const char* reduction_name(Reduction r);
// The combiner's identity in dtype t (0, 1, lowest, highest).
Expr reduction_init(Reduction r, DType t);
// The combiner: the binary op that folds one more value into the
// accumulator (Add, Mul, Max, Min); r must not be kNone.
BinaryOp reduction_combine_op(Reduction r);
// acc combined with value: binary(reduction_combine_op(r), acc, value).
Expr reduction_combine(Reduction r, Expr acc, Expr value);

struct Op {
  std::string name;                       // unique, a C identifier (kernel name)
  std::vector<std::string> source_nodes;  // ONNX nodes this op implements (provenance)
  std::vector<TensorId> inputs;           // Load(slot) reads inputs[slot]
  TensorId output = -1;
  Reduction reduction = Reduction::kNone;
  std::vector<int64_t> reduce_extents;
  Expr body;
};

// Drops input slots that op.body never loads, renumbering its loads.
// Returns whether anything changed.
bool drop_unused_inputs(Op& op);

// Where a CheckIndex (expr.h) validates an index read at run time: the ONNX
// node, for the error "Gather node 'g': index 7 out of range [-5, 5) for axis 0".
struct IndexCheckSite {
  std::string op_type;  // the ONNX op type (Gather, ScatterND...)
  std::string node;     // the ONNX node name (untrusted text: escape it in generated code)
  int axis = 0;         // the data axis the index selects along
  int64_t dim = 0;      // that axis' size: valid indices are [-dim, dim)
};

// The one-line error of site s seeing `index`.
std::string index_check_message(const IndexCheckSite& s, int64_t index);

struct Graph {
  std::string name;
  std::vector<Tensor> tensors;
  std::vector<Op> ops;
  std::vector<TensorId> inputs;   // graph inputs in ONNX order
  std::vector<TensorId> outputs;  // graph outputs in ONNX order
  // The model's names for outputs (parallel to `outputs`). A tensor can be
  // an output under another name (ONNX Identity to an output); codegen
  // presents outputs by these names.
  std::vector<std::string> output_names;
  // CheckIndex sites, by the id a CheckIndex node carries.
  std::vector<IndexCheckSite> index_checks;

  TensorId add_tensor(Tensor t);
  const Tensor& tensor(TensorId id) const { return tensors.at(static_cast<size_t>(id)); }
  Tensor& tensor(TensorId id) { return tensors.at(static_cast<size_t>(id)); }
  // Index into ops of the op producing id, or -1 for inputs and constants.
  int producer(TensorId id) const;
  // A fresh name "<base>_<n>", a valid C identifier; n counts up per graph,
  // so names never repeat (for ops, and for tensors that need one).
  std::string unique_op_name(const std::string& base);
  int64_t next_name_id = 0;
};

// Checks the invariants above (topological order, Var ids in range, Load slots
// and index counts match input ranks, dtypes consistent). Throws InternalError.
void verify(const Graph& g);

// A readable dump, one op per line (for --dump-after and tests).
std::string to_string(const Graph& g);

}  // namespace tilegraph
