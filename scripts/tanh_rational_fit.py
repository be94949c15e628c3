#!/usr/bin/env python3
"""Coefficients of graphlift-jit's f32 tanh (crates/jit/src/vmath/tanh.rs).

tanh(a) = a * P(a^2) / Q(a^2) on [0, clamp], P and Q of degree K and M in t = a^2, with
P(0) = 1 (Q(0) comes out as 1 to f32 precision). The fit minimises the maximum relative
error of P/Q against tanh(a)/a by Lawson's iteration on the linearised problem
(min sum w_i (P(t_i) - f_i Q(t_i))^2 / (f_i Q_prev(t_i))^2, then w_i *= |error_i|), in
40-digit arithmetic on Chebyshev-spaced points in a. It prints the maximum relative error
of the exact rational (in units of 2^-24) every ten iterations and the coefficients in t,
ascending, normalised to P(0) = 1. The shipped coefficients are these rounded to f32; their
error in f32 arithmetic is measured over every f32 by `graphlift accuracy tanh`.

Run: python3 scripts/tanh_rational_fit.py [K M [clamp [iterations [E]]]]
     (needs mpmath; defaults 4 4 9.0111084 40 26, about 30 s)

With E (the default for 4 4: 26), it also fits with P's leading coefficient fixed at 2^-E
(approximation error 0.83 x 2^-24 for E = 26, against 0.35 free) and prints the shipped
coefficients: that fit divided by 2^-E, so P is monic and P(0) = Q(0) = 2^E exactly.
"""
import struct
import sys

import mpmath as mp

mp.mp.dps = 40


def fit(k, m, clamp, iterations, points=1500):
    span = clamp * clamp
    a = [clamp * (1 - mp.cos(mp.pi * (i + mp.mpf(1) / 2) / points)) / 2 for i in range(points)]
    s = [x * x / span for x in a]  # t / clamp^2, in [0, 1]
    f = [mp.tanh(x) / x for x in a]
    w = [mp.mpf(1)] * points
    q_prev = [mp.mpf(1)] * points
    n = k + 1 + m
    for it in range(iterations):
        normal = mp.zeros(n, n)
        rhs = mp.zeros(n, 1)
        for i in range(points):
            scale = mp.sqrt(w[i]) / (f[i] * q_prev[i])
            row = [scale * s[i] ** j for j in range(k + 1)]
            row += [-scale * f[i] * s[i] ** j for j in range(1, m + 1)]
            for r in range(n):
                rhs[r] += row[r] * scale * f[i]
                for c in range(r, n):
                    normal[r, c] += row[r] * row[c]
        for r in range(n):
            for c in range(r):
                normal[r, c] = normal[c, r]
        x = mp.lu_solve(normal, rhs)
        p = [x[j] for j in range(k + 1)]
        q = [mp.mpf(1)] + [x[k + 1 + j] for j in range(m)]
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
    p0 = p_t[0]
    return [v / p0 for v in p_t], [v / p0 for v in q_t]


def main():
    args = sys.argv[1:]
    k = int(args[0]) if len(args) > 0 else 4
    m = int(args[1]) if len(args) > 1 else 4
    clamp = mp.mpf(args[2]) if len(args) > 2 else mp.mpf("9.0111084")
    iterations = int(args[3]) if len(args) > 3 else 40
    lead_exponent = int(args[4]) if len(args) > 4 else (26 if (k, m) == (4, 4) else None)
    p, q = fit(k, m, clamp, iterations)
    print("P =", [mp.nstr(v, 20) for v in p])
    print("Q =", [mp.nstr(v, 20) for v in q])
    if lead_exponent is not None:
        # The shipped form: P(0) = Q(0) = 1 and P's leading coefficient fixed at
        # 2^-lead_exponent, then both divided by it: P is monic (its Horner evaluation starts
        # with an addition) and P(0) = Q(0) = 2^lead_exponent exactly (tiny a give a).
        lead = mp.mpf(2) ** -lead_exponent
        p, q, worst = fit_fixed_lead(k, m, clamp, iterations, lead)
        print(f"fixed leading coefficient 2^-{lead_exponent}: max relative error "
              f"{mp.nstr(worst * 2**24, 5)} x 2^-24")
        print("P/lead (monic) =", [mp.nstr(v / lead, 20) for v in p[:-1]])
        print("Q/lead =", [mp.nstr(v / lead, 20) for v in q])
        print("as f32 bits: P/lead", [f32_bits(v / lead) for v in p[:-1]])
        print("as f32 bits: Q/lead", [f32_bits(v / lead) for v in q])


def f32_bits(v):
    return "0x%08x" % struct.unpack("<I", struct.pack("<f", float(v)))[0]


def fit_fixed_lead(k, m, clamp, iterations, lead_t, points=1500):
    """As fit, with P(0) = Q(0) = 1 and P's t^k coefficient fixed at lead_t."""
    span = clamp * clamp
    a = [clamp * (1 - mp.cos(mp.pi * (i + mp.mpf(1) / 2) / points)) / 2 for i in range(points)]
    s = [x * x / span for x in a]
    f = [mp.tanh(x) / x for x in a]
    c = lead_t * span**k
    w = [mp.mpf(1)] * points
    q_prev = [mp.mpf(1)] * points
    n = (k - 1) + m
    err = []
    for it in range(iterations):
        normal = mp.zeros(n, n)
        rhs = mp.zeros(n, 1)
        for i in range(points):
            scale = mp.sqrt(w[i]) / (f[i] * q_prev[i])
            row = [scale * s[i] ** j for j in range(1, k)]
            row += [-scale * f[i] * s[i] ** j for j in range(1, m + 1)]
            target = scale * (f[i] - 1 - c * s[i] ** k)
            for r in range(n):
                rhs[r] += row[r] * target
                for cc in range(r, n):
                    normal[r, cc] += row[r] * row[cc]
        for r in range(n):
            for cc in range(r):
                normal[r, cc] = normal[cc, r]
        x = mp.lu_solve(normal, rhs)
        p = [mp.mpf(1)] + [x[j] for j in range(k - 1)] + [c]
        q = [mp.mpf(1)] + [x[k - 1 + j] for j in range(m)]
        big_p = [mp.polyval(p[::-1], t) for t in s]
        big_q = [mp.polyval(q[::-1], t) for t in s]
        err = [(big_p[i] / big_q[i] - f[i]) / f[i] for i in range(points)]
        w = [w[i] * abs(err[i]) for i in range(points)]
        total = sum(w)
        w = [v / total for v in w]
        q_prev = big_q
    worst = max(abs(e) for e in err)
    p_t = [p[j] / span**j for j in range(k + 1)]
    q_t = [q[j] / span**j for j in range(m + 1)]
    return p_t, q_t, worst


if __name__ == "__main__":
    main()
