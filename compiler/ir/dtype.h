// Element types of tensors and expressions.
//
// Codes equal ONNX TensorProto.DataType so that frontends, weights files and
// the C runtime API (runtime/tilegraph_model.h) share one numbering.
#pragma once
#include <cstdint>
#include <string>

namespace tilegraph {

enum class DType : int {
  kF32 = 1, kU8 = 2, kI8 = 3, kU16 = 4, kI16 = 5, kI32 = 6, kI64 = 7,
  kBool = 9, kF16 = 10, kF64 = 11, kU32 = 12, kU64 = 13,
};

int64_t dtype_size(DType t);
bool is_float(DType t);
// The type values of `t` are computed, accumulated and held on chip in:
// half computes as float (registers, shared memory, accumulators); every
// other type as itself. Memory (global buffers, weights) keeps `t`.
DType compute_dtype(DType t);
bool is_signed_int(DType t);
bool is_integer(DType t);  // signed or unsigned integers; bool is not an integer
const char* dtype_name(DType t);  // "float32", "int64", ...
// The C++ type spelled in generated code ("float", "int64_t", "uint8_t" for bool).
const char* dtype_c_type(DType t);
// Maps an ONNX TensorProto.DataType code; returns false for unsupported codes.
bool dtype_from_onnx(int code, DType* out);

}  // namespace tilegraph
