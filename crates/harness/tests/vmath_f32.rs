//! Vector math accuracy: a strided sweep of the `f32` bit patterns against the documented
//! bounds, in the vector loop and the scalar loop (the trigonometric and hyperbolic functions
//! included), the special-value guarantees, and the per-lane scalar fallback of `sin`, `cos`,
//! `tan` beyond their Cody–Waite range.

use graphlift_codegen::vmath::{self, trig::REDUCE_MAX, ulp_error};
use graphlift_codegen::JitKernel;
use graphlift_harness::accuracy::{kernel_f32, sweep_f32, LoopKind, F32_FUNCTIONS as FUNCTIONS};
use graphlift_ir::{ElementType, UnaryOp};
use graphlift_runtime::reference::{unary_f32, unary_f64};
use graphlift_runtime::Tensor;

/// The sweep kernels' element count (`accuracy`'s chunk).
const CHUNK: usize = 1 << 16;

fn kernel(op: UnaryOp, scalar: bool) -> JitKernel {
    let kind = if scalar {
        LoopKind::Scalar
    } else {
        LoopKind::Vector
    };
    let k = kernel_f32(op, kind).unwrap();
    assert_eq!(k.element_count(), CHUNK);
    k
}

fn apply(k: &JitKernel, xs: &[f32]) -> Vec<f32> {
    let mut padded = xs.to_vec();
    padded.resize(CHUNK, 0.0);
    let input = Tensor::from_vec(padded, [CHUNK]).unwrap();
    let mut out = [Tensor::zeros(ElementType::F32, [CHUNK]).unwrap()];
    k.call_range(&[&input], &mut out, 0, xs.len()).unwrap();
    out[0].read::<f32>().unwrap()[..xs.len()].to_vec()
}

/// The thinned sweep CI runs: every `step`-th bit pattern, held to the documented bound
/// and guarantees (`graphlift accuracy` runs the same sweep at any step).
fn sweep(op: UnaryOp, step: u64, kind: LoopKind) -> f64 {
    let a = sweep_f32(op, step, kind).unwrap();
    assert_eq!(a.checked, (1u64 << 32).div_ceil(step));
    assert!(a.within_bound(), "{a:?}");
    a.max_ulp
}

#[test]
fn strided_sweep_within_documented_bounds_vector_loop() {
    for op in FUNCTIONS {
        let worst = sweep(op, 97, LoopKind::Vector);
        assert!(
            worst > 0.3,
            "{}: suspiciously exact ({worst} ulp): is the check live?",
            op.name()
        );
    }
}

#[test]
fn strided_sweep_within_documented_bounds_scalar_loop() {
    for op in FUNCTIONS {
        sweep(op, 1009, LoopKind::Scalar);
    }
}

#[test]
fn a_wrong_result_is_caught_by_the_sweep_check() {
    // The check is live: tanh's result judged as if it were exp's is far off.
    let k = kernel(UnaryOp::Tanh, false);
    let y = apply(&k, &[0.5])[0];
    let exact = graphlift_runtime::reference::unary_f64(UnaryOp::Exp, 0.5);
    assert!(ulp_error(y, exact) > 1e6);
    assert!(!graphlift_harness::accuracy::guarantee_holds(
        UnaryOp::Exp,
        f32::NEG_INFINITY,
        1.0
    ));
    assert!(!graphlift_harness::accuracy::guarantee_holds(
        UnaryOp::Tanh,
        0.3,
        1.5
    ));
}

#[test]
fn vector_and_scalar_lanes_agree_bit_for_bit() {
    for op in FUNCTIONS {
        let xs: Vec<f32> = (0..CHUNK as u64)
            .map(|i| f32::from_bits((i * 65_537) as u32))
            .collect();
        let v = apply(&kernel(op, false), &xs);
        let s = apply(&kernel(op, true), &xs);
        for ((x, a), b) in xs.iter().zip(&v).zip(&s) {
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{}({x:e}): vector {a:e}, scalar {b:e}",
                op.name()
            );
        }
    }
}

#[test]
fn special_values_and_ranges() {
    let specials = graphlift_testkit::F32_SPECIALS;
    for scalar in [false, true] {
        let out: Vec<Vec<f32>> = FUNCTIONS
            .iter()
            .map(|&op| apply(&kernel(op, scalar), &specials))
            .collect();
        let of = |op: UnaryOp| &out[FUNCTIONS.iter().position(|&f| f == op).unwrap()];
        let [exp, expm1, log, log1p, tanh, sigmoid, erf] = [
            UnaryOp::Exp,
            UnaryOp::Expm1,
            UnaryOp::Log,
            UnaryOp::Log1p,
            UnaryOp::Tanh,
            UnaryOp::Sigmoid,
            UnaryOp::Erf,
        ]
        .map(of);
        for (i, &x) in specials.iter().enumerate() {
            if x.is_nan() {
                for (k, o) in out.iter().enumerate() {
                    assert!(o[i].is_nan(), "{}(NaN) = {}", FUNCTIONS[k].name(), o[i]);
                }
                continue;
            }
            assert!((-1.0..=1.0).contains(&tanh[i]), "tanh({x}) = {}", tanh[i]);
            assert!((-1.0..=1.0).contains(&erf[i]), "erf({x}) = {}", erf[i]);
            assert!(
                (0.0..=1.0).contains(&sigmoid[i]),
                "sigmoid({x}) = {}",
                sigmoid[i]
            );
            assert!(exp[i] >= 0.0);
            assert!(expm1[i] >= -1.0, "expm1({x}) = {}", expm1[i]);
            if x < -1.0 {
                assert!(log1p[i].is_nan(), "log1p({x}) = {}", log1p[i]);
            }
            if x == -1.0 {
                assert_eq!(log1p[i], f32::NEG_INFINITY);
            }
            if x.abs() < 1e-30 {
                // ±0 and subnormals: both are x itself, sign of zero included.
                assert_eq!(expm1[i].to_bits(), x.to_bits(), "expm1({x:e})");
                assert_eq!(log1p[i].to_bits(), x.to_bits(), "log1p({x:e})");
            }
            if x == 0.0 {
                assert_eq!(
                    tanh[i].to_bits(),
                    x.to_bits(),
                    "tanh keeps the sign of zero"
                );
                assert_eq!(erf[i].to_bits(), x.to_bits(), "erf keeps the sign of zero");
                assert_eq!(log[i], f32::NEG_INFINITY);
                assert_eq!(exp[i], 1.0);
                assert_eq!(sigmoid[i], 0.5);
            }
            if x < 0.0 {
                assert!(log[i].is_nan(), "log({x}) = {}", log[i]);
            }
            if x.is_infinite() {
                let s = x.signum();
                assert_eq!(tanh[i], s);
                assert_eq!(erf[i], s);
                assert_eq!(sigmoid[i], if s > 0.0 { 1.0 } else { 0.0 });
                assert_eq!(exp[i], if s > 0.0 { f32::INFINITY } else { 0.0 });
                assert_eq!(expm1[i], if s > 0.0 { f32::INFINITY } else { -1.0 });
            }
            if x == f32::INFINITY {
                assert_eq!(log[i], f32::INFINITY);
                assert_eq!(log1p[i], f32::INFINITY);
            }
            if x > 0.0 && x < f32::MIN_POSITIVE {
                // Subnormal inputs: log is finite and accurate, the odd functions are ~linear.
                let want = f64::from(x).ln();
                assert!(ulp_error(log[i], want) <= 1.0, "log({x:e}) = {}", log[i]);
                assert!(
                    ulp_error(tanh[i], f64::from(x)) <= 1.0,
                    "tanh({x:e}) = {}",
                    tanh[i]
                );
            }
        }
    }
}

#[test]
fn tanh_of_a_tiny_x_is_x_within_an_ulp_in_every_loop() {
    // Below 2^-13 the polynomials round to P(0) = 1.85 and Q(0) = 3.7, so the result is
    // 2·(x·1.85)·3.7 / (3.7·3.7): roundings of a value that is x, within an ulp of x (the
    // correctly rounded function gives x there) and with x's sign.
    let xs: Vec<f32> = (0..4096u32)
        .map(|i| f32::from_bits(0x0000_0001 + i.wrapping_mul(0x0001_C0DF) % 0x3900_0000))
        .flat_map(|x| [x, -x])
        .collect();
    assert!(xs.iter().all(|x| x.abs() < 2f32.powi(-13)));
    for kind in [LoopKind::Vector, LoopKind::Scalar, LoopKind::Library] {
        let k = kernel_f32(UnaryOp::Tanh, kind).unwrap();
        let ys = apply(&k, &xs);
        for (x, y) in xs.iter().zip(&ys) {
            let apart = y.to_bits().abs_diff(x.to_bits());
            assert!(apart <= 1, "{kind:?}: tanh({x:e}) = {y:e}");
        }
    }
}

#[test]
fn trigonometric_and_hyperbolic_special_values_in_both_loops() {
    // The odd functions keep the sign of zero; the even ones give 1 at ±0; the functions of
    // a bounded domain give NaN outside it; the infinities go where the reference puts them.
    let specials = graphlift_testkit::F32_SPECIALS;
    for op in vmath::F32_ONLY {
        for scalar in [false, true] {
            let ys = apply(&kernel(op, scalar), &specials);
            for (&x, &y) in specials.iter().zip(&ys) {
                let want = unary_f32(op, x);
                let ok = if x == 0.0 || x.is_infinite() || x.is_nan() || want.is_nan() {
                    y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan())
                } else {
                    ulp_error(y, unary_f64(op, f64::from(x)))
                        <= vmath::max_ulp(op, ElementType::F32).unwrap()
                };
                assert!(
                    ok,
                    "{} (scalar {scalar}): f({x:e}) = {y:e}, reference {want:e}",
                    op.name()
                );
            }
        }
    }
}

#[test]
fn sin_cos_tan_beyond_the_reduction_call_the_reference() {
    // Lanes past REDUCE_MAX (mixed in a vector with lanes inside it), the infinities and NaN
    // are the reference's bits; the lanes inside stay within the bound.
    let mut xs = vec![
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MAX,
        -1e30,
        REDUCE_MAX,
        REDUCE_MAX * 1.0001,
        0.5,
        -0.0,
        1e7,
        3.0,
        -123_456.7,
    ];
    xs.extend((0..4000).map(|i| (i as f32 - 2000.0) * 37.77));
    for op in [UnaryOp::Sin, UnaryOp::Cos, UnaryOp::Tan] {
        for kind in [LoopKind::Vector, LoopKind::Scalar] {
            let ys = apply(&kernel_f32(op, kind).unwrap(), &xs);
            for (&x, &y) in xs.iter().zip(&ys) {
                let want = unary_f32(op, x);
                if x.abs() > REDUCE_MAX || !x.is_finite() {
                    assert!(
                        y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()),
                        "{kind:?} {}({x:e}) = {y:e}, reference {want:e}",
                        op.name()
                    );
                } else {
                    let err = ulp_error(y, unary_f64(op, f64::from(x)));
                    assert!(
                        err <= vmath::max_ulp(op, ElementType::F32).unwrap(),
                        "{kind:?} {}({x:e}) = {y:e}: {err} ulp",
                        op.name()
                    );
                }
            }
        }
    }
}
