#!/usr/bin/env python3
"""Polynomial coefficients of graphlift-jit's inline f64 vector math (crates/jit/src/vmath).

Each polynomial is a Chebyshev interpolant (mpmath.chebyfit, 60 significant digits) of the
function named below, on the interval given; the coefficients are then rounded to f64 and
the error of the rounded polynomial (evaluated exactly) is measured on a dense grid, so the
printed error includes the coefficient rounding but not the f64 evaluation.

Run: python3 scripts/vmath_f64_fit.py   (needs mpmath; prints Rust constants)
"""
import mpmath as mp

mp.mp.dps = 60


def fit(name, f, lo, hi, degree, rel_to=None):
    """Fit f on [lo, hi] with a polynomial of `degree`; return ascending f64 coefficients."""
    poly, _ = mp.chebyfit(f, [lo, hi], degree + 1, error=True)
    coeffs = [float(c) for c in reversed(poly)]  # ascending, rounded to f64
    worst = mp.mpf(0)
    n = 2000
    for i in range(n + 1):
        x = lo + (hi - lo) * mp.mpf(i) / n
        p = mp.mpf(0)
        for c in reversed(coeffs):
            p = p * x + mp.mpf(c)
        err = abs(p - f(x))
        if rel_to is not None:
            err = err / abs(rel_to(x))
        worst = max(worst, err)
    print(f"// {name}: degree {degree} on [{mp.nstr(lo, 8)}, {mp.nstr(hi, 8)}], "
          f"max error {mp.nstr(worst, 3)}")
    print(f"const {name}: [f64; {len(coeffs)}] = [")
    for c in coeffs:
        print(f"    {c!r},")
    print("];")
    return coeffs


def exp_q(r):
    # (e^r - 1 - r)/r^2, with its limit 1/2 at 0
    if abs(r) < mp.mpf("1e-20"):
        return mp.mpf(1) / 2 + r / 6
    return (mp.expm1(r) - r) / r**2


def log_r(z):
    # (2 atanh(s)/s - 2)/z, s = sqrt(z); limit 2/3 at 0
    if z < mp.mpf("1e-30"):
        return mp.mpf(2) / 3 + 2 * z / 5
    s = mp.sqrt(z)
    return (2 * mp.atanh(s) / s - 2) / z


C0 = 2 / mp.sqrt(mp.pi)


def erf_p(z):
    # (erf(a)/a - 2/sqrt(pi))/z, z = a^2; limit -2/(3 sqrt(pi)) at 0
    if z < mp.mpf("1e-30"):
        return -C0 / 3 + C0 * z / 10
    a = mp.sqrt(z)
    return (mp.erf(a) / a - C0) / z


def erfc_q(a, mid):
    return mp.log(mp.erfc(a + mid)) + (a + mid) ** 2


if __name__ == "__main__":
    ln2 = mp.log(2)
    h = ln2 / 2
    print("// exp / expm1")
    # The error of r + r^2 Q relative to r (expm1) is |r| * error(Q): fit Q relative to 1.
    fit("Q", exp_q, -h, h, 10)
    # ln2 in two parts, the high one with 42 significant bits (n * LN2_HI exact for |n| < 2^11).
    hi = mp.ldexp(mp.floor(mp.ldexp(ln2, 42)), -42)
    print(f"const LN2_HI: f64 = {float(hi)!r};\nconst LN2_LO: f64 = {float(ln2 - hi)!r};")
    print("// log")
    smax = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)
    fit("R", log_r, mp.mpf(0), smax**2 * (1 + mp.mpf("1e-6")), 6)
    print("// erf, small argument")
    print(f"const C0_HI: f64 = {float(C0)!r};\nconst C0_LO: f64 = {float(C0 - mp.mpf(float(C0)))!r};")
    SMALL = mp.mpf(1)
    fit("P", erf_p, mp.mpf(0), SMALL**2, 12, rel_to=lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z) if z > 0 else C0)
    print("// erf, large argument: ln(erfc(a)) + a^2 as polynomials in a - mid")
    for name, lo, hi_, mid, deg in [("Q1", "1.0", "2.5", "1.75", 16), ("Q2", "2.5", "6.0", "4.25", 16)]:
        lo, hi_, mid = mp.mpf(lo), mp.mpf(hi_), mp.mpf(mid)
        # The error that matters is absolute in erf: erfc(a) * |error of q|.
        fit(name, lambda t: erfc_q(t, mid), lo - mid, hi_ - mid, deg,
            rel_to=lambda t: 1 / mp.erfc(t + mid))
    print("// pow (f32 through f64): lower degrees, ample for one rounding to f32")
    fit("QP", exp_q, -h, h, 6)
    fit("RP", log_r, mp.mpf(0), smax**2 * (1 + mp.mpf("1e-6")), 3)
