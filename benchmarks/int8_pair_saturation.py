"""How many weight pairs of an int8 model could saturate a u8 x s8 `vpmaddubsw`.

    python3 benchmarks/int8_pair_saturation.py MODEL.onnx

`vpmaddubsw` (AVX2 without VNNI; onnxruntime's MLAS uses it for uint8 activations times int8
weights) adds the products of two adjacent k into an int16 and saturates. With activations up to
255, a pair of weights of the same sign with |b0| + |b1| > 128 can exceed 32767 (255 x 129).
For every 2-D int8 initializer (a weight matrix [K, N], pairs along K as a GEMM packs them)
this counts those pairs: a model where few pairs could saturate might take the fast mix and
correct the few exactly; docs/int8_gemm_bounds.md has the numbers for the dynamic-INT8
ViT-B/16 (about a quarter of its pairs), which is why tilegraph's AVX2 kernel stays on the
exact int16 `vpmaddwd` mix. Not a test.
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def risky_pairs(weights: np.ndarray) -> tuple[int, int]:
    """(pairs that could saturate, all pairs) of a [K, N] int8 matrix, pairs along K."""
    k = weights.shape[0] - weights.shape[0] % 2
    b0 = weights[0:k:2].astype(np.int32)
    b1 = weights[1:k:2].astype(np.int32)
    same_sign = np.sign(b0) * np.sign(b1) > 0
    return int((same_sign & (np.abs(b0) + np.abs(b1) > 128)).sum()), int(b0.size)


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    model = onnx.load(sys.argv[1])
    total_risky = total = matrices = 0
    for init in model.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.dtype != np.int8 or w.ndim != 2:
            continue
        risky, pairs = risky_pairs(w)
        total_risky += risky
        total += pairs
        matrices += 1
        print(f"{init.name[:70]:70s} {str(list(w.shape)):>12s} {100 * risky / max(pairs, 1):6.2f}%")
    if not matrices:
        print("no 2-D int8 initializers")
        return 0
    print(f"{matrices} matrices, {total} pairs, {total_risky} could saturate ({100 * total_risky / total:.2f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
