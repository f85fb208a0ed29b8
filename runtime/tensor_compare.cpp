// tensor_compare.cpp — see tensor_compare.h.
#include "tensor_compare.h"

#include "tilegraph_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace tilegraph::rt {
namespace {

double load_float(int dtype, const uint8_t* p) {
  if (dtype == TG_F32) {
    float v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  if (dtype == TG_F64) {
    double v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return half_to_float(h);
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The error of one float element; see the header for the NaN/inf rules.
double float_error(double a, double b, double* abs_err) {
  *abs_err = 0;
  if (std::isnan(a) || std::isnan(b)) {
    if (std::isnan(a) && std::isnan(b)) return 0;
    *abs_err = INFINITY;
    return INFINITY;
  }
  if (a == b) return 0;  // includes equal infinities
  *abs_err = std::fabs(a - b);
  return std::isinf(b) ? INFINITY : *abs_err / std::max(std::fabs(b), 1.0);
}

}  // namespace

bool comparable(const NpyArray& got, const NpyArray& want) {
  bool dtypes = got.dtype == want.dtype || (dtype_is_float(got.dtype) && dtype_is_float(want.dtype));
  return dtypes && got.shape == want.shape;
}

Comparison compare_tensors(const NpyArray& got, const NpyArray& want, double rtol) {
  if (!comparable(got, want)) {
    throw std::invalid_argument("cannot compare " + dtype_name(got.dtype) + " " + format_shape(got.shape) +
                                " with " + dtype_name(want.dtype) + " " + format_shape(want.shape));
  }
  Comparison c;
  c.elements = size_t(got.num_elements());
  size_t got_size = dtype_size(got.dtype), want_size = dtype_size(want.dtype);
  bool floats = dtype_is_float(got.dtype);
  for (size_t i = 0; i < c.elements; ++i) {
    const uint8_t* a = got.data.data() + i * got_size;
    const uint8_t* b = want.data.data() + i * want_size;
    if (!floats) {
      if (std::memcmp(a, b, got_size) != 0 && c.mismatches++ == 0) c.worst = i;
      continue;
    }
    double abs_err;
    double rel_err = float_error(load_float(got.dtype, a), load_float(want.dtype, b), &abs_err);
    if (rel_err > rtol) ++c.mismatches;
    c.max_abs_err = std::max(c.max_abs_err, abs_err);
    if (rel_err > c.max_rel_err) {
      c.max_rel_err = rel_err;
      c.worst = i;
    }
  }
  return c;
}

std::string summarize(const Comparison& c, const NpyArray& got, const NpyArray& want, double rtol) {
  bool floats = dtype_is_float(got.dtype);
  std::string line;
  if (floats) {
    line = "max abs err " + fmt("%.3g", c.max_abs_err) + "  max rel err " + fmt("%.3g", c.max_rel_err);
  } else {
    line = std::to_string(c.mismatches) + " of " + std::to_string(c.elements) + " elements differ";
  }
  if (c.ok()) return line + "  ok";
  line += floats ? "  MISMATCH: " + std::to_string(c.mismatches) + " of " + std::to_string(c.elements) +
                       " elements exceed rtol " + fmt("%g", rtol) + ", worst"
                 : "  MISMATCH: first";
  return line + " at " + index_to_string(c.worst, got.shape) + ": got " +
         element_to_string(got.dtype, got.data.data() + c.worst * dtype_size(got.dtype)) + ", expected " +
         element_to_string(want.dtype, want.data.data() + c.worst * dtype_size(want.dtype));
}

std::string element_to_string(int dtype, const uint8_t* element) {
  if (dtype_is_float(dtype)) return fmt("%.9g", load_float(dtype, element));
  if (dtype == TG_BOOL) return *element ? "true" : "false";
  size_t n = dtype_size(dtype);
  uint64_t raw = 0;
  std::memcpy(&raw, element, n);  // little-endian host: the low bytes
  bool is_signed = dtype == TG_I8 || dtype == TG_I16 || dtype == TG_I32 || dtype == TG_I64;
  if (is_signed && n < 8 && ((raw >> (8 * n - 1)) & 1)) raw |= ~uint64_t(0) << (8 * n);  // sign-extend
  return is_signed ? std::to_string(int64_t(raw)) : std::to_string(raw);
}

std::string index_to_string(size_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] <= 0) break;  // an empty tensor has no elements to name
    index[d] = int64_t(flat % uint64_t(shape[d]));
    flat /= uint64_t(shape[d]);
  }
  return format_shape(index);
}

}  // namespace tilegraph::rt
