#!/usr/bin/env python3
"""Coefficients of graphlift's inline f32 sin, cos, atan and asin
(crates/kernels/src/vmath/trig.rs, crates/kernels/src/vmath/inverse_trig.rs).

Each is an odd or even polynomial on a reduced range, fitted for minimax relative error by
Lawson's iteration (weighted least squares, weights multiplied by the error each round) on
4,000 Chebyshev-spaced points, in float64 with numpy (the f32 targets need about 2^-30, far
above float64's rounding):

- sin(r) = r + r^3 * S(r^2),            r in [0, pi/4],   S of 3 coefficients;
- cos(r) = 1 - r^2/2 + r^4 * C(r^2),    r in [0, pi/4],   C of 3 coefficients;
- atan(t) = t + t^3 * A(t^2),           t in [0, tan(pi/8)], A of 4 coefficients;
- asin(s) = s + s^3 * B(s^2),           s in [0, 1/2],    B of 5 coefficients.

It prints each fit's maximum relative error of the exact polynomial (in units of 2^-24, an
f32 ulp at the bottom of a binade) and the coefficients rounded to f32 as bits, ascending.
The error of the shipped code, in f32 arithmetic and after range reduction, is measured by
`graphlift accuracy` and the sweep tests.

Run: python3 scripts/trig_fit.py   (needs numpy; a second or two)
"""
import struct

import numpy as np


def lawson(f, basis_lead, lead_power, n_coef, lo, hi, iterations=60, points=4000):
    """Fits c so that lead(x) + x^lead_power * sum c_k x^(2k) approximates f(x) on [lo, hi]
    with minimax relative error. Returns the coefficients and the maximum relative error."""
    k = np.arange(points)
    x = lo + (hi - lo) * (1 - np.cos(np.pi * (k + 0.5) / points)) / 2
    y = f(x)
    target = (y - basis_lead(x)) / x**lead_power
    z = x * x
    m = np.stack([z**j for j in range(n_coef)], axis=1)
    # Relative error of y: the residual in target times x^lead_power / y.
    scale = x**lead_power / y
    w = np.ones(points) / points
    for _ in range(iterations):
        sw = np.sqrt(w) * scale
        c, *_ = np.linalg.lstsq(m * sw[:, None], target * sw, rcond=None)
        e = np.abs((m @ c - target) * scale)
        w = w * e
        w /= w.sum()
    return c, np.max(np.abs((m @ c - target) * scale))


def f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def show(name, c, err):
    print(f"{name}: max relative error {err / 2**-24:.4f} x 2^-24")
    for v in c:
        f = np.float32(v)
        print(f"    f32::from_bits(0x{f32_bits(f):08x}), // {float(f):.9e}")


def main():
    q = np.pi / 4
    show("sin S", *lawson(np.sin, lambda x: x, 3, 3, 1e-4, q))
    show("cos C", *lawson(np.cos, lambda x: 1 - x * x / 2, 4, 3, 1e-4, q))
    show("atan A", *lawson(np.arctan, lambda x: x, 3, 4, 1e-4, np.tan(np.pi / 8)))
    show("asin B", *lawson(np.arcsin, lambda x: x, 3, 5, 1e-4, 0.5))


if __name__ == "__main__":
    main()
