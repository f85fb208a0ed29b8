// tensor_compare.h — compare a model output with an expected tensor
// (main_test --expected).
//
// Floats (float16/32/64, in any combination): the error of an element is
// |a - b| / max(|b|, 1), i.e. relative for large values and absolute below 1,
// so one tolerance serves outputs of any scale. Both NaN, or equal infinities,
// count as equal; NaN against a number, or inf against anything else, is an
// infinite error. An element fails when its error exceeds rtol.
// Every other dtype must match bit for bit, whatever rtol is.
#ifndef TILEGRAPH_RT_TENSOR_COMPARE_H
#define TILEGRAPH_RT_TENSOR_COMPARE_H

#include "npy.h"

#include <cstddef>
#include <string>
#include <vector>

namespace tilegraph::rt {

struct Comparison {
  size_t elements = 0;
  size_t mismatches = 0;   // elements whose error exceeds rtol / that differ
  double max_abs_err = 0;  // floats: max |a - b|; others: 0
  double max_rel_err = 0;  // floats: max |a - b| / max(|b|, 1); others: 0
  size_t worst = 0;        // flat index of the largest error (floats) or first difference
  bool ok() const { return mismatches == 0; }
};

// True when `want` can check `got`: same shape, and the same dtype or both
// floating point.
bool comparable(const NpyArray& got, const NpyArray& want);

// Compares element by element. Throws std::invalid_argument unless comparable().
Comparison compare_tensors(const NpyArray& got, const NpyArray& want, double rtol);

// One line for main_test, e.g.
//   "max abs err 0.5  max rel err 0.133  MISMATCH: 1 of 6 elements exceed rtol
//    0.0001, worst at [1,1]: got 3.25, expected 3.75"
//   "0 of 4 elements differ  ok"
std::string summarize(const Comparison& c, const NpyArray& got, const NpyArray& want, double rtol);

// An element as text ("3.25", "-7", "true"), for messages.
std::string element_to_string(int dtype, const uint8_t* element);
// A flat C-order index as a multi-index, "[1,1]".
std::string index_to_string(size_t flat, const std::vector<int64_t>& shape);

}  // namespace tilegraph::rt

#endif  // TILEGRAPH_RT_TENSOR_COMPARE_H
