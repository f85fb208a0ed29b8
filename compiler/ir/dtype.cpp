#include "compiler/ir/dtype.h"

namespace tilegraph {

int64_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32: case DType::kI32: case DType::kU32: return 4;
    case DType::kF64: case DType::kI64: case DType::kU64: return 8;
    case DType::kF16: case DType::kI16: case DType::kU16: return 2;
    case DType::kU8: case DType::kI8: case DType::kBool: return 1;
  }
  return 0;
}

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF64 || t == DType::kF16; }

DType compute_dtype(DType t) { return t == DType::kF16 ? DType::kF32 : t; }

bool is_signed_int(DType t) {
  return t == DType::kI8 || t == DType::kI16 || t == DType::kI32 || t == DType::kI64;
}

bool is_integer(DType t) {
  return is_signed_int(t) || t == DType::kU8 || t == DType::kU16 || t == DType::kU32 ||
         t == DType::kU64;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "float32";
    case DType::kF64: return "float64";
    case DType::kF16: return "float16";
    case DType::kI8: return "int8";
    case DType::kI16: return "int16";
    case DType::kI32: return "int32";
    case DType::kI64: return "int64";
    case DType::kU8: return "uint8";
    case DType::kU16: return "uint16";
    case DType::kU32: return "uint32";
    case DType::kU64: return "uint64";
    case DType::kBool: return "bool";
  }
  return "?";
}

const char* dtype_c_type(DType t) {
  switch (t) {
    case DType::kF32: return "float";
    case DType::kF64: return "double";
    case DType::kF16: return "tg_half";
    case DType::kI8: return "int8_t";
    case DType::kI16: return "int16_t";
    case DType::kI32: return "int32_t";
    case DType::kI64: return "int64_t";
    case DType::kU8: return "uint8_t";
    case DType::kU16: return "uint16_t";
    case DType::kU32: return "uint32_t";
    case DType::kU64: return "uint64_t";
    case DType::kBool: return "uint8_t";
  }
  return "?";
}

bool dtype_from_onnx(int code, DType* out) {
  switch (code) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 9: case 10: case 11:
    case 12: case 13:
      *out = static_cast<DType>(code);
      return true;
    default:
      return false;
  }
}

}  // namespace tilegraph
