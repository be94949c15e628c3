#!/usr/bin/env python3
"""Random elementwise expressions timed beside C (issue 27: any expression within 1.5x of C at
2^14 elements, 1.15x at 2^24, one thread).

    bench-random-exprs.py GRAPHLIFT [--seed 1] [--count 12] [--n 16384,16777216] [--rounds 3]

Each expression is a random tree, three or four levels deep, over x: f32[R, 1024] and b, a
row (f32[1024]) or a column (f32[R, 1]) broadcast over x, and constants: unary Tanh,
Sigmoid, Erf, Abs, Neg, Softplus, Sin, Cos, Exp (of bounded values only), log(1 + v²),
log(1 + |v|), e^v − 1, √|v|; binary +, −, ·, v / (|w| + 1), Max, Min and (|v| + 0.5)^tanh(w).
Arguments are kept inside each function's domain so that every output is finite, as the
protocol requires. The ONNX file is timed with `graphlift bench-expr FILE N`, and the same
expression as a C loop built as `bench-exprs.py vs-c` builds its expressions (gcc -O3
-march=native -ffast-math with glibc's vector math). The table gives ns per element and the
ratio of graphlift to C, and the C expression. Note that `-ffast-math` lets gcc rewrite what
graphlift must not (`b − b` to 0, a division by a loop invariant to a product), so a large
ratio names a case to look at, not yet a defect. Same seed, same expressions.
"""
import argparse
import importlib.util
import os
import random
import tempfile

_spec = importlib.util.spec_from_file_location(
    "bench_exprs", os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench-exprs.py"))
be = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(be)


def leaf(rng):
    """(build, C expression, bounded): x, b or a constant."""
    kind = rng.choice(["x", "x", "b", "k"])
    if kind == "k":
        v = round(rng.uniform(-2, 2), 3) or 0.5
        return (lambda g: g.const(v)), f"{v}f", True
    return (lambda g: kind), ("X" if kind == "x" else "B"), True


def unary(rng, depth):
    a, ca, bounded = tree(rng, depth - 1)
    ops = ["Tanh", "Sigmoid", "Erf", "Abs", "Neg", "Softplus", "Sqrt", "Log", "Log1p", "Sin",
           "Cos"] + (["Exp", "Exp", "Expm1"] if bounded else [])
    op = rng.choice(ops)
    if op == "Sqrt":
        return (lambda g: g.op("Sqrt", g.op("Abs", a(g)))), f"F(sqrt)(F(fabs)({ca}))", False
    if op == "Log":
        return ((lambda g: g.op("Log", g.op("Add", g.op("Mul", a(g), a(g)), 1.0))),
                f"F(log)(({ca}) * ({ca}) + 1)", False)
    if op == "Log1p":
        return ((lambda g: g.op("Log", g.op("Add", g.op("Abs", a(g)), 1.0))),
                f"F(log1p)(F(fabs)({ca}))", False)
    if op == "Expm1":
        return (lambda g: g.op("Sub", g.op("Exp", a(g)), 1.0)), f"F(expm1)({ca})", False
    if op == "Softplus":
        c = f"(F(log1p)(F(exp)(-F(fabs)({ca}))) + (({ca}) > 0 ? ({ca}) : 0))"
        return (lambda g: g.op("Softplus", a(g))), c, bounded
    if op == "Sigmoid":
        return (lambda g: g.op("Sigmoid", a(g))), f"(1 / (1 + F(exp)(-({ca}))))", True
    c = {"Tanh": "F(tanh)", "Erf": "F(erf)", "Abs": "F(fabs)", "Neg": "-", "Sin": "F(sin)",
         "Cos": "F(cos)", "Exp": "F(exp)"}[op]
    stays = op in ("Tanh", "Erf", "Sin", "Cos") or (bounded and op in ("Abs", "Neg"))
    return (lambda g: g.op(op, a(g))), f"{c}({ca})", stays


def binary(rng, depth):
    (a, ca, ba), (b, cb, bb) = tree(rng, depth - 1), tree(rng, depth - 1)
    op = rng.choice(["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"])
    if op == "Div":
        return ((lambda g: g.op("Div", a(g), g.op("Add", g.op("Abs", b(g)), 1.0))),
                f"({ca}) / (F(fabs)({cb}) + 1)", ba)
    if op == "Pow":
        return ((lambda g: g.op("Pow", g.op("Add", g.op("Abs", a(g)), 0.5), g.op("Tanh", b(g)))),
                f"F(pow)(F(fabs)({ca}) + 0.5f, F(tanh)({cb}))", False)
    if op in ("Max", "Min"):
        c = "F(fmax)" if op == "Max" else "F(fmin)"
        return (lambda g: g.op(op, a(g), b(g))), f"{c}({ca}, {cb})", ba and bb
    sym = {"Add": "+", "Sub": "-", "Mul": "*"}[op]
    return ((lambda g: g.op(op, a(g), b(g))), f"(({ca}) {sym} ({cb}))",
            ba and bb and op != "Mul")


def tree(rng, depth):
    """A random expression of at most `depth` levels: (build(g) -> name, C, bounded), where
    `bounded` says that its values stay small enough for `exp`."""
    if depth == 0 or rng.random() < 0.2:
        return leaf(rng)
    return unary(rng, depth) if rng.random() < 0.4 else binary(rng, depth)


def expressions(seed, count):
    """`count` expressions of x with at least two function calls: (name, b's kind, build, C)."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        build, c, _ = tree(rng, rng.choice([3, 4]))
        if "X" in c and c.count("F(") >= 2:
            out.append((f"R{len(out)}", rng.choice(["row", "col"]), build, c))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("graphlift")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=12)
    p.add_argument("--n", type=lambda s: [int(v) for v in s.split(",")],
                   default=[1 << 14, 1 << 24])
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    exprs = expressions(args.seed, args.count)
    with tempfile.TemporaryDirectory() as tmp:
        programs = {}
        for n in args.n:
            rows = n // be.COLS
            for name, kind, build, c in exprs:
                g = be.Graph()
                b_shape = [be.COLS] if kind == "row" else [rows, 1]
                path = os.path.join(tmp, f"{name}_{n}.onnx")
                model = g.model(build(g), [("x", [rows, be.COLS]), ("b", b_shape)],
                                [rows, be.COLS])
                be.onnx.save(model, path)
                programs[(n, name, "graphlift")] = [args.graphlift, "bench-expr", path, str(n)]
                programs[(n, name, "C")] = [be.c_program(tmp, name, c, kind), str(n)]
        got = be.medians(programs, args.rounds)
    sizes = " | ".join(f"2^{n.bit_length() - 1}: graphlift / C (ratio)" for n in args.n)
    print(f"| expr | b | {sizes} | C expression |")
    print("|---|---|" + "---|" * len(args.n) + "---|")
    for name, kind, _, c in exprs:
        cells = []
        for n in args.n:
            gl, cc = got[(n, name, "graphlift")], got[(n, name, "C")]
            cells.append(f"{gl:.3f} / {cc:.3f} ({gl / cc:.2f})")
        print(f"| {name} | {kind} | " + " | ".join(cells) + f" | `{c}` |")


if __name__ == "__main__":
    main()
