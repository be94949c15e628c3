#!/usr/bin/env python3
"""Coefficients of graphlift's f32 tanh (crates/kernels/src/vmath/tanh.rs).

The shipped function is a rational approximation of the half angle followed by the doubling
identity:

    N = x_c * P(t), D = Q(t), N / D ~ tanh(x_c / 2),  t = x_c^2   (x_c: x clamped to +-CLAMP)
    tanh(x) = 2 N D / (N^2 + D^2) = (N*D + N*D) / fma(N, N, D*D)   (one division)

with P of degree 2 and Q of degree 3 in t. The doubling damps the half angle's relative error
by 1/cosh(x), so the fit minimises max |(P/Q - g)/g| / cosh(x) for g(x) = 2 tanh(x/2)/x
(Lawson's iteration on the linearised problem, weights w_i *= |error_i|, in 40-digit
arithmetic on Chebyshev-spaced points of [0, 9.0111084], P(0) = Q(0) = 1).

The shipped coefficients are the fit's, P scaled by S and Q by 2S (for tanh(x/2)): the
scaling puts N, D and their products near the top of their binades, where a rounding is a
smaller relative error (half of it at 1.99 against 1.0). S is chosen by the search below (max
error over a sample of f32 in f32 arithmetic, fma emulated in f64).
CLAMP is the first f32 at or above 7 where the shipped operations give exactly 1.0 (nothing
above 1 below it is checked over every f32 of [7, 12)), so tanh(+-inf) = +-1 without a cap.
The final error over every f32 is measured by `graphlift accuracy tanh`.

Run: python3 scripts/tanh_rational_fit.py [--search]   (needs mpmath and numpy; about 1 min,
     the S search a few minutes)
"""
import struct
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 40
FIT_CLAMP = mp.mpf("9.0111084")
K_P, M_Q = 2, 3
SHIPPED_SCALE = 1.85


def lawson(k, m, clamp, iterations=40, points=1200):
    """P (degree k) and Q (degree m) in t, ascending, P(0) = Q(0) = 1, and the weighted
    maximum relative error of the exact rational."""
    span = clamp * clamp
    xs = [clamp * (1 - mp.cos(mp.pi * (i + mp.mpf(1) / 2) / points)) / 2 for i in range(points)]
    s = [x * x / span for x in xs]  # t / clamp^2, in [0, 1]
    g = [2 * mp.tanh(x / 2) / x for x in xs]
    damp = [1 / mp.cosh(x) for x in xs]
    n = k + m
    w = [mp.mpf(1)] * points
    q_prev = [mp.mpf(1)] * points
    for _ in range(iterations):
        normal = mp.zeros(n, n)
        rhs = mp.zeros(n, 1)
        for i in range(points):
            scale = mp.sqrt(w[i]) * damp[i] / (g[i] * q_prev[i])
            row = [scale * s[i] ** j for j in range(1, k + 1)]
            row += [-scale * g[i] * s[i] ** j for j in range(1, m + 1)]
            for r in range(n):
                rhs[r] += row[r] * scale * (g[i] - 1)
                for c in range(r, n):
                    normal[r, c] += row[r] * row[c]
        for r in range(n):
            for c in range(r):
                normal[r, c] = normal[c, r]
        sol = mp.lu_solve(normal, rhs)
        p = [mp.mpf(1)] + [sol[j] for j in range(k)]
        q = [mp.mpf(1)] + [sol[k + j] for j in range(m)]
        big_p = [mp.polyval(p[::-1], v) for v in s]
        big_q = [mp.polyval(q[::-1], v) for v in s]
        err = [(big_p[i] / big_q[i] - g[i]) / g[i] * damp[i] for i in range(points)]
        w = [w[i] * abs(err[i]) for i in range(points)]
        total = sum(w)
        w = [v / total for v in w]
        q_prev = big_q
    worst = max(abs(e) for e in err)
    return [p[j] / span**j for j in range(k + 1)], [q[j] / span**j for j in range(m + 1)], worst


def fma(a, b, c):
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64) + np.asarray(c, np.float64)).astype(np.float32)


def horner(t, c):
    acc = np.full_like(t, c[-1])
    for k in reversed(c[:-1]):
        acc = fma(acc, t, np.full_like(t, k))
    return acc


class Shipped:
    """The shipped operations in f32 for the fit p, q scaled by s."""

    def __init__(self, p, q, s):
        self.p = [np.float32(s * float(v)) for v in p]
        self.q = [np.float32(2 * s * float(v)) for v in q]

    def __call__(self, x, clamp):
        xc = np.minimum(np.maximum(x, -clamp), clamp)
        t = (xc * xc).astype(np.float32)
        n = (xc * horner(t, self.p)).astype(np.float32)
        d = horner(t, self.q)
        nd = (n * d).astype(np.float32)
        den = fma(n, n, (d * d).astype(np.float32))
        return ((nd + nd).astype(np.float32) / den).astype(np.float32)


def f32_range(lo, hi, step=1):
    return np.arange(np.float32(lo).view(np.uint32), np.float32(hi).view(np.uint32), step,
                     dtype=np.uint32).view(np.float32)


def max_ulp(f, xs, clamp):
    ref = np.tanh(xs.astype(np.float64))
    ulp = 2.0 ** (np.floor(np.log2(np.abs(ref))) - 23)
    err = np.abs(f(xs, clamp).astype(np.float64) - ref) / ulp
    i = np.argmax(err)
    return float(err[i]), float(xs[i])


def clamp_of(f):
    """The first f32 of [7, 12) where f is 1, checking that nothing below it is above 1."""
    xs = f32_range(7, 12)
    y = f(xs, np.float32(np.inf))
    first = np.nonzero(y >= 1)[0][0]
    assert y[first] == 1 and (y[:first] < 1).all(), "a value above 1 below the clamp"
    return xs[first]


def bits(v):
    return "0x%08x" % struct.unpack("<I", struct.pack("<f", float(v)))[0]


def main():
    p, q, worst = lawson(K_P, M_Q, FIT_CLAMP)
    print(f"fit: weighted max relative error {mp.nstr(worst * 2**24, 4)} x 2^-24")
    if "--search" in sys.argv:
        sample = f32_range(2.0**-5, 9.0, 13)
        found = []
        for scale in np.arange(1.0, 2.0, 0.05):
            f = Shipped(p, q, scale)
            found.append((max_ulp(f, sample, clamp_of(f))[0], round(scale, 2)))
        for row in sorted(found)[:5]:
            print("max ulp %.3f at S = %.2f (sample)" % row)
    f = Shipped(p, q, SHIPPED_SCALE)
    clamp = clamp_of(f)
    print(f"S = {SHIPPED_SCALE}: CLAMP = {clamp!r} ({bits(clamp)})")
    print("P:", [bits(v) for v in f.p])
    print("Q:", [bits(v) for v in f.q])
    print("max ulp over every f32 of [2^-5, 9): %.3f at %r" % max_ulp(f, f32_range(2.0**-5, 9.0), clamp))


if __name__ == "__main__":
    main()
