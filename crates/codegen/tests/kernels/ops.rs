//! Every op on every element type it accepts, special values included.

use super::{all_pairs, check, data, specials, Expect, SIZES};
use graphlift_codegen::vmath;
use graphlift_ir::{BinaryOp, CompareOp, ElementType, FunctionBuilder, Op, UnaryOp};
use graphlift_runtime::reference;
use graphlift_runtime::Tensor;

fn tensor(d: graphlift_ir::TensorData) -> Tensor {
    let n = d.len();
    Tensor::from_data(d, [n]).unwrap()
}

/// Inputs of `n` elements for each of the types, at different phases.
fn inputs(types: &[ElementType], n: usize) -> Vec<Tensor> {
    types
        .iter()
        .enumerate()
        .map(|(k, &t)| tensor(data(t, n, 5 * k)))
        .collect()
}

fn unary_case(u: UnaryOp, t: ElementType, n: usize) {
    let b = FunctionBuilder::new(format!("{}_{t}", u.name()));
    let x = b.parameter("x", t, [n]);
    let body = b.finish(&[b.op(Op::Unary(u), &[x])]).unwrap();
    let ins = inputs(&[t], n);
    let what = format!("{} {t} [{n}]", u.name());
    match vmath::max_ulp(u, t) {
        Some(bound) if t == ElementType::F64 => {
            check(&what, &body, &ins, Expect::UlpF64(bound, u));
        }
        Some(bound) if t == ElementType::F32 => {
            let graphlift_ir::TensorData::F32(xs) = ins[0].data().clone() else {
                unreachable!()
            };
            let exact = move |i: usize| reference::unary_f64(u, f64::from(xs[i]));
            check(&what, &body, &ins, Expect::Ulp(bound, &exact));
        }
        _ => check(&what, &body, &ins, Expect::Exact),
    }
}

#[test]
fn every_unary_op_on_every_accepted_type() {
    for u in UnaryOp::ALL {
        for t in graphlift_codegen::ELEMENT_TYPES {
            if u.accepts(t) {
                unary_case(u, t, 1000);
                unary_case(u, t, 1);
            }
        }
    }
}

#[test]
fn every_binary_op_on_every_accepted_type_all_special_pairs() {
    for op in BinaryOp::ALL {
        for t in graphlift_codegen::ELEMENT_TYPES {
            if !op.accepts(t) {
                continue;
            }
            let (a, bb) = all_pairs(t);
            let n = a.len();
            let b = FunctionBuilder::new(format!("{}_{t}", op.name()));
            let x = b.parameter("a", t, [n]);
            let y = b.parameter("b", t, [n]);
            let body = b.finish(&[b.op(Op::Binary(op), &[x, y])]).unwrap();
            // Power on f32 and f64 (and f16, bf16, computed as f32) is an inline
            // approximation (vmath::pow); everything else exact.
            let expect = match (op, t) {
                (BinaryOp::Power, ElementType::F64) => Expect::PowF64,
                (BinaryOp::Power, ElementType::F32) => Expect::PowF32,
                (BinaryOp::Power, ElementType::F16 | ElementType::BF16) => Expect::PowHalf,
                _ => Expect::Exact,
            };
            check(
                &format!("{} {t} pairs", op.name()),
                &body,
                &[tensor(a), tensor(bb)],
                expect,
            );
            // Random data too.
            let b = FunctionBuilder::new("random");
            let x = b.parameter("a", t, [997]);
            let y = b.parameter("b", t, [997]);
            let body = b.finish(&[b.op(Op::Binary(op), &[x, y])]).unwrap();
            check(
                &format!("{} {t} random", op.name()),
                &body,
                &inputs(&[t, t], 997),
                expect,
            );
        }
    }
}

#[test]
fn every_compare_on_every_type_all_special_pairs() {
    for op in CompareOp::ALL {
        for t in graphlift_codegen::ELEMENT_TYPES {
            let (a, bb) = all_pairs(t);
            let n = a.len();
            let b = FunctionBuilder::new(format!("{}_{t}", op.name()));
            let x = b.parameter("a", t, [n]);
            let y = b.parameter("b", t, [n]);
            let body = b.finish(&[b.op(Op::Compare(op), &[x, y])]).unwrap();
            check(
                &format!("{} {t}", op.name()),
                &body,
                &[tensor(a), tensor(bb)],
                Expect::Exact,
            );
        }
    }
}

#[test]
fn select_on_every_type() {
    for t in graphlift_codegen::ELEMENT_TYPES {
        for n in [1, 5, 64, 1001] {
            let b = FunctionBuilder::new(format!("select_{t}"));
            let c = b.parameter("c", ElementType::Bool, [n]);
            let x = b.parameter("a", t, [n]);
            let y = b.parameter("b", t, [n]);
            let body = b.finish(&[graphlift_ir::select(c, x, y)]).unwrap();
            let ins = inputs(&[ElementType::Bool, t, t], n);
            check(&format!("Select {t} [{n}]"), &body, &ins, Expect::Exact);
        }
    }
}

#[test]
fn convert_between_every_pair_of_types() {
    for from in graphlift_codegen::ELEMENT_TYPES {
        for to in graphlift_codegen::ELEMENT_TYPES {
            let n = 3 * specials(from).len() + 200;
            let b = FunctionBuilder::new(format!("convert_{from}_{to}"));
            let x = b.parameter("x", from, [n]);
            let body = b.finish(&[x.convert(to)]).unwrap();
            check(
                &format!("Convert {from} -> {to}"),
                &body,
                &inputs(&[from], n),
                Expect::Exact,
            );
        }
    }
}

#[test]
fn kernels_of_every_size_including_empty() {
    for t in graphlift_codegen::ELEMENT_TYPES {
        for n in SIZES {
            let b = FunctionBuilder::new("sizes");
            let x = b.parameter("x", t, [n]);
            let y = b.parameter("y", t, [n]);
            let r = if t == ElementType::Bool {
                x.xor(y)
            } else {
                (x * y).max(x)
            };
            let body = b.finish(&[r, x.eq(y)]).unwrap();
            check(
                &format!("{t} [{n}]"),
                &body,
                &inputs(&[t, t], n),
                Expect::Exact,
            );
        }
    }
}

#[test]
fn integer_division_never_traps() {
    for t in [ElementType::I32, ElementType::I64] {
        let b = FunctionBuilder::new("div");
        let x = b.parameter("x", t, [8]);
        let y = b.parameter("y", t, [8]);
        let body = b.finish(&[x / y]).unwrap();
        let (xs, ys) = match t {
            ElementType::I32 => (
                graphlift_ir::TensorData::I32(vec![7, i32::MIN, -7, 0, i32::MIN, 5, -9, 1]),
                graphlift_ir::TensorData::I32(vec![0, -1, 2, 0, 1, -1, -2, i32::MIN]),
            ),
            _ => (
                graphlift_ir::TensorData::I64(vec![7, i64::MIN, -7, 0, i64::MIN, 5, -9, 1]),
                graphlift_ir::TensorData::I64(vec![0, -1, 2, 0, 1, -1, -2, i64::MIN]),
            ),
        };
        let (got, want) = super::run_both(&body, &[tensor(xs), tensor(ys)]);
        super::assert_exact("div", &[], &got, &want);
        assert_eq!(got[0].data().get_f64(0), Some(0.0));
    }
}

#[test]
fn float_edge_cases_follow_the_semantics_table() {
    let b = FunctionBuilder::new("edges");
    let x = b.parameter("x", ElementType::F32, [6]);
    let y = b.parameter("y", ElementType::F32, [6]);
    let body = b
        .finish(&[
            x.max(y),
            x.min(y),
            x.relu(),
            x.round(),
            x.sign(),
            x.convert(ElementType::I32),
        ])
        .unwrap();
    let xs = vec![-0.0f32, 0.0, f32::NAN, 2.5, -0.5, 3e10];
    let ys = vec![0.0f32, -0.0, 1.0, f32::NAN, 1.0, 0.0];
    let ins = [tensor(xs.into()), tensor(ys.into())];
    let (got, want) = super::run_both(&body, &ins);
    super::assert_exact("edges", &ins, &got, &want);
    let max = got[0].read::<f32>().unwrap();
    let min = got[1].read::<f32>().unwrap();
    assert!(max[0].is_sign_positive() && max[1].is_sign_positive());
    assert!(min[0].is_sign_negative() && min[1].is_sign_negative());
    assert!(max[2].is_nan() && max[3].is_nan() && min[2].is_nan());
    let relu = got[2].read::<f32>().unwrap();
    assert!(relu[0].is_sign_negative() && relu[2].is_nan());
    assert_eq!(got[3].read::<f32>().unwrap()[3], 2.0);
    assert_eq!(got[5].read::<i32>().unwrap()[5], i32::MAX);
}

/// `Maximum`/`Minimum` against a constant (`Clip`'s bounds) take the compare-and-select
/// lowering: same bits as the interpreter for every special input and constant, either
/// operand order, signed zeros included.
#[test]
fn min_max_against_constants_match_the_interpreter() {
    for t in [ElementType::F32, ElementType::F64] {
        let consts: Vec<f64> = vec![
            0.0,
            -0.0,
            6.0,
            -3.0,
            1e-40,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        let n = specials(t).len();
        for c in consts {
            let b = FunctionBuilder::new("min_max_constant");
            let x = b.parameter("x", t, [n]);
            let k = x.scalar_like(c);
            let body = b.finish(&[x.max(k), k.max(x), x.min(k), k.min(x)]).unwrap();
            let ins = [tensor(specials(t))];
            check(
                &format!("{t} min/max with {c:e}"),
                &body,
                &ins,
                Expect::Exact,
            );
        }
    }
}

#[test]
fn no_fma_contraction_a_times_x_minus_a_times_x_is_zero() {
    let b = FunctionBuilder::new("xla_fma");
    let a = b.parameter("a", ElementType::F32, [64]);
    let x = b.parameter("x", ElementType::F32, [64]);
    let c = b.parameter("c", ElementType::F32, [64]);
    let body = b.finish(&[a * x - a * x, a * x + c]).unwrap();
    let ins = inputs(&[ElementType::F32; 3], 64);
    let (got, want) = super::run_both(&body, &ins);
    super::assert_exact("a*x - a*x", &ins, &got, &want);
    for (v, r) in got[0]
        .read::<f32>()
        .unwrap()
        .iter()
        .zip(want[0].read::<f32>().unwrap())
    {
        assert!(v.is_nan() || *v == 0.0, "{v} vs {r}");
    }
}

#[test]
fn mixed_type_kernels_vector_and_scalar() {
    use ElementType::{Bool, F32, F64, I32, I64};
    // f32 compare feeding a select and a bool output, i32 <-> f32 conversions, integer
    // division and power inside a vector loop (f32 power, an approximation, is checked
    // beside other ops by asm::power_is_assembled_with_cranelifts_bits).
    let b = FunctionBuilder::new("mixed_vector");
    let x = b.parameter("x", F32, [203]);
    let i = b.parameter("i", I32, [203]);
    let p = b.parameter("p", Bool, [203]);
    let gt = x.gt(i.convert(F32));
    let sel = graphlift_ir::select(gt.and(!p), x.sqrt(), (x * 2.0).convert(I32).convert(F32));
    let body = b
        .finish(&[sel.floor(), gt, (i / (i - 3.0)).abs(), i.pow(i - 30.0)])
        .unwrap();
    assert!(graphlift_codegen::JitKernel::compile(&body)
        .unwrap()
        .is_vectorized());
    check(
        "mixed vector",
        &body,
        &inputs(&[F32, I32, Bool], 203),
        Expect::Exact,
    );
    // f32 beside f64 and i64: the mixed-width loop (f32 as one vector, f64 and i64 as two).
    let b = FunctionBuilder::new("mixed_scalar");
    let x = b.parameter("x", F64, [77]);
    let y = b.parameter("y", I64, [77]);
    let z = b.parameter("z", F32, [77]);
    let s = (x * y.convert(F64)).convert(F32) + z.sqrt();
    let body = b
        .finish(&[
            s,
            y.gt(x.convert(I64)),
            (y / y.sign()).relu(),
            // (f64 exp/tanh are approximate now: tests::vmath_f64 covers the scalar loop.)
            x.sqrt().max(x.floor()),
            y.pow(y),
        ])
        .unwrap();
    assert!(graphlift_codegen::JitKernel::compile(&body)
        .unwrap()
        .is_mixed_width());
    check(
        "mixed widths",
        &body,
        &inputs(&[F64, I64, F32], 77),
        Expect::Exact,
    );
}
