//! `f64` vector math: every function compiles and runs in the `F64X2` loop and the scalar
//! loop, the two give the same bits, special values are the interpreter's, and a thinned
//! dense sample is within the documented bounds against the 256-bit references. The
//! trigonometric and hyperbolic functions, which call the reference's own scalar code per
//! lane on `f64`, give its bits.

use graphlift_codegen::vmath::{self, FUNCTIONS};
use graphlift_codegen::JitKernel;
use graphlift_harness::accuracy::{f64_sample, kernel_f64, sweep_f64, LoopKind};
use graphlift_ir::{ElementType, FunctionBuilder, Op, UnaryOp};
use graphlift_runtime::reference::unary_f64;
use graphlift_runtime::Tensor;

/// The sweep kernels' element count (`accuracy`'s chunk).
const CHUNK: usize = 1 << 16;

fn apply(k: &JitKernel, xs: &[f64]) -> Vec<f64> {
    let mut padded = xs.to_vec();
    padded.resize(CHUNK, 0.0);
    let input = Tensor::from_vec(padded, [CHUNK]).unwrap();
    let mut out = vec![Tensor::zeros(ElementType::F64, [CHUNK]).unwrap()];
    k.call_range(&[&input], &mut out, 0, xs.len()).unwrap();
    out[0].read::<f64>().unwrap()[..xs.len()].to_vec()
}

fn specials() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        f64::from_bits(1),
        -f64::from_bits(1),
        f64::from_bits(0x000f_ffff_ffff_ffff),
        -1.0,
        1.0,
        -1.0 - f64::EPSILON,
        1e-300,
        -1e-300,
        709.782_712_893_384,
        709.782_712_893_384_1,
        -745.133_219_101_941_1,
        -745.2,
        -708.5,
        800.0,
        -800.0,
        50.0,
        -50.0,
    ];
    // An odd count, so the vector loop has a tail too.
    v.push(3.0);
    v
}

#[test]
fn each_function_compiles_in_both_loops_with_the_interpreters_special_values() {
    for op in FUNCTIONS {
        for kind in [LoopKind::Vector, LoopKind::Scalar] {
            let k = kernel_f64(op, kind).unwrap();
            assert_eq!(k.is_vectorized(), kind == LoopKind::Vector);
            let xs = specials();
            let ys = apply(&k, &xs);
            for (&x, &y) in xs.iter().zip(&ys) {
                if x.is_nan() || x.is_infinite() || x == 0.0 {
                    let want = unary_f64(op, x);
                    assert!(
                        want.is_nan() && y.is_nan() || want.to_bits() == y.to_bits(),
                        "{}({x:e}) = {y:e}, the interpreter gives {want:e} ({kind:?})",
                        op.name()
                    );
                }
                assert!(
                    graphlift_harness::accuracy::guarantee_holds_f64(op, x, y),
                    "{}({x:e}) = {y:e} ({kind:?})",
                    op.name()
                );
            }
        }
    }
}

#[test]
fn special_values_by_function() {
    let run = |op: UnaryOp, xs: &[f64]| -> [Vec<f64>; 2] {
        [LoopKind::Vector, LoopKind::Scalar].map(|kind| apply(&kernel_f64(op, kind).unwrap(), xs))
    };
    let inf = f64::INFINITY;
    let tiny = f64::from_bits(1);
    for ys in run(
        UnaryOp::Exp,
        &[inf, -inf, 709.79, -746.0, -745.0, 0.0, -0.0],
    ) {
        assert_eq!(&ys[..3], &[inf, 0.0, inf]);
        assert_eq!(ys[3], 0.0);
        assert_eq!(ys[4], tiny, "exp(-745) is the smallest subnormal");
        assert_eq!(&ys[5..], &[1.0, 1.0]);
    }
    // The overflow and underflow thresholds of the correctly rounded exp (from MPFR):
    // e^709.782712893384 < f64::MAX + ulp/2 <= e^709.7827128933841, and
    // e^-745.1332191019411 > 2^-1075 >= e^-745.1332191019412.
    let edges = [
        709.782_712_893_384,
        709.782_712_893_384_1,
        -745.133_219_101_941_1,
        -745.133_219_101_941_2,
    ];
    for ys in run(UnaryOp::Exp, &edges) {
        assert!(ys[0].is_finite() && ys[0] > 1.797e308, "{:e}", ys[0]);
        assert_eq!(&ys[1..], &[inf, tiny, 0.0]);
    }
    for ys in run(UnaryOp::Expm1, &[inf, -inf, -0.0, tiny, -40.0]) {
        assert_eq!(&ys[..2], &[inf, -1.0]);
        assert_eq!(ys[2].to_bits(), (-0.0f64).to_bits());
        assert_eq!(ys[3], tiny);
        assert_eq!(ys[4], -1.0);
    }
    for ys in run(UnaryOp::Log, &[0.0, -0.0, -1.0, inf, 1.0, tiny, f64::MAX]) {
        assert_eq!(&ys[..2], &[-inf, -inf]);
        assert!(ys[2].is_nan());
        assert_eq!(&ys[3..5], &[inf, 0.0]);
        assert_eq!(
            ys[5], -744.440_071_921_381_2,
            "ln(2^-1074), correctly rounded"
        );
        assert_eq!(ys[6], 709.782_712_893_384);
    }
    for ys in run(UnaryOp::Log1p, &[-1.0, -2.0, inf, -0.0, tiny]) {
        assert_eq!(ys[0], -inf);
        assert!(ys[1].is_nan());
        assert_eq!(ys[2], inf);
        assert_eq!(ys[3].to_bits(), (-0.0f64).to_bits());
        assert_eq!(ys[4], tiny);
    }
    for op in [UnaryOp::Tanh, UnaryOp::Erf] {
        for ys in run(op, &[inf, -inf, -0.0, -tiny, 40.0, -40.0]) {
            assert_eq!(&ys[..2], &[1.0, -1.0], "{}", op.name());
            assert_eq!(ys[2].to_bits(), (-0.0f64).to_bits(), "{}", op.name());
            assert!(ys[3] < 0.0, "{}: sign of a subnormal kept", op.name());
            assert_eq!(&ys[4..], &[1.0, -1.0], "{}", op.name());
        }
    }
    for ys in run(UnaryOp::Sigmoid, &[inf, -inf, -0.0, 0.0, 800.0, -800.0]) {
        assert_eq!(ys, vec![1.0, 0.0, 0.5, 0.5, 1.0, 0.0]);
    }
}

#[test]
fn vector_and_scalar_loops_agree_bit_for_bit() {
    let xs: Vec<f64> = f64_sample(3).into_iter().take(CHUNK).collect();
    for op in FUNCTIONS {
        let v = apply(&kernel_f64(op, LoopKind::Vector).unwrap(), &xs);
        let s = apply(&kernel_f64(op, LoopKind::Scalar).unwrap(), &xs);
        for ((x, a), b) in xs.iter().zip(&v).zip(&s) {
            assert!(
                a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan(),
                "{}({x:e}): vector {a:e}, scalar {b:e}",
                op.name()
            );
        }
    }
}

/// The thinned dense sample CI runs (`graphlift accuracy --f64` runs it at any density):
/// 4 bit patterns per binade, special values and threshold neighbourhoods, in both loops.
#[test]
fn thinned_f64_sample_within_documented_bounds_against_the_reference() {
    let xs = f64_sample(4);
    for op in FUNCTIONS {
        for kind in [LoopKind::Vector, LoopKind::Scalar] {
            let a = sweep_f64(op, &xs, kind).unwrap();
            assert_eq!(a.checked, xs.len() as u64);
            assert!(a.within_bound(), "{a:?}");
            assert_eq!(a.bound, vmath::max_ulp(op, ElementType::F64).unwrap());
        }
    }
}

/// The interpreter's own `f64` functions (the reference the differential checks compare
/// against) are within [`graphlift_harness::accuracy::INTERPRETER_F64_MAX_ULP`] of MPFR on the dense
/// sample (16 inputs per binade here; the documented figures used 256).
#[test]
fn interpreter_f64_functions_are_within_their_allowance() {
    use graphlift_harness::accuracy::{reference, INTERPRETER_F64_MAX_ULP};
    let xs = f64_sample(16);
    for op in FUNCTIONS {
        let (ulp, at) = xs
            .iter()
            .map(|&x| {
                (
                    reference::ulp_error(unary_f64(op, x), &reference::exact(op, x)),
                    x,
                )
            })
            .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a });
        assert!(
            ulp <= INTERPRETER_F64_MAX_ULP,
            "interpreter {}: {ulp:.3} ulp at {at:e}",
            op.name()
        );
    }
}

/// `f32` `Power` (in `f32` arithmetic): the IEEE special cases exactly as the interpreter,
/// the vector (`F32X4`) and scalar loops bit-equal, and a grid of ordinary pairs within
/// [`vmath::pow::MAX_ULP`] of the `f64` reference.
#[test]
fn pow_f32_special_cases_loops_and_accuracy() {
    use graphlift_ir::BinaryOp;
    use graphlift_runtime::reference::{binary_f32, binary_f64};
    let specials = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        2.5,
        -2.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MAX,
        16_777_216.0,
        -16_777_217.0,
        1e-3,
        100.0,
        -127.0,
        0.999_999_94,
        1.000_000_1,
    ];
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for &a in &specials {
        for &b in &specials {
            xs.push(a);
            ys.push(b);
        }
    }
    // Ordinary pairs: bases over many binades, exponents of both signs.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    while xs.len() < 40_000 {
        let r = next();
        let a = f32::from_bits((r as u32) & 0x7fff_ffff);
        let b = ((r >> 32) as u32 as f32 / u32::MAX as f32 - 0.5) * 8.0;
        if a.is_finite() {
            xs.push(a);
            ys.push(b);
        }
    }
    let n = xs.len();
    let run = |scalar: bool| run_power(&xs, &ys, scalar);
    let v = run(false);
    let s = run(true);
    let mut worst = 0.0f64;
    for i in 0..n {
        let (x, y) = (xs[i], ys[i]);
        assert!(
            v[i].to_bits() == s[i].to_bits() || v[i].is_nan() && s[i].is_nan(),
            "pow({x:e}, {y:e}): vector {:e}, scalar {:e}",
            v[i],
            s[i]
        );
        let want = binary_f32(BinaryOp::Power, x, y);
        let exact = binary_f64(BinaryOp::Power, f64::from(x), f64::from(y));
        if graphlift_harness::accuracy::pow_special_operands(f64::from(x), f64::from(y))
            || !exact.is_finite()
        {
            assert!(
                want.to_bits() == v[i].to_bits() || want.is_nan() && v[i].is_nan(),
                "pow({x:e}, {y:e}) = {:e}, the interpreter gives {want:e}",
                v[i]
            );
        }
        let err = vmath::ulp_error(v[i], exact);
        worst = worst.max(err);
        assert!(
            err <= vmath::pow::MAX_ULP,
            "pow({x:e}, {y:e}) = {:e}: {err} ulp from {exact:e}",
            v[i]
        );
    }
    // Not vacuous: ordinary pairs are rounded results, not all exact.
    assert!(worst > 0.3, "max error {worst} ulp");
}

/// The thinned `f32` `Power` sweep CI runs (`graphlift accuracy --pow` at any step): every
/// base with the fixed and the threshold-aimed exponents, in both loops.
#[test]
fn thinned_pow_sweep_within_bound_in_both_loops() {
    use graphlift_harness::accuracy::pow_f32_exponents;
    let step = 1u64 << 17;
    let pairs: u64 = (0..(1u64 << 31) / step)
        .flat_map(|i| {
            let v = f32::from_bits((i * step) as u32);
            [v, -v]
        })
        .map(|x| pow_f32_exponents(x).len() as u64)
        .sum();
    for kind in [LoopKind::Vector, LoopKind::Scalar] {
        let a = graphlift_harness::accuracy::sweep_pow_f32(step, kind).unwrap();
        assert_eq!(a.checked, pairs);
        assert!(a.within_bound(), "{a:?}");
        assert!(a.max_ulp > 0.3, "{a:?}");
    }
}

/// The thinned `f64` `Power` sample CI runs (`graphlift accuracy --pow --f64` runs it at any
/// density): one base per binade, special values and threshold neighbourhoods, each with
/// the fixed and the range-aimed exponents, against the 256-bit references in both loops, every IEEE special
/// case bit for bit as the interpreter, and the two loops bit-equal.
#[test]
fn thinned_pow_f64_sample_within_bound_in_both_loops() {
    use graphlift_harness::accuracy::{pow_f64_exponents, sweep_pow_f64};
    let v = sweep_pow_f64(1, LoopKind::Vector).unwrap();
    let s = sweep_pow_f64(1, LoopKind::Scalar).unwrap();
    let pairs: u64 = f64_sample(1)
        .iter()
        .map(|&x| pow_f64_exponents(x).len() as u64)
        .sum();
    for a in [&v, &s] {
        assert_eq!(a.checked, pairs);
        assert_eq!(a.bound, vmath::pow::MAX_ULP_F64);
        assert!(a.within_bound(), "{a:?}");
        // Not vacuous: the ordinary pairs are rounded results, not all exact.
        assert!(a.max_ulp > 0.3, "{a:?}");
    }
}

/// `f64` `Power` in the `F64X2` and scalar loops gives the same bits, on pairs of every kind
/// (special, subnormal, overflowing, negative bases with integer exponents).
#[test]
fn pow_f64_vector_and_scalar_loops_agree_bit_for_bit() {
    use graphlift_harness::accuracy::pow_f64_exponents;
    let (xs, ys): (Vec<f64>, Vec<f64>) = f64_sample(2)
        .into_iter()
        .step_by(7)
        .flat_map(|x| pow_f64_exponents(x).into_iter().map(move |y| (x, y)))
        .take(CHUNK)
        .unzip();
    let n = xs.len();
    let run = |scalar: bool| run_power(&xs, &ys, scalar);
    let (v, s) = (run(false), run(true));
    for i in 0..n {
        assert!(
            v[i].to_bits() == s[i].to_bits() || v[i].is_nan() && s[i].is_nan(),
            "pow({:e}, {:e}): vector {:e}, scalar {:e}",
            xs[i],
            ys[i],
            v[i],
            s[i]
        );
    }
}

/// Runs `Power` elementwise on `xs`, `ys` (both of length `n`, element type `T`) in the
/// vector loop, or in the scalar loop when `scalar`; asserts the kernel took the loop asked for.
fn run_power<T: graphlift_ir::Element>(xs: &[T], ys: &[T], scalar: bool) -> Vec<T> {
    use graphlift_ir::{BinaryOp, FunctionBuilder, Op};
    let n = xs.len();
    let b = FunctionBuilder::new("pow");
    let x = b.parameter("x", T::ELEMENT_TYPE, [n]);
    let y = b.parameter("y", T::ELEMENT_TYPE, [n]);
    let body = b
        .finish(&[b.op(Op::Binary(BinaryOp::Power), &[x, y])])
        .unwrap();
    let k = if scalar {
        JitKernel::compile_scalar(&body).unwrap()
    } else {
        JitKernel::compile(&body).unwrap()
    };
    assert_eq!(k.is_vectorized(), !scalar);
    let ins = [
        Tensor::from_vec(xs.to_vec(), [n]).unwrap(),
        Tensor::from_vec(ys.to_vec(), [n]).unwrap(),
    ];
    let mut out = vec![Tensor::zeros(T::ELEMENT_TYPE, [n]).unwrap()];
    k.call(&[&ins[0], &ins[1]], &mut out).unwrap();
    out[0].read::<T>().unwrap().to_vec()
}

#[test]
fn f64_functions_are_the_reference_bit_for_bit() {
    let xs: Vec<f64> = (0..997)
        .map(|i| (i as f64 - 498.0) * 0.013_7)
        .chain([0.0, -0.0, 1.0, -1.0, f64::INFINITY, f64::NAN, 1e300, 5e-324])
        .collect();
    let n = xs.len();
    for op in UnaryOp::TRIG {
        assert!(vmath::max_ulp(op, ElementType::F64).is_none());
        let b = FunctionBuilder::new(op.name());
        let x = b.parameter("x", ElementType::F64, [n]);
        let body = b.finish(&[b.op(Op::Unary(op), &[x])]).unwrap();
        for k in [
            JitKernel::compile_inline(&body).unwrap(),
            JitKernel::compile_scalar(&body).unwrap(),
        ] {
            let input = Tensor::from_vec(xs.clone(), [n]).unwrap();
            let mut out = [Tensor::zeros(ElementType::F64, [n]).unwrap()];
            k.call_range(&[&input], &mut out, 0, n).unwrap();
            for (&x, &y) in xs.iter().zip(out[0].read::<f64>().unwrap()) {
                let want = unary_f64(op, x);
                assert!(
                    y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()),
                    "{}({x:e}) = {y:e}, reference {want:e}",
                    op.name()
                );
            }
        }
    }
}
