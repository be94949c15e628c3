//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::erf`]: its constants,
//! range reduction and error bounds live there.

use crate::lanes::Emit;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
pub use graphlift_kernels::vmath::erf::*;

/// Emits `erf(x)` for the `f32` value `x`: `a + a·R(a²)`, then the second piece.
pub fn emit(e: &mut Emit, x: Value) -> Value {
    super::two_piece::emit(&FORM, e, x, |e, a, t| {
        let r = e.horner(t, &R);
        e.b.ins().fma(a, r, a)
    })
}

/// Emits `erf(x)` for the `f64` value `x`.
///
/// On `a = |x|`, `z = a²`: for `a < 1`, `erf(a) = a·c0_hi + a·(c0_lo + z·P(z))` (`c0 = 2/√π`
/// in two parts, `P` of degree 12; relative accuracy near 0, subnormals included); for
/// `1 ≤ a ≤ 6`, `erf(a) = 1 − e^(−a² + q(a))` with `q ≈ ln(erfc(a)) + a²` a degree-16
/// polynomial on `[1, 2.5]` or on `[2.5, 6]` (both evaluated, one selected), `−a² + q` one
/// fused multiply-add and the exponential the inline `f64` [`super::exp`]; past 6, `1`.
/// The sign is put back with a bit operation: `erf(-0) = -0`, `erf(±inf) = ±1`, NaN stays
/// NaN. Range: `[-1, 1]`.
///
/// **Maximum error: 2 ulp** ([`MAX_ULP_F64`]; the measured errors are in
/// `BENCHMARKS.md`).
pub fn emit_f64(e: &mut Emit, x: Value) -> Value {
    let a = e.b.ins().fabs(x);
    let z = e.b.ins().fmul(a, a);
    let p = e.horner_f64(z, &P_F64);
    let c0_lo = e.f64(C0_LO_F64);
    let c0_hi = e.f64(C0_HI_F64);
    let tail = e.b.ins().fma(z, p, c0_lo);
    let tail = e.b.ins().fmul(a, tail);
    let small = e.b.ins().fma(a, c0_hi, tail);

    let mid1 = e.f64(1.75);
    let t1 = e.b.ins().fsub(a, mid1);
    let q1 = e.horner_f64(t1, &Q1_F64);
    let mid2 = e.f64(4.25);
    let t2 = e.b.ins().fsub(a, mid2);
    let q2 = e.horner_f64(t2, &Q2_F64);
    let split = e.f64(2.5);
    let first = e.fcmp(FloatCC::LessThan, a, split);
    let q = e.select(first, q1, q2);
    let neg_a = e.b.ins().fneg(a);
    let arg = e.b.ins().fma(neg_a, a, q);
    let ex = super::exp::emit_f64(e, arg);
    let one = e.f64(1.0);
    let large = e.b.ins().fsub(one, ex);
    let cut = e.f64(ONE_FROM_F64);
    let saturated = e.fcmp(FloatCC::GreaterThan, a, cut);
    let large = e.select(saturated, one, large);
    let is_small = e.fcmp(FloatCC::LessThan, a, one);
    let r = e.select(is_small, small, large);
    e.copysign_f64(r, x)
}
