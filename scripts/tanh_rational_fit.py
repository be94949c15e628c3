#!/usr/bin/env python3
"""Coefficients of graphlift-jit's f32 tanh (crates/jit/src/vmath/tanh.rs).

tanh(a) = a * P(a^2) / Q(a^2) on [0, clamp], P and Q of degree K and M in t = a^2. The fit
minimises the maximum relative error of P/Q against tanh(a)/a by Lawson's iteration on the
linearised problem (min sum w_i (P(t_i) - f_i Q(t_i))^2 / (f_i Q_prev(t_i))^2, then
w_i *= |error_i|), in 40-digit arithmetic on Chebyshev-spaced points in a.

Two fits are printed, with their maximum relative error (units of 2^-24) and coefficients
in t, ascending:
- free: Q(0) = 1, normalised to P(0) = 1 afterwards (Q(0) comes out as 1 to f32 precision;
  approximation error 0.35 x 2^-24 for 4/4);
- shipped (with E, the default for 4 4: 26): P(0) = Q(0) = 1 and P's leading coefficient
  fixed at 2^-E (0.83 x 2^-24 for E = 26), then both divided by 2^-E, so P is monic (its
  Horner evaluation starts with an addition) and P(0) = Q(0) = 2^E exactly (tiny a give
  a). These, rounded to f32 (printed as bits), are the shipped coefficients; their error in
  f32 arithmetic is measured over every f32 by `graphlift accuracy tanh`.

The fit runs on [0, 9.0111084]; the shipped code clamps x earlier, at 8.140329, the largest
f32 where the rational in f32 arithmetic is exactly 1 with nothing above 1 below it (found
by evaluating the shipped operations; see crates/jit/src/vmath/tanh.rs).

Run: python3 scripts/tanh_rational_fit.py [K M [clamp [iterations [E]]]]
     (needs mpmath; defaults 4 4 9.0111084 40 26, about 30 s)
"""
import struct
import sys

import mpmath as mp

mp.mp.dps = 40


def lawson(k, m, clamp, iterations, lead_t=None, points=1500):
    """The fit of the module doc: free when lead_t is None, else with P(0) = Q(0) = 1 and
    P's t^k coefficient lead_t. Returns P and Q in t, ascending, and the maximum relative
    error of the exact rational."""
    span = clamp * clamp
    a = [clamp * (1 - mp.cos(mp.pi * (i + mp.mpf(1) / 2) / points)) / 2 for i in range(points)]
    s = [x * x / span for x in a]  # t / clamp^2, in [0, 1]
    f = [mp.tanh(x) / x for x in a]
    fixed = lead_t is not None
    c = lead_t * span**k if fixed else None
    # Unknowns: P's free coefficients (p_0..p_k, or p_1..p_{k-1}), then q_1..q_m.
    p_powers = list(range(1, k)) if fixed else list(range(k + 1))
    n = len(p_powers) + m
    w = [mp.mpf(1)] * points
    q_prev = [mp.mpf(1)] * points
    err = []
    for it in range(iterations):
        normal = mp.zeros(n, n)
        rhs = mp.zeros(n, 1)
        for i in range(points):
            scale = mp.sqrt(w[i]) / (f[i] * q_prev[i])
            row = [scale * s[i] ** j for j in p_powers]
            row += [-scale * f[i] * s[i] ** j for j in range(1, m + 1)]
            target = f[i] - 1 - c * s[i] ** k if fixed else f[i]
            for r in range(n):
                rhs[r] += row[r] * scale * target
                for cc in range(r, n):
                    normal[r, cc] += row[r] * row[cc]
        for r in range(n):
            for cc in range(r):
                normal[r, cc] = normal[cc, r]
        x = mp.lu_solve(normal, rhs)
        free = [x[j] for j in range(len(p_powers))]
        p = [mp.mpf(1)] + free + [c] if fixed else free
        q = [mp.mpf(1)] + [x[len(p_powers) + j] for j in range(m)]
        big_p = [mp.polyval(p[::-1], t) for t in s]
        big_q = [mp.polyval(q[::-1], t) for t in s]
        err = [(big_p[i] / big_q[i] - f[i]) / f[i] for i in range(points)]
        w = [w[i] * abs(err[i]) for i in range(points)]
        total = sum(w)
        w = [v / total for v in w]
        q_prev = big_q
        if it % 10 == 9:
            worst = max(abs(e) for e in err)
            print(f"iteration {it + 1}: max relative error {mp.nstr(worst * 2**24, 5)} x 2^-24")
    p_t = [p[j] / span**j for j in range(k + 1)]
    q_t = [q[j] / span**j for j in range(m + 1)]
    return p_t, q_t, max(abs(e) for e in err)


def f32_bits(v):
    return "0x%08x" % struct.unpack("<I", struct.pack("<f", float(v)))[0]


def main():
    args = sys.argv[1:]
    k = int(args[0]) if len(args) > 0 else 4
    m = int(args[1]) if len(args) > 1 else 4
    clamp = mp.mpf(args[2]) if len(args) > 2 else mp.mpf("9.0111084")
    iterations = int(args[3]) if len(args) > 3 else 40
    lead_exponent = int(args[4]) if len(args) > 4 else (26 if (k, m) == (4, 4) else None)

    print("free fit:")
    p, q, _ = lawson(k, m, clamp, iterations)
    p0 = p[0]
    print("P =", [mp.nstr(v / p0, 20) for v in p])
    print("Q =", [mp.nstr(v / p0, 20) for v in q])
    if lead_exponent is None:
        return
    lead = mp.mpf(2) ** -lead_exponent
    print(f"leading coefficient of P fixed at 2^-{lead_exponent} (shipped):")
    p, q, _ = lawson(k, m, clamp, iterations, lead)
    print("P/lead (monic) =", [mp.nstr(v / lead, 20) for v in p[:-1]])
    print("Q/lead =", [mp.nstr(v / lead, 20) for v in q])
    print("as f32 bits: P/lead", [f32_bits(v / lead) for v in p[:-1]])
    print("as f32 bits: Q/lead", [f32_bits(v / lead) for v in q])


if __name__ == "__main__":
    main()
