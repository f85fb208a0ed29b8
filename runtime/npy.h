// npy.h — NumPy .npy files and the tensor dtypes of tilegraph_model.h.
//
// main_test reads model inputs from and writes outputs to DIR/<name>.npy, so
// users can feed data prepared with numpy and compare against onnxruntime.
// This file is copied into every generated project: plain C++17, no deps.
//
// Supported: format versions 1.0, 2.0 and 3.0 on read (1.0 on write, 2.0 only
// when a header is too long for 1.0, as numpy does), C order only, and the
// little-endian dtypes that map onto tg_dtype codes:
//   <f4 float32  <f8 float64  <f2 float16  |b1 bool
//   |i1 int8  |u1 uint8  <i2 int16  <u2 uint16  <i4 int32  <u4 uint32
//   <i8 int64  <u8 uint64
// Every error is a std::runtime_error whose message is one line of the form
// "<path>: <cause>".
#ifndef TILEGRAPH_RT_NPY_H
#define TILEGRAPH_RT_NPY_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tilegraph::rt {

// A dense C-order array. data holds num_elements() * dtype_size(dtype) bytes,
// little-endian. An empty shape is a scalar (one element).
struct NpyArray {
  int dtype = 0;  // a tg_dtype code (TG_F32, ...)
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  int64_t num_elements() const;
};

// Reads a .npy file. Throws std::runtime_error("<path>: <cause>") when the file
// is missing, truncated, not a .npy file, Fortran-ordered, or of a dtype not
// listed above.
NpyArray read_npy(const std::string& path);

// Parses .npy bytes already in memory; `what` names the source in errors.
NpyArray parse_npy(const uint8_t* bytes, size_t size, const std::string& what);

// Writes a version 1.0 .npy file (2.0 if the header needs it). Throws when the
// data size does not match the shape or the file cannot be written.
void write_npy(const std::string& path, const NpyArray& array);

// The file stem main_test uses for an ONNX value name: every character outside
// [A-Za-z0-9_.-] becomes '_' ("input:0" -> "input_0"). An empty name gives "_".
std::string sanitize_name(const std::string& onnx_name);

// ---- dtype helpers (codes are tg_dtype / ONNX TensorProto.DataType) ----

// Bytes per element; 0 for a code this runtime does not know.
size_t dtype_size(int dtype);
// numpy's name ("float32", "int64", "bool"); "dtype(<code>)" when unknown.
std::string dtype_name(int dtype);
bool dtype_is_float(int dtype);  // float16, float32, float64
// The .npy descr string ("<f4"); empty when the dtype has no mapping.
std::string dtype_to_npy_descr(int dtype);
// The tg_dtype code of a .npy descr; 0 when unsupported.
int dtype_from_npy_descr(const std::string& descr);

// "[1,128]"; "[]" for a scalar.
std::string format_shape(const std::vector<int64_t>& shape);
// Product of the dims; throws std::runtime_error on a negative dim or overflow.
int64_t shape_num_elements(const std::vector<int64_t>& shape);

// IEEE 754 binary16 <-> binary32, round-to-nearest-even, with inf/NaN and
// subnormals, so float16 tensors can be generated and compared on any host.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

}  // namespace tilegraph::rt

#endif  // TILEGRAPH_RT_NPY_H
