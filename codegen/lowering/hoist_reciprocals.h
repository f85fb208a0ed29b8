// Float division by a loop-invariant divisor inside a CPU simd loop becomes a
// multiplication by the divisor's reciprocal.
//
// Softmax's e^x / Σ, layer norm's (x - μ) / σ and GELU's x / √2 divide every
// element of a row by one value. Without -ffast-math the compiler must keep
// each division (vdivps: a 16-lane zmm division costs as much as ~10 FMAs),
// and it was a third of a bert softmax's time. `x * (1 / y)` lets it hoist
// the one division out of the loop. The product differs from the correctly
// rounded quotient by at most one ulp; onnxruntime's own softmax scales by
// the reciprocal of the sum the same way. Special values stay special
// (x / 0 and x * (1 / 0) are both ±inf or NaN; y = ±inf gives 0 or NaN in
// both) except divisors below 2^-126 in magnitude, whose reciprocal
// overflows: no row statistic or scale constant is that small.
//
// Only float32/float64 divisions inside a kVectorized loop whose divisor uses
// no variable of that loop or a loop within it and loads no buffer the loop
// stores; anything else is left alone (integer division, float16 arithmetic,
// per-element divisors such as erf's rational term).
#pragma once

#include "codegen/kernel_ir/kernel_ir.h"

namespace tilegraph::codegen {

// k with every such division rewritten (k itself when there is none).
Kernel hoist_reciprocals(Kernel k);

}  // namespace tilegraph::codegen
