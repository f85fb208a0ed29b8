#!/usr/bin/env python3
"""Fits tg_erf's coefficients (tg_vector_math.h): erf(x) ~ x P(x^2) / Q(x^2).

P has degree 6 and Q degree 4 in t = x^2, Q(0) = 1 and P(0) = 2/sqrt(pi) (the
slope at 0, so the relative error stays small as x -> 0). The fit minimizes the
largest relative error on (0, 3.92] (beyond, float erf is +-1): a linearized
least-squares problem x P(t) - erf(x) Q(t) ~ 0, divided by the previous Q
(Sanathanan-Koerner) and reweighted by each point's error (Lawson), keeping
the best iterate. Prints the error in float64 and in float32 (Horner, no FMA:
what a compiler that contracts nothing computes) and the C literals.

    python3 codegen/vector_math/fit_erf.py
"""
import math

import numpy as np

P_DEGREE, Q_DEGREE, LIMIT = 6, 4, 3.92
SLOPE_AT_0 = 2 / math.sqrt(math.pi)


def fit(iterations=300):
    # Chebyshev-spaced points (dense near both ends) and a uniform grid.
    x = np.concatenate([np.cos(np.linspace(0, np.pi, 8000)) * LIMIT / 2 + LIMIT / 2, np.linspace(1e-4, LIMIT, 4000)])
    x = np.unique(x[x > 1e-5])
    f = np.array([math.erf(v) for v in x])
    t = x * x
    weight, q_prev, best = np.ones_like(x), np.ones_like(x), None
    for _ in range(iterations):
        a = np.concatenate([x[:, None] * t[:, None] ** np.arange(1, P_DEGREE + 1),
                            -f[:, None] * t[:, None] ** np.arange(1, Q_DEGREE + 1)], axis=1)
        scale = np.sqrt(weight) / (f * q_prev)
        sol, *_ = np.linalg.lstsq(a * scale[:, None], (f - x * SLOPE_AT_0) * scale, rcond=None)
        p = np.concatenate([[SLOPE_AT_0], sol[:P_DEGREE]])
        q = np.concatenate([[1.0], sol[P_DEGREE:]])
        q_prev = np.polyval(q[::-1], t)
        err = np.abs(x * np.polyval(p[::-1], t) / q_prev - f) / f
        if best is None or err.max() < best[0]:
            best = (err.max(), p, q)
        weight = weight * err / err.mean()
        weight *= len(weight) / weight.sum()
    return best


def float32_error(p, q):
    f32 = np.float32
    x = np.concatenate([np.arange(-6, 6, 3e-5), np.arange(1e-6, 1e-3, 1e-8)]).astype(f32)
    t = x * x
    pv, qv = f32(p[-1]), f32(q[-1])
    for c in p[-2::-1]:
        pv = pv * t + f32(c)
    for c in q[-2::-1]:
        qv = qv * t + f32(c)
    r = np.where(x > f32(LIMIT), f32(1), np.where(x < f32(-LIMIT), f32(-1), x * pv / qv))
    exact = np.array([math.erf(float(v)) for v in x])
    return float(np.max(np.abs(r - exact) / np.abs(exact)))


def main():
    err, p, q = fit()
    print(f"largest relative error: {err:.3g} (float64), {float32_error(p, q):.3g} (float32)")
    print("P (t^0 .. t^6):", ", ".join(f"{np.float32(c):.9e}f" for c in p))
    print("Q (t^0 .. t^4):", ", ".join(f"{np.float32(c):.9e}f" for c in q))


if __name__ == "__main__":
    main()
