#include "compiler/ir/evaluate.h"

#include <cmath>
#include <cstring>

#include "compiler/ir/error.h"

namespace tilegraph {

namespace {

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, mant = x & 0x7fffff;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
  return static_cast<uint16_t>(half);
}

double half_to_double(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 31, mant = h & 1023;
  double v = exp == 0 ? std::ldexp(mant, -24)
             : exp == 31 ? (mant ? NAN : INFINITY)
                         : std::ldexp(mant + 1024, static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

template <typename T>
T get(const uint8_t* base, int64_t i) {
  T v;
  std::memcpy(&v, base + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <typename T>
void put(uint8_t* base, int64_t i, T v) {
  std::memcpy(base + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

class Interpreter {
 public:
  Interpreter(const Graph& g, const Op& op) : g_(g), op_(op) {
    for (TensorId id : op.inputs) {
      const Tensor& t = g.tensor(id);
      TG_CHECK(t.data, "evaluate_op: input ", t.name, " of ", op.name, " is not constant");
      inputs_.push_back(&t);
    }
  }

  Scalar eval(const Expr& e) {
    switch (e->kind) {
      case ExprKind::kIntImm: return Scalar{0, e->int_value};
      case ExprKind::kFloatImm: return Scalar{e->float_value, 0};
      case ExprKind::kVar: return Scalar{0, vars_[e->int_value]};
      case ExprKind::kLoad: {
        const Tensor& t = *inputs_[e->int_value];
        int64_t flat = 0;
        for (size_t d = 0; d < e->args.size(); ++d) {
          int64_t idx = eval(e->args[d]).i;
          if (idx < 0 || idx >= t.shape[d])
            throw UserError(str_cat("op ", op_.name, " reads ", t.name, " out of bounds (index ",
                                    idx, " of dimension ", d, " with size ", t.shape[d], ")"));
          flat = flat * t.shape[d] + idx;
        }
        return read_element(t.data->data(), t.dtype, flat);
      }
      case ExprKind::kUnary: return scalar_unary(e->unary_op, e->args[0]->dtype, eval(e->args[0]));
      case ExprKind::kBinary:
        return scalar_binary(e->binary_op, e->args[0]->dtype, eval(e->args[0]), eval(e->args[1]));
      case ExprKind::kSelect: return eval(e->args[0]).i ? eval(e->args[1]) : eval(e->args[2]);
      case ExprKind::kCast: return scalar_cast(eval(e->args[0]), e->args[0]->dtype, e->dtype);
      case ExprKind::kCheckIndex: {
        const int64_t x = eval(e->args[0]).i, dim = e->args[1]->int_value;
        if (x >= -dim && x < dim) return Scalar{0, x < 0 ? x + dim : x};
        const size_t site = static_cast<size_t>(e->int_value);
        if (site < g_.index_checks.size()) throw UserError(index_check_message(g_.index_checks[site], x));
        throw UserError(str_cat("op ", op_.name, ": index ", x, " out of range [", -dim, ", ", dim, ")"));
      }
    }
    return Scalar{};
  }

  Scalar reduce(size_t axis, Scalar acc, DType t) {
    const size_t rank = vars_.size() - op_.reduce_extents.size();
    if (axis == op_.reduce_extents.size()) {
      const Scalar v = eval(op_.body);
      if (op_.reduction == Reduction::kNone) return v;
      return scalar_binary(reduction_combine_op(op_.reduction), t, acc, v);
    }
    for (int64_t r = 0; r < op_.reduce_extents[axis]; ++r) {
      vars_[rank + axis] = r;
      acc = reduce(axis + 1, acc, t);
    }
    return acc;
  }

  std::vector<int64_t> vars_;

 private:
  const Graph& g_;
  const Op& op_;
  std::vector<const Tensor*> inputs_;
};

}  // namespace

Scalar read_element(const uint8_t* base, DType t, int64_t i) {
  Scalar s;
  switch (t) {
    case DType::kF32: s.f = get<float>(base, i); break;
    case DType::kF64: s.f = get<double>(base, i); break;
    case DType::kF16: s.f = half_to_double(get<uint16_t>(base, i)); break;
    case DType::kI8: s.i = get<int8_t>(base, i); break;
    case DType::kU8: case DType::kBool: s.i = get<uint8_t>(base, i); break;
    case DType::kI16: s.i = get<int16_t>(base, i); break;
    case DType::kU16: s.i = get<uint16_t>(base, i); break;
    case DType::kI32: s.i = get<int32_t>(base, i); break;
    case DType::kU32: s.i = get<uint32_t>(base, i); break;
    case DType::kI64: s.i = get<int64_t>(base, i); break;
    case DType::kU64: s.i = static_cast<int64_t>(get<uint64_t>(base, i)); break;
  }
  return s;
}

void write_element(uint8_t* base, DType t, int64_t i, Scalar s) {
  switch (t) {
    case DType::kF32: put<float>(base, i, static_cast<float>(s.f)); break;
    case DType::kF64: put<double>(base, i, s.f); break;
    case DType::kF16: put<uint16_t>(base, i, float_to_half(static_cast<float>(s.f))); break;
    case DType::kI8: put<int8_t>(base, i, static_cast<int8_t>(s.i)); break;
    case DType::kU8: put<uint8_t>(base, i, static_cast<uint8_t>(s.i)); break;
    case DType::kBool: put<uint8_t>(base, i, s.i != 0); break;
    case DType::kI16: put<int16_t>(base, i, static_cast<int16_t>(s.i)); break;
    case DType::kU16: put<uint16_t>(base, i, static_cast<uint16_t>(s.i)); break;
    case DType::kI32: put<int32_t>(base, i, static_cast<int32_t>(s.i)); break;
    case DType::kU32: put<uint32_t>(base, i, static_cast<uint32_t>(s.i)); break;
    case DType::kI64: put<int64_t>(base, i, s.i); break;
    case DType::kU64: put<uint64_t>(base, i, static_cast<uint64_t>(s.i)); break;
  }
}

std::shared_ptr<const std::vector<uint8_t>> evaluate_op(const Graph& g, const Op& op) {
  const Tensor& out = g.tensor(op.output);
  const int64_t n = num_elements(out.shape);
  auto data = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(out.bytes()));
  Interpreter interp(g, op);
  const size_t rank = out.shape.size();
  interp.vars_.assign(rank + op.reduce_extents.size(), 0);
  const Scalar init = op.reduction == Reduction::kNone
                          ? Scalar{}
                          : Interpreter(g, op).eval(reduction_init(op.reduction, out.dtype));
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rest = flat;
    for (size_t d = rank; d-- > 0;) {
      interp.vars_[d] = rest % out.shape[d];
      rest /= out.shape[d];
    }
    Scalar v = interp.reduce(0, init, out.dtype);
    write_element(data->data(), out.dtype, flat, scalar_cast(v, out.dtype, out.dtype));
  }
  return data;
}

}  // namespace tilegraph

namespace tilegraph {

std::vector<std::vector<uint8_t>> evaluate_graph(const Graph& g,
                                                 const std::vector<std::vector<uint8_t>>& inputs) {
  TG_CHECK(inputs.size() == g.inputs.size(), "evaluate_graph: ", inputs.size(), " inputs for ",
           g.inputs.size());
  Graph work = g;  // inputs and op outputs become constants as they are computed
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    Tensor& t = work.tensor(g.inputs[i]);
    TG_CHECK(static_cast<int64_t>(inputs[i].size()) == t.bytes(), "evaluate_graph: input ", t.name,
             " has ", inputs[i].size(), " bytes, expected ", t.bytes());
    t.data = std::make_shared<const std::vector<uint8_t>>(inputs[i]);
  }
  for (const Op& op : work.ops) work.tensor(op.output).data = evaluate_op(work, op);
  std::vector<std::vector<uint8_t>> outputs;
  for (TensorId o : g.outputs) outputs.push_back(*work.tensor(o).data);
  return outputs;
}

}  // namespace tilegraph
