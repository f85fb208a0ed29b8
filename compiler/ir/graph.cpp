#include "compiler/ir/graph.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <sstream>

#include "compiler/ir/error.h"
#include "compiler/ir/evaluate.h"

namespace tilegraph {

int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  return n;
}

std::vector<int64_t> coords_of(int64_t flat, const Shape& shape) {
  std::vector<int64_t> coords(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    coords[d] = flat % shape[d];
    flat /= shape[d];
  }
  return coords;
}

int64_t flat_index_of(const std::vector<int64_t>& coords, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + coords[d];
  return flat;
}

std::string shape_to_string(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

double Tensor::value_as_double(int64_t i) const {
  TG_CHECK(data, "tensor ", name, " is not a constant");
  return scalar_as_double(read_element(data->data(), dtype, i), dtype);
}

int64_t Tensor::value_as_int(int64_t i) const {
  TG_CHECK(data, "tensor ", name, " is not a constant");
  Scalar s = read_element(data->data(), dtype, i);
  return is_float(dtype) ? static_cast<int64_t>(s.f) : s.i;
}

const char* reduction_name(Reduction r) {
  switch (r) {
#define TG_CASE(name) case Reduction::k##name: return #name;
    TG_REDUCTIONS(TG_CASE)
#undef TG_CASE
  }
  return "?";
}

Expr reduction_init(Reduction r, DType t) {
  const bool f = is_float(t);
  switch (r) {
    case Reduction::kSum: return const_of(0, t);
    case Reduction::kProd: return const_of(1, t);
    case Reduction::kMax:
      if (f) return float_imm(-std::numeric_limits<double>::infinity(), t);
      if (t == DType::kBool) return int_imm(0, t);
      if (t == DType::kI64) return int_imm(std::numeric_limits<int64_t>::min(), t);
      return int_imm(is_signed_int(t) ? -(int64_t{1} << (dtype_size(t) * 8 - 1)) : 0, t);
    case Reduction::kMin:
      if (f) return float_imm(std::numeric_limits<double>::infinity(), t);
      if (t == DType::kBool) return int_imm(1, t);
      if (t == DType::kI64 || t == DType::kU64) return int_imm(std::numeric_limits<int64_t>::max(), t);
      return int_imm(is_signed_int(t) ? (int64_t{1} << (dtype_size(t) * 8 - 1)) - 1
                                      : (int64_t{1} << (dtype_size(t) * 8)) - 1,
                     t);
    case Reduction::kNone: break;
  }
  TG_CHECK(false, "no init for reduction None");
}

BinaryOp reduction_combine_op(Reduction r) {
  switch (r) {
    case Reduction::kSum: return BinaryOp::kAdd;
    case Reduction::kProd: return BinaryOp::kMul;
    case Reduction::kMax: return BinaryOp::kMax;
    case Reduction::kMin: return BinaryOp::kMin;
    case Reduction::kNone: break;
  }
  TG_CHECK(false, "not a reduction");
}

Expr reduction_combine(Reduction r, Expr acc, Expr value) {
  return binary(reduction_combine_op(r), std::move(acc), std::move(value));
}

bool drop_unused_inputs(Op& op) {
  std::vector<bool> used(op.inputs.size(), false);
  visit(op.body, [&](const Expr& n) {
    if (n->kind == ExprKind::kLoad) used[n->int_value] = true;
  });
  std::vector<int> new_slot(op.inputs.size(), -1);
  std::vector<TensorId> inputs;
  for (size_t s = 0; s < op.inputs.size(); ++s) {
    if (!used[s]) continue;
    new_slot[s] = static_cast<int>(inputs.size());
    inputs.push_back(op.inputs[s]);
  }
  if (inputs.size() == op.inputs.size()) return false;
  op.inputs = std::move(inputs);
  op.body = rewrite(op.body, [&](const Expr& n) -> Expr {
    if (n->kind != ExprKind::kLoad) return nullptr;
    return load(new_slot[n->int_value], n->dtype, n->args);
  });
  return true;
}

TensorId Graph::add_tensor(Tensor t) {
  tensors.push_back(std::move(t));
  return static_cast<TensorId>(tensors.size() - 1);
}

int Graph::producer(TensorId id) const {
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].output == id) return static_cast<int>(i);
  return -1;
}

std::string Graph::unique_op_name(const std::string& base) {
  std::string clean;
  for (char c : base) clean += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
  if (clean.empty() || std::isdigit(static_cast<unsigned char>(clean[0]))) clean = "op_" + clean;
  return clean + "_" + std::to_string(next_name_id++);
}

namespace {

void verify_expr(const Graph& g, const Op& op, const Expr& e, int num_vars) {
  visit(e, [&](const Expr& n) {
    switch (n->kind) {
      case ExprKind::kVar:
        TG_CHECK(n->int_value >= 0 && n->int_value < num_vars, "op ", op.name, ": var v",
                 n->int_value, " out of range");
        break;
      case ExprKind::kLoad: {
        TG_CHECK(n->int_value >= 0 && n->int_value < static_cast<int64_t>(op.inputs.size()),
                 "op ", op.name, ": load slot ", n->int_value, " out of range");
        const Tensor& in = g.tensor(op.inputs[n->int_value]);
        TG_CHECK(n->args.size() == in.shape.size(), "op ", op.name, ": load of ", in.name,
                 " with ", n->args.size(), " indices, rank ", in.shape.size());
        TG_CHECK(n->dtype == in.dtype, "op ", op.name, ": load of ", in.name, " as ",
                 dtype_name(n->dtype));
        for (const Expr& idx : n->args)
          TG_CHECK(idx->dtype == DType::kI64, "op ", op.name, ": non-int64 index");
        break;
      }
      default:
        break;
    }
  });
}

}  // namespace

void verify(const Graph& g) {
  std::vector<bool> defined(g.tensors.size(), false);
  for (size_t i = 0; i < g.tensors.size(); ++i)
    defined[i] = g.tensors[i].kind != TensorKind::kIntermediate;
  std::set<std::string> names;
  for (const Op& op : g.ops) {
    TG_CHECK(names.insert(op.name).second, "duplicate op name ", op.name);
    for (TensorId in : op.inputs)
      TG_CHECK(in >= 0 && in < static_cast<int>(g.tensors.size()) && defined[in], "op ",
               op.name, " reads a tensor not yet computed");
    const Tensor& out = g.tensor(op.output);
    TG_CHECK(!defined[op.output], "op ", op.name, " writes ", out.name, " twice or over an input");
    TG_CHECK(op.body && op.body->dtype == out.dtype, "op ", op.name, ": body dtype ",
             op.body ? dtype_name(op.body->dtype) : "null", " vs output ", dtype_name(out.dtype));
    TG_CHECK((op.reduction == Reduction::kNone) == op.reduce_extents.empty(), "op ", op.name,
             ": reduce axes without reduction or vice versa");
    verify_expr(g, op, op.body,
                static_cast<int>(out.shape.size() + op.reduce_extents.size()));
    defined[op.output] = true;
  }
  for (TensorId o : g.outputs) TG_CHECK(defined[o], "graph output ", g.tensor(o).name, " never computed");
}

std::string index_check_message(const IndexCheckSite& s, int64_t index) {
  return str_cat(s.op_type, " node '", s.node, "': index ", index, " out of range [", -s.dim, ", ", s.dim,
                 ") for axis ", s.axis);
}

std::string to_string(const Graph& g) {
  std::ostringstream out;
  auto describe = [&](TensorId id) {
    const Tensor& t = g.tensor(id);
    return str_cat(t.name, ":", dtype_name(t.dtype), "[", shape_to_string(t.shape), "]");
  };
  out << "graph " << g.name << "\n";
  for (TensorId i : g.inputs) out << "  input " << describe(i) << "\n";
  for (const Op& op : g.ops) {
    out << "  " << op.name << ": " << describe(op.output) << " = ";
    if (op.reduction != Reduction::kNone) {
      out << reduction_name(op.reduction) << "[";
      for (size_t i = 0; i < op.reduce_extents.size(); ++i) out << (i ? "," : "") << op.reduce_extents[i];
      out << "] ";
    }
    out << to_string(op.body) << "  <-";
    for (size_t s = 0; s < op.inputs.size(); ++s) out << " " << s << "=" << g.tensor(op.inputs[s]).name;
    out << "\n";
  }
  for (TensorId o : g.outputs) out << "  output " << describe(o) << "\n";
  return out.str();
}

}  // namespace tilegraph
