#include "compiler/ir/reshape.h"

#include "compiler/ir/error.h"

namespace tilegraph {

std::vector<Expr> reshape_indices(const Shape& in_shape, const Shape& out_shape,
                                  const std::vector<Expr>& out_vars) {
  TG_CHECK(num_elements(in_shape) == num_elements(out_shape), "reshape size mismatch");
  std::vector<Expr> in_idx(in_shape.size(), int_imm(0));
  if (num_elements(in_shape) == 0) return in_idx;  // nothing is ever read
  size_t i = 0, o = 0;
  while (i < in_shape.size() || o < out_shape.size()) {
    // Size-1 dimensions index 0 and join no group.
    if (i < in_shape.size() && in_shape[i] == 1) { ++i; continue; }
    if (o < out_shape.size() && out_shape[o] == 1) { ++o; continue; }
    if (i >= in_shape.size() || o >= out_shape.size()) break;
    // Grow a group [i0, i) x [o0, o) until the element counts agree.
    const size_t i0 = i, o0 = o;
    int64_t in_count = in_shape[i++], out_count = out_shape[o++];
    while (in_count != out_count) {
      if (in_count < out_count) in_count *= in_shape[i++];
      else out_count *= out_shape[o++];
    }
    // Linear index over the group's output dims, then split over input dims.
    Expr linear = int_imm(0);
    for (size_t k = o0; k < o; ++k) linear = linear * out_shape[k] + out_vars[k];
    int64_t stride = in_count;
    for (size_t k = i0; k < i; ++k) {
      stride /= in_shape[k];
      Expr idx = stride == 1 ? linear : floordiv(linear, stride);
      in_idx[k] = (k == i0) ? idx : floormod(idx, in_shape[k]);
    }
  }
  return in_idx;
}

}  // namespace tilegraph
