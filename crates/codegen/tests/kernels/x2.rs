//! The two-lane vector loop ([`Lanes::X2`]: `F64X2`, `I64X2`, `bool` as an `I64X2` mask).
//!
//! Every op on `f64`, `i64` and `bool` is run in a kernel that is asserted to have two
//! lanes (so a silent fall-back to the scalar loop fails the test), at every size around
//! the unrolled step of 4 elements, the single 2-element body and the 1-element tail, and
//! compared bit for bit with the interpreter on the special values (NaN, ±inf, ±0,
//! subnormals, `i64::MIN`/`MAX`, -1, 0). `bool` values only reach an `X2` kernel beside
//! 64-bit numbers (an all-`bool` kernel runs `X4`), so `bool` cases carry an `f64` anchor.

use graphlift_ir::{
    select, BinaryOp, CompareOp, ElementType, Function, FunctionBuilder, Op, TensorData, UnaryOp,
};

use super::{all_pairs, check, data, run_both, specials, Expect};
use graphlift_codegen::lanes::Lanes;
use graphlift_codegen::plan::plan_kernel;
use graphlift_codegen::JitKernel;
use graphlift_runtime::Tensor;
use ElementType::{Bool, F32, F64, I32, I64};

/// Whole-kernel sizes: empty, below one vector, every remainder of the unrolled step (4)
/// around one and two trips, and large odd ones.
const X2_SIZES: [usize; 12] = [0, 1, 2, 3, 4, 5, 6, 7, 9, 11, 13, 1001];

fn tensor(d: TensorData, shape: &[usize]) -> Tensor {
    Tensor::from_data(d, shape).unwrap()
}

/// Asserts that `body` compiles to a two-lane kernel, then checks it against the reference
/// over the whole range and sub-ranges of every length ([`check`]).
fn check_x2(what: &str, body: &Function, inputs: &[Tensor]) {
    check_x2_as(what, body, inputs, Expect::Exact);
}

/// [`check_x2`] with another comparison.
fn check_x2_as(what: &str, body: &Function, inputs: &[Tensor], expect: Expect) {
    let k = JitKernel::compile(body).unwrap_or_else(|e| panic!("{what}: compile: {e}"));
    assert_eq!(k.lanes(), 2, "{what}: not an X2 kernel:\n{}", k.ir());
    check(what, body, inputs, expect);
}

/// A parameter `z: f64[shape]` and a result `-z`, so that a kernel of `bool` values is an
/// `X2` kernel; its input is appended to the inputs.
fn anchor<'b>(b: &'b FunctionBuilder, shape: &[usize]) -> graphlift_ir::Value<'b> {
    -b.parameter("anchor", F64, shape)
}

fn anchor_input(shape: &[usize]) -> Tensor {
    let n = shape.iter().product();
    tensor(data(F64, n, 13), shape)
}

#[test]
fn lane_width_follows_the_element_types() {
    type Build = fn(&FunctionBuilder) -> Vec<graphlift_ir::Value<'_>>;
    let cases: [(&str, Build, Lanes); 9] = [
        (
            "f64 relu((a+b)*c)+d",
            |b| {
                let [a, bb, c, d] = ["a", "b", "c", "d"].map(|n| b.parameter(n, F64, [9]));
                vec![((a + bb) * c).relu() + d]
            },
            Lanes::X2,
        ),
        (
            "i64 arithmetic, division and power",
            |b| {
                let [x, y] = ["x", "y"].map(|n| b.parameter(n, I64, [9]));
                vec![(x * y - 3.0) / y, x.pow(y)]
            },
            Lanes::X2,
        ),
        (
            "f64 and i64 with bool inputs and outputs",
            |b| {
                let c = b.parameter("c", Bool, [9]);
                let x = b.parameter("x", F64, [9]);
                let i = b.parameter("i", I64, [9]);
                let lt = x.lt(i.convert(F64));
                vec![select(c, x, x.exp()), lt.and(c), x.convert(I64)]
            },
            Lanes::X2,
        ),
        (
            "f64 broadcast and scalar",
            |b| {
                let x = b.parameter("x", F64, [3, 5]);
                let row = b.parameter("row", F64, [5]);
                let s = b.parameter("s", F64, []);
                vec![x * row + s]
            },
            Lanes::X2,
        ),
        ("f32", |b| vec![b.parameter("x", F32, [9]).exp()], Lanes::X4),
        (
            "i32 and bool",
            |b| {
                let x = b.parameter("x", I32, [9]);
                vec![x.gt(x * 2.0)]
            },
            Lanes::X4,
        ),
        (
            "bool only",
            |b| {
                let p = b.parameter("p", Bool, [9]);
                vec![!p]
            },
            Lanes::X4,
        ),
        (
            "f32 and f64 mixed",
            |b| {
                let x = b.parameter("x", F32, [9]);
                vec![x.convert(F64) * 2.0]
            },
            Lanes::Mixed,
        ),
        (
            "i32 and i64 mixed",
            |b| {
                let x = b.parameter("x", I64, [9]);
                vec![x.convert(I32)]
            },
            Lanes::Mixed,
        ),
    ];
    for (what, build, lanes) in cases {
        let b = FunctionBuilder::new("lanes");
        let results = build(&b);
        let body = b.finish(&results).unwrap();
        assert_eq!(plan_kernel("k", &body).unwrap().lanes, lanes, "{what}");
        // (Cranelift's lanes: assembled code has eight or sixteen.)
        let cranelift = graphlift_kernels::target::Target::from_env().with_assembler(false);
        let k = JitKernel::compile_for(&body, &cranelift).unwrap();
        assert_eq!(k.lanes(), lanes.count(), "{what}");
        assert_eq!(k.is_vectorized(), lanes.is_vector(), "{what}");
        assert_eq!(k.is_mixed_width(), lanes == Lanes::Mixed, "{what}");
        if lanes == Lanes::X2 {
            let ir = k.ir();
            assert!(
                ir.contains("f64x2") || ir.contains("i64x2"),
                "{what}:\n{ir}"
            );
        }
    }
}

#[test]
fn every_unary_op_on_f64_and_i64_at_every_size() {
    for u in UnaryOp::ALL {
        for t in [F64, I64] {
            // The f64 vector math is approximate: tests::vmath_f64 and tests::ops check it
            // against MPFR.
            if !u.accepts(t) || graphlift_codegen::vmath::max_ulp(u, t).is_some() {
                continue;
            }
            for n in X2_SIZES {
                let b = FunctionBuilder::new(format!("{}_{t}", u.name()));
                let x = b.parameter("x", t, [n]);
                let body = b.finish(&[b.op(Op::Unary(u), &[x])]).unwrap();
                let ins = [tensor(data(t, n, n), &[n])];
                check_x2(&format!("{} {t} [{n}]", u.name()), &body, &ins);
            }
        }
    }
}

#[test]
fn every_binary_op_on_f64_and_i64_all_special_pairs_and_sizes() {
    for op in BinaryOp::ALL {
        for t in [F64, I64] {
            if !op.accepts(t) {
                continue;
            }
            let (a, bb) = all_pairs(t);
            let n = a.len();
            let b = FunctionBuilder::new(format!("{}_{t}", op.name()));
            let [x, y] = ["a", "b"].map(|p| b.parameter(p, t, [n]));
            let body = b.finish(&[b.op(Op::Binary(op), &[x, y])]).unwrap();
            let what = format!("{} {t} pairs", op.name());
            // Power on f64 is an inline approximation (vmath::pow); everything else exact.
            let expect = if op == BinaryOp::Power && t == F64 {
                Expect::PowF64
            } else {
                Expect::Exact
            };
            check_x2_as(&what, &body, &[tensor(a, &[n]), tensor(bb, &[n])], expect);
            for n in X2_SIZES {
                let b = FunctionBuilder::new(format!("{}_{t}", op.name()));
                let [x, y] = ["a", "b"].map(|p| b.parameter(p, t, [n]));
                let body = b.finish(&[b.op(Op::Binary(op), &[x, y])]).unwrap();
                let ins = [tensor(data(t, n, 1), &[n]), tensor(data(t, n, 6), &[n])];
                check_x2_as(&format!("{} {t} [{n}]", op.name()), &body, &ins, expect);
            }
        }
    }
}

#[test]
fn bool_logic_in_x2_kernels() {
    for n in X2_SIZES {
        let b = FunctionBuilder::new("bool_x2");
        let [p, q] = ["p", "q"].map(|name| b.parameter(name, Bool, [n]));
        let results = [!p, p.and(q), p.or(q), p.xor(q), anchor(&b, &[n])];
        let body = b.finish(&results).unwrap();
        let ins = [
            tensor(data(Bool, n, 0), &[n]),
            tensor(data(Bool, n, 3), &[n]),
            anchor_input(&[n]),
        ];
        check_x2(&format!("bool logic [{n}]"), &body, &ins);
    }
}

#[test]
fn every_compare_on_f64_i64_and_bool_all_special_pairs() {
    for op in CompareOp::ALL {
        for t in [F64, I64, Bool] {
            let (a, bb) = all_pairs(t);
            let n = a.len();
            let b = FunctionBuilder::new(format!("{}_{t}", op.name()));
            let [x, y] = ["a", "b"].map(|p| b.parameter(p, t, [n]));
            let cmp = b.op(Op::Compare(op), &[x, y]);
            let body = b.finish(&[cmp, anchor(&b, &[n])]).unwrap();
            let ins = [tensor(a, &[n]), tensor(bb, &[n]), anchor_input(&[n])];
            check_x2(&format!("{} {t}", op.name()), &body, &ins);
        }
    }
}

#[test]
fn select_on_f64_i64_and_bool_at_every_size() {
    for t in [F64, I64, Bool] {
        for n in X2_SIZES {
            let b = FunctionBuilder::new(format!("select_{t}"));
            let c = b.parameter("c", Bool, [n]);
            let [x, y] = ["a", "b"].map(|p| b.parameter(p, t, [n]));
            let body = b.finish(&[select(c, x, y), anchor(&b, &[n])]).unwrap();
            let ins = [
                tensor(data(Bool, n, 2), &[n]),
                tensor(data(t, n, 0), &[n]),
                tensor(data(t, n, 7), &[n]),
                anchor_input(&[n]),
            ];
            check_x2(&format!("Select {t} [{n}]"), &body, &ins);
        }
    }
}

#[test]
fn convert_between_f64_i64_and_bool() {
    for from in [F64, I64, Bool] {
        for to in [F64, I64, Bool] {
            for n in [3 * specials(from).len() + 201, 7, 2, 1] {
                let b = FunctionBuilder::new(format!("convert_{from}_{to}"));
                let x = b.parameter("x", from, [n]);
                let body = b.finish(&[x.convert(to), anchor(&b, &[n])]).unwrap();
                let ins = [tensor(data(from, n, 0), &[n]), anchor_input(&[n])];
                check_x2(&format!("Convert {from} -> {to} [{n}]"), &body, &ins);
            }
        }
    }
}

#[test]
fn integer_division_never_traps_in_either_lane_or_the_tail() {
    // Seven elements = one unrolled trip (4) + one 2-lane body + a 1-element tail: every
    // loop part sees x / 0 and MIN / -1.
    let xs = vec![7, i64::MIN, i64::MIN, 5, -7, i64::MIN, 9];
    let ys = vec![0i64, -1, 0, -1, 0, -1, 0];
    let b = FunctionBuilder::new("div");
    let [x, y] = ["x", "y"].map(|p| b.parameter(p, I64, [7]));
    let body = b.finish(&[x / y]).unwrap();
    let ins = [tensor(xs.into(), &[7]), tensor(ys.into(), &[7])];
    check_x2("div", &body, &ins);
    let (got, _) = run_both(&body, &ins);
    assert_eq!(
        got[0].read::<i64>().unwrap(),
        &[0, i64::MIN, 0, -5, 0, i64::MIN, 0]
    );
}

/// (source shape, target shape): splat, rows of 2, 3 and 5 (`X2` vectors that fit a row
/// and that wrap around it), rows longer than the unrolled step, columns and general maps.
const PATTERNS: &[(&[usize], &[usize])] = &[
    (&[], &[3, 5]),
    (&[1, 1], &[3, 3]),
    (&[2], &[5, 2]),
    (&[3], &[3, 3]),
    (&[5], &[3, 5]),
    (&[9], &[2, 9]),
    (&[3, 1], &[3, 5]),
    (&[2, 1, 3], &[2, 3, 3]),
    (&[1, 3, 1], &[2, 3, 3]),
];

#[test]
fn broadcast_inputs_on_f64_i64_and_bool() {
    for &(src, dst) in PATTERNS {
        let n: usize = dst.iter().product();
        let m: usize = src.iter().product();
        for t in [F64, I64, Bool] {
            let b = FunctionBuilder::new("bcast_x2");
            let x = b.parameter("x", t, dst);
            let p = b.parameter("p", t, src);
            let c = b.parameter("c", Bool, src);
            let r = match t {
                Bool => x.xor(p),
                _ => x - p,
            };
            let body = b
                .finish(&[r, p.lt(x), select(c, x, p), anchor(&b, dst)])
                .unwrap();
            let ins = [
                tensor(data(t, n, 0), dst),
                tensor(data(t, m, 11), src),
                tensor(data(Bool, m, 5), src),
                anchor_input(dst),
            ];
            check_x2(&format!("{t} {src:?} -> {dst:?}"), &body, &ins);
        }
    }
}

#[test]
fn invariants_computed_before_the_loop_include_per_lane_ops() {
    // Splat scalars through invariant ops (sqrt, floor), integer power (a host helper),
    // integer division and f64 -> i64 conversion: per-lane lowerings of invariant slots,
    // computed once before the loop; and a constant row of 3 read in place.
    for m in [1, 2, 13] {
        let shape = [m, 3];
        let b = FunctionBuilder::new("invariants");
        let x = b.parameter("x", F64, shape);
        let i = b.parameter("i", I64, shape);
        let s = b.parameter("s", F64, []);
        let k = b.parameter("k", I64, []);
        let row = b.constant(vec![1.5f64, f64::NAN, -0.0], [3]);
        let body = b
            .finish(&[
                x * s.abs().sqrt() + s.floor(),
                i / k + (s * 1e19).convert(I64),
                i.pow(k).max(i),
                (x + row).ge(x).or(k.lt(i)),
            ])
            .unwrap();
        for (sv, kv) in [(2.5, 3i64), (f64::NAN, 0), (-700.0, -1), (1e300, i64::MIN)] {
            let ins = [
                tensor(data(F64, 3 * m, 0), &shape),
                tensor(data(I64, 3 * m, 4), &shape),
                tensor(vec![sv].into(), &[]),
                tensor(vec![kv].into(), &[]),
            ];
            check_x2(&format!("invariants [{m}, 3] s={sv} k={kv}"), &body, &ins);
        }
    }
}

#[test]
fn a_fused_f64_expression_matches_the_interpreter() {
    // The benchmark kernel, relu((a + b) * c) + d, and a chain through every kind of op.
    for n in X2_SIZES {
        let b = FunctionBuilder::new("e1_f64");
        let [a, bb, c, d] = ["a", "b", "c", "d"].map(|p| b.parameter(p, F64, [n]));
        let i = b.parameter("i", I64, [n]);
        let t = ((a + bb) * c).relu() + d;
        let q = (i * 3.0 - i.abs()) / (i.sign() + 2.0);
        let body = b
            .finish(&[
                t,
                select(t.gt(d), t.sqrt(), (q.convert(F64) / a).round()),
                q.max(i.relu()),
                t.abs().min(a.floor()),
            ])
            .unwrap();
        let ins: Vec<Tensor> = (0..4)
            .map(|k| tensor(data(F64, n, 3 * k), &[n]))
            .chain([tensor(data(I64, n, 2), &[n])])
            .collect();
        check_x2(&format!("fused f64 [{n}]"), &body, &ins);
    }
}
