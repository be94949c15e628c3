#!/usr/bin/env python3
"""Elementwise expressions timed through `graphlift bench-expr FILE.onnx N` (issue 27).

    bench-exprs.py spellings GRAPHLIFT [--n 16384,1048576] [--rounds 3]
    bench-exprs.py vs-c GRAPHLIFT [--base BASE] [--n 16384,16777216] [--rounds 3]
    bench-exprs.py functions GRAPHLIFT [--base BASE] [--n 16384,16777216] [--rounds 3]
                   [--peers ../shared/peers]

`spellings`: the graphs PyTorch, TensorFlow/Keras (tf2onnx) and PaddlePaddle (paddle2onnx)
export for one activation (SiLU, Swish, GELU-erf, GELU-tanh, HardSigmoid, HardSwish, Softplus,
Mish), each timed on x: f32[N]; the table gives ns per element and the ratio to the
fastest spelling of the same function (issue 27: every spelling within 1.1x of the best).

`functions`: each function of issue 27's list alone (exp, log, log1p, expm1, tanh, erf, sigmoid,
softplus, pow; and √ and a division), beside its C loop built as `vs-c` builds its expressions.

`vs-c`: E1-E4 (`bench-expr E1 N` beside the peers' own C program `cexternal`) and the
expressions of EXPRESSIONS below, outside the library's forms (transcendental functions and
broadcasts), beside a C loop of the same expression built with `gcc -O3 -march=native
-ffast-math -fopenmp-simd` and `#pragma omp simd` (so gcc calls glibc's 16-lane vector math,
libmvec, for the functions; without it the loops keep scalar calls), run as its own process
with the peers' protocol (inputs N(0, 1) from a fixed seed, checked against a float64
reference, seven batches of at least 20 ms, the median batch). `--base` times a second
graphlift binary (an earlier build) in the same rounds. Issue 27: within 1.5x of C at 2^14
and 1.15x at 2^24, on one thread.

Both run every program once per round, rounds interleaved, and report the median over rounds
(GRAPHLIFT_NUM_THREADS=1). The ONNX files and C programs go to a temporary directory. Needs
the `onnx` module (target/models/venv/bin/python has it) and, for `vs-c`, gcc.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

import onnx
from onnx import TensorProto, helper

COLS = 1024

# ---------------------------------------------------------------------------- ONNX building


class Graph:
    """A small ONNX graph under construction: nodes, scalar constants, one output `y`."""

    def __init__(self):
        self.nodes, self.inits, self.k = [], [], 0

    def const(self, v):
        name = f"c{len(self.inits)}"
        self.inits.append(helper.make_tensor(name, TensorProto.FLOAT, [], [float(v)]))
        return name

    def op(self, op_type, *ins, **attrs):
        self.k += 1
        out = f"t{self.k}"
        args = [i if isinstance(i, str) else self.const(i) for i in ins]
        self.nodes.append(helper.make_node(op_type, args, [out], **attrs))
        return out

    def model(self, y, inputs, out_shape, opset=18):
        self.nodes.append(helper.make_node("Identity", [y], ["y"]))
        g = helper.make_graph(
            self.nodes, "expr",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
            initializer=self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def clip(g, x, lo, hi):
    return g.op("Clip", x, g.const(lo), g.const(hi))


def tanh_gelu_inner(g, x, cube):
    inner = g.op("Add", x, g.op("Mul", cube, 0.044715))
    return g.op("Tanh", g.op("Mul", inner, 0.7978845608028654))


# Each spelling: (function, spelling, exporter, build(g, x) -> output name, opset).
SPELLINGS = [
    ("SiLU", "Mul(x, Sigmoid(x))", "PyTorch, tf2onnx, paddle2onnx",
     lambda g, x: g.op("Mul", x, g.op("Sigmoid", x)), 18),
    ("SiLU", "Mul(Sigmoid(x), x)", "commuted",
     lambda g, x: g.op("Mul", g.op("Sigmoid", x), x), 18),
    ("SiLU", "Div(x, 1 + Exp(-x))", "written out",
     lambda g, x: g.op("Div", x, g.op("Add", g.op("Exp", g.op("Neg", x)), 1.0)), 18),
    ("Swish", "Mul(x, Sigmoid(Mul(x, 1.702)))", "PyTorch (CLIP's QuickGELU), tf2onnx (swish β)",
     lambda g, x: g.op("Mul", x, g.op("Sigmoid", g.op("Mul", x, 1.702))), 18),
    ("Swish", "Mul(Sigmoid(Mul(1.702, x)), x)", "commuted",
     lambda g, x: g.op("Mul", g.op("Sigmoid", g.op("Mul", 1.702, x)), x), 18),
    ("Swish", "Div(x, 1 + Exp(-(x·1.702)))", "written out",
     lambda g, x: g.op("Div", x, g.op("Add", 1.0, g.op("Exp", g.op("Neg", g.op("Mul", x, 1.702))))), 18),
    ("GELU-erf", "x*0.5*(1+erf(x/√2))", "PyTorch",
     lambda g, x: g.op("Mul", g.op("Mul", x, g.op("Add", g.op("Erf", g.op("Div", x, 1.4142135623730951)), 1.0)), 0.5), 18),
    ("GELU-erf", "(0.5*x)*(1+erf(x/√2))", "tf2onnx (tf.nn.gelu)",
     lambda g, x: g.op("Mul", g.op("Mul", 0.5, x), g.op("Add", 1.0, g.op("Erf", g.op("Div", x, 1.4142135623730951)))), 18),
    ("GELU-erf", "x*(1+erf(x·(1/√2)))*0.5", "paddle2onnx",
     lambda g, x: g.op("Mul", g.op("Mul", x, g.op("Add", g.op("Erf", g.op("Mul", x, 0.7071067811865476)), 1.0)), 0.5), 18),
    ("GELU-erf", "Gelu (opset 20)", "ONNX op",
     lambda g, x: g.op("Gelu", x), 20),
    ("GELU-tanh", "Pow(x, 3)", "PyTorch gelu_new (Hugging Face)",
     lambda g, x: g.op("Mul", g.op("Mul", 0.5, x), g.op("Add", 1.0, tanh_gelu_inner(g, x, g.op("Pow", x, 3.0)))), 18),
    ("GELU-tanh", "x*x*x", "tf2onnx (approximate=True)",
     lambda g, x: g.op("Mul", g.op("Mul", 0.5, x), g.op("Add", 1.0, tanh_gelu_inner(g, x, g.op("Mul", g.op("Mul", x, x), x)))), 18),
    ("GELU-tanh", "Gelu tanh (opset 20)", "ONNX op",
     lambda g, x: g.op("Gelu", x, approximate="tanh"), 20),
    ("HardSigmoid", "HardSigmoid(α=1/6, β=0.5)", "PyTorch, paddle2onnx",
     lambda g, x: g.op("HardSigmoid", x, alpha=1.0 / 6.0, beta=0.5), 18),
    ("HardSigmoid", "Clip(x+3, 0, 6)/6", "tf2onnx (Keras 3 relu6(x+3)/6)",
     lambda g, x: g.op("Div", clip(g, g.op("Add", x, 3.0), 0.0, 6.0), 6.0), 18),
    ("HardSigmoid", "Clip(x/6+0.5, 0, 1)", "written out",
     lambda g, x: clip(g, g.op("Add", g.op("Div", x, 6.0), 0.5), 0.0, 1.0), 18),
    ("HardSwish", "HardSwish", "PyTorch, paddle2onnx (opset 14+)",
     lambda g, x: g.op("HardSwish", x), 18),
    ("HardSwish", "x*Clip(x+3, 0, 6)/6", "PyTorch before opset 14, paddle2onnx",
     lambda g, x: g.op("Div", g.op("Mul", x, clip(g, g.op("Add", x, 3.0), 0.0, 6.0)), 6.0), 18),
    ("HardSwish", "x*(Clip(x+3, 0, 6)/6)", "tf2onnx (Keras hard_swish)",
     lambda g, x: g.op("Mul", x, g.op("Div", clip(g, g.op("Add", x, 3.0), 0.0, 6.0), 6.0)), 18),
    ("HardSwish", "x*HardSigmoid(x)", "written out",
     lambda g, x: g.op("Mul", x, g.op("HardSigmoid", x, alpha=1.0 / 6.0, beta=0.5)), 18),
    ("Softplus", "Softplus", "PyTorch, tf2onnx, paddle2onnx",
     lambda g, x: g.op("Softplus", x), 18),
    ("Softplus", "Log(Exp(x) + 1)", "written out",
     lambda g, x: g.op("Log", g.op("Add", g.op("Exp", x), 1.0)), 18),
    ("Mish", "Mish (opset 18)", "PyTorch, paddle2onnx",
     lambda g, x: g.op("Mish", x), 18),
    ("Mish", "x*Tanh(Softplus(x))", "PyTorch before opset 18, tf2onnx (tfa)",
     lambda g, x: g.op("Mul", x, g.op("Tanh", g.op("Softplus", x))), 18),
    ("Mish", "Tanh(Softplus(x))*x", "commuted",
     lambda g, x: g.op("Mul", g.op("Tanh", g.op("Softplus", x)), x), 18),
]

# Expressions outside the library's forms: (name, formula, inputs, build, C expression).
# Inputs: "x" is f32[R, 1024]; "b" is f32[1024] (a row, broadcast over rows) or f32[R, 1]
# (a column, broadcast along rows). The C expression reads x, b (as X and B), with F(name)
# for a math function, so one string gives the float kernel and the double reference.
EXPRESSIONS = [
    ("X1", "softplus(x)·tanh(b_row) + √|x|", "row",
     lambda g: g.op("Add", g.op("Mul", g.op("Softplus", "x"), g.op("Tanh", "b")), g.op("Sqrt", g.op("Abs", "x"))),
     "(F(log1p)(F(exp)(-F(fabs)(X))) + (X > 0 ? X : 0)) * F(tanh)(B) + F(sqrt)(F(fabs)(X))"),
    ("X2", "log(1 + x²)·sigmoid(b_col) − erf(x)/2", "col",
     lambda g: g.op("Sub", g.op("Mul", g.op("Log", g.op("Add", g.op("Mul", "x", "x"), 1.0)), g.op("Sigmoid", "b")),
                    g.op("Mul", g.op("Erf", "x"), 0.5)),
     "F(log)(1 + X * X) * (1 / (1 + F(exp)(-B))) - F(erf)(X) * 0.5"),
    ("X3", "e^(−x²)·cos(x) + |x|^b_row", "row",
     lambda g: g.op("Add", g.op("Mul", g.op("Exp", g.op("Neg", g.op("Mul", "x", "x"))), g.op("Cos", "x")),
                    g.op("Pow", g.op("Abs", "x"), "b")),
     "F(exp)(-X * X) * F(cos)(X) + F(pow)(F(fabs)(X), B)"),
    ("X4", "x·tanh(softplus(x)) + b_row (Mish + bias)", "row",
     lambda g: g.op("Add", g.op("Mul", "x", g.op("Tanh", g.op("Softplus", "x"))), "b"),
     "X * F(tanh)(F(log1p)(F(exp)(-F(fabs)(X))) + (X > 0 ? X : 0)) + B"),
    ("X5", "(e^x − 1)·log(|b_col| + 1) / (1 + x²)", "col",
     lambda g: g.op("Div", g.op("Mul", g.op("Sub", g.op("Exp", "x"), 1.0), g.op("Log", g.op("Add", g.op("Abs", "b"), 1.0))),
                    g.op("Add", g.op("Mul", "x", "x"), 1.0)),
     "(F(exp)(X) - 1) * F(log)(F(fabs)(B) + 1) / (1 + X * X)"),
]

# Each function of issue 27's list alone (and the square root and a division), in the same
# form as EXPRESSIONS: its arguments kept in its domain, `b` a row where it takes one.
FUNCTIONS = [
    ("exp", "e^x", "row", lambda g: g.op("Exp", "x"), "F(exp)(X)"),
    ("log", "log(1 + x²)", "row",
     lambda g: g.op("Log", g.op("Add", g.op("Mul", "x", "x"), 1.0)), "F(log)(X * X + 1)"),
    ("log1p", "log(1 + |x|)", "row",
     lambda g: g.op("Log", g.op("Add", g.op("Abs", "x"), 1.0)), "F(log1p)(F(fabs)(X))"),
    ("expm1", "e^x − 1", "row", lambda g: g.op("Sub", g.op("Exp", "x"), 1.0), "F(expm1)(X)"),
    ("tanh", "tanh(x)", "row", lambda g: g.op("Tanh", "x"), "F(tanh)(X)"),
    ("erf", "erf(x)", "row", lambda g: g.op("Erf", "x"), "F(erf)(X)"),
    ("sigmoid", "sigmoid(x)", "row", lambda g: g.op("Sigmoid", "x"), "(1 / (1 + F(exp)(-X)))"),
    ("softplus", "Softplus(x)", "row", lambda g: g.op("Softplus", "x"),
     "(F(log1p)(F(exp)(-F(fabs)(X))) + (X > 0 ? X : 0))"),
    ("pow", "(|x| + 0.5)^b_row", "row",
     lambda g: g.op("Pow", g.op("Add", g.op("Abs", "x"), 0.5), "b"), "F(pow)(F(fabs)(X) + 0.5f, B)"),
    ("sqrt", "√|x|", "row", lambda g: g.op("Sqrt", g.op("Abs", "x")), "F(sqrt)(F(fabs)(X))"),
    ("div", "x / (|b_row| + 1)", "row",
     lambda g: g.op("Div", "x", g.op("Add", g.op("Abs", "b"), 1.0)), "X / (F(fabs)(B) + 1)"),
]

# ---------------------------------------------------------------------------- running


def ns_per_element(cmd):
    """Runs `cmd` (a list) and returns the last `ns_per_element=` value it prints."""
    env = dict(os.environ, GRAPHLIFT_NUM_THREADS="1")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    found = re.findall(r"ns_per_element=([0-9.eE+-]+)", p.stdout)
    if p.returncode != 0 or not found:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return float(found[-1])


def medians(programs, rounds):
    """{key: median ns/element} over `rounds` interleaved rounds of every program."""
    seen = {k: [] for k in programs}
    for r in range(rounds):
        for k, cmd in programs.items():
            seen[k].append(ns_per_element(cmd))
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)
    return {k: statistics.median(v) for k, v in seen.items()}


def spellings(args, tmp):
    programs = {}
    for n in args.n:
        for i, (fn, spelling, _, build, opset) in enumerate(SPELLINGS):
            g = Graph()
            path = os.path.join(tmp, f"s{i}_{n}.onnx")
            onnx.save(g.model(build(g, "x"), [("x", [n])], [n], opset), path)
            programs[(n, i)] = [args.graphlift, "bench-expr", path, str(n)]
    got = medians(programs, args.rounds)
    print("| function | spelling | exporter | " + " | ".join(f"2^{n.bit_length() - 1} ns/el (ratio)" for n in args.n) + " |")
    print("|---|---|---|" + "---|" * len(args.n))
    for i, (fn, spelling, exporter, _, _) in enumerate(SPELLINGS):
        cells = []
        for n in args.n:
            best = min(got[(n, j)] for j, s in enumerate(SPELLINGS) if s[0] == fn)
            cells.append(f"{got[(n, i)]:.3f} ({got[(n, i)] / best:.2f})")
        print(f"| {fn} | `{spelling}` | {exporter} | " + " | ".join(cells) + " |")


C_HARNESS = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
void kernel(long rows, const float *x, const float *b, float *y);
static unsigned long long state = 0x2545F4914F6CDD1Dull;
static double uniform(void) {
    state ^= state << 13; state ^= state >> 7; state ^= state << 17;
    return ((state >> 11) + 0.5) / 9007199254740992.0;
}
static void normal(float *p, long n) {
    for (long i = 0; i < n; i++)
        p[i] = (float)(sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform()));
}
static double seconds(void) {
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec;
}
static int by_value(const void *a, const void *b) {
    double p = *(const double *)a, q = *(const double *)b; return (p > q) - (p < q);
}
#define F(name) name
int main(int argc, char **argv) {
    long n = atol(argv[1]), rows = n / 1024, nb = BROWS ? rows : 1024;
    float *x = aligned_alloc(64, n * 4), *y = aligned_alloc(64, n * 4), *b = aligned_alloc(64, 64 * ((nb * 4 + 63) / 64));
    normal(x, n); normal(b, nb);
    kernel(rows, x, b, y);
    double worst = 0;
    for (long r = 0; r < rows; r++) for (long j = 0; j < 1024; j++) {
        double X = x[r * 1024 + j], B = b[BROWS ? r : j];
        double ref = (EXPR), got = y[r * 1024 + j];
        if (!isfinite(got)) { fprintf(stderr, "not finite at %ld\n", r * 1024 + j); return 1; }
        double e = fabs(got - ref) / (1 + fabs(ref)); if (e > worst) worst = e;
    }
    if (worst > 1e-3) { fprintf(stderr, "error %g\n", worst); return 1; }
    long calls = 1; double t0 = seconds();
    while (seconds() - t0 < 0.01) kernel(rows, x, b, y);
    for (;;) { t0 = seconds(); for (long i = 0; i < calls; i++) kernel(rows, x, b, y);
               if (seconds() - t0 >= 0.02) break; calls *= 2; }
    double per[7];
    for (int k = 0; k < 7; k++) { t0 = seconds(); for (long i = 0; i < calls; i++) kernel(rows, x, b, y);
                                  per[k] = (seconds() - t0) / calls; }
    qsort(per, 7, sizeof per[0], by_value);
    printf("ns_per_element=%.6f\n", per[3] * 1e9 / n);
    return 0;
}
"""

C_KERNEL = r"""
#include <math.h>
#define F(name) name##f
void kernel(long rows, const float *restrict x, const float *restrict b, float *restrict y) {
    for (long r = 0; r < rows; r++) {
        const float *xr = x + r * 1024; float *yr = y + r * 1024;
        #pragma omp simd
        for (long j = 0; j < 1024; j++) { float X = xr[j], B = b[BROWS ? r : j]; yr[j] = (EXPR); }
    }
}
"""


def c_program(tmp, name, expr, kind):
    """Builds the C program of one expression: the kernel with -ffast-math, the harness
    without (so the process keeps IEEE subnormals, as the peers' `cexternal`)."""
    brows = "1" if kind == "col" else "0"
    defs = [f"-DBROWS={brows}"]
    src_k = os.path.join(tmp, f"{name}_k.c")
    src_h = os.path.join(tmp, f"{name}_h.c")
    with open(src_k, "w") as f:
        f.write(C_KERNEL.replace("(EXPR)", f"({expr})").replace("BROWS ?", f"{brows} ?"))
    with open(src_h, "w") as f:
        f.write(C_HARNESS.replace("(EXPR)", f"({expr})"))
    obj, exe = os.path.join(tmp, f"{name}_k.o"), os.path.join(tmp, name)
    subprocess.run(["gcc", "-O3", "-march=native", "-ffast-math", "-fopenmp-simd", "-c", src_k, "-o", obj],
                   check=True)
    subprocess.run(["gcc", "-O2", *defs, src_h, obj, "-o", exe, "-lmvec", "-lm"], check=True)
    return exe


def peers_cexternal(tmp, peers):
    """The peers' own C program for E1-E4, built as `../shared/peers/run.sh` builds it."""
    obj, exe = os.path.join(tmp, "k_fast.o"), os.path.join(tmp, "cexternal")
    subprocess.run(["gcc", "-O3", "-march=native", "-ffast-math", "-DSFX=_fast", "-c",
                    os.path.join(peers, "kernels.c"), "-o", obj], check=True)
    subprocess.run(["gcc", "-O2", "-o", exe, os.path.join(peers, "cexternal.c"), obj, "-lm"], check=True)
    return exe


def vs_c(args, tmp):
    """`vs-c`: E1-E4 and EXPRESSIONS; `functions`: FUNCTIONS."""
    programs = {}
    peers = ["E1", "E2", "E3", "E4"] if args.mode == "vs-c" else []
    exprs = EXPRESSIONS if args.mode == "vs-c" else FUNCTIONS
    cext = peers_cexternal(tmp, args.peers) if peers else None
    builds = [("graphlift", args.graphlift)] + ([("base", args.base)] if args.base else [])
    for n in args.n:
        rows = n // COLS
        for e in peers:
            for build, binary in builds:
                programs[(n, e, build)] = [binary, "bench-expr", e, str(n)]
            programs[(n, e, "C")] = [cext, e, str(n)]
        for name, _, kind, build, expr in exprs:
            g = Graph()
            b_shape = [COLS] if kind == "row" else [rows, 1]
            path = os.path.join(tmp, f"{name}_{n}.onnx")
            onnx.save(g.model(build(g), [("x", [rows, COLS]), ("b", b_shape)], [rows, COLS]), path)
            for build, binary in builds:
                programs[(n, name, build)] = [binary, "bench-expr", path, str(n)]
            programs[(n, name, "C")] = [c_program(tmp, name, expr, kind), str(n)]
    got = medians(programs, args.rounds)
    base = " (base)" if args.base else ""
    print("| expr | what | " + " | ".join(f"2^{n.bit_length() - 1}: graphlift{base} / C ns/el (ratio)" for n in args.n) + " |")
    print("|---|---|" + "---|" * len(args.n))
    table = [(e, "peers' " + e) for e in peers] + [(e[0], e[1]) for e in exprs]
    for name, what in table:
        cells = []
        for n in args.n:
            gl, c = got[(n, name, "graphlift")], got[(n, name, "C")]
            was = f" ({got[(n, name, 'base')]:.3f})" if args.base else ""
            cells.append(f"{gl:.3f}{was} / {c:.3f} ({gl / c:.2f})")
        # (A pipe inside a cell is escaped: Markdown would split the cell there.)
        what = what.replace("|", "\\|")
        print(f"| {name} | {what} | " + " | ".join(cells) + " |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["spellings", "vs-c", "functions"])
    p.add_argument("graphlift")
    p.add_argument("--n", type=lambda s: [int(v) for v in s.split(",")])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--base", help="a second graphlift binary timed in the same rounds (vs-c, functions)")
    p.add_argument("--peers", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "peers"))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.mode == "spellings":
            args.n = args.n or [1 << 14, 1 << 20]
            spellings(args, tmp)
        else:
            args.n = args.n or [1 << 14, 1 << 24]
            vs_c(args, tmp)


if __name__ == "__main__":
    main()
