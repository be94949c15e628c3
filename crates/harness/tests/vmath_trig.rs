//! The inline `f32` trigonometric and hyperbolic functions: a dense strided sweep of the
//! `f32` bit patterns against the reference's `f64` values (the C library's, rounded once)
//! within the documented bounds, in the vector and the scalar loop; the per-lane scalar
//! fallback of `sin`, `cos`, `tan` beyond the Cody–Waite range; and the `f64` functions,
//! which call the reference's own scalar code, bit for bit.

use graphlift_codegen::vmath::{self, trig::REDUCE_MAX, F32_ONLY};
use graphlift_codegen::JitKernel;
use graphlift_harness::accuracy::{kernel_f32, sweep_f32, LoopKind};
use graphlift_ir::{ElementType, FunctionBuilder, Op, UnaryOp};
use graphlift_runtime::reference::{unary_f32, unary_f64};
use graphlift_runtime::Tensor;

/// The sweep kernels' element count (`accuracy`'s chunk).
const CHUNK: usize = 1 << 16;

fn apply(k: &JitKernel, xs: &[f32]) -> Vec<f32> {
    let mut padded = xs.to_vec();
    padded.resize(CHUNK, 0.0);
    let input = Tensor::from_vec(padded, [CHUNK]).unwrap();
    let mut out = [Tensor::zeros(ElementType::F32, [CHUNK]).unwrap()];
    k.call_range(&[&input], &mut out, 0, xs.len()).unwrap();
    out[0].read::<f32>().unwrap()[..xs.len()].to_vec()
}

#[test]
fn strided_sweep_within_documented_bounds() {
    let mut table = String::new();
    let mut broken = Vec::new();
    for op in F32_ONLY {
        for (kind, step) in [(LoopKind::Vector, 97), (LoopKind::Scalar, 1009)] {
            let a = sweep_f32(op, step, kind).unwrap();
            assert_eq!(a.checked, (1u64 << 32).div_ceil(step));
            assert!(a.max_ulp > 0.3, "{}: is the check live? {a:?}", op.name());
            if !a.within_bound() {
                broken.push(format!("{a:?}"));
            }
            table.push_str(&format!(
                "{} {kind:?} step {step}: max {:.3} ulp at {:e} (bound {})\n",
                op.name(),
                a.max_ulp,
                a.worst_ulp_at.0,
                a.bound
            ));
        }
    }
    println!("{table}");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
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
                    let err = vmath::ulp_error(y, unary_f64(op, f64::from(x)));
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
