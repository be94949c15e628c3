//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::sigmoid`]: its constants,
//! range reduction and error bounds live there.

use crate::lanes::Emit;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
pub use graphlift_kernels::vmath::sigmoid::*;

/// Emits `sigmoid(x)` for the `f32` value `x`.
pub fn emit(e: &mut Emit, x: Value) -> Value {
    let a = e.b.ins().fabs(x);
    let neg_a = e.b.ins().fneg(a);
    let (eh, el) = super::exp::emit_parts(e, neg_a);
    let one = e.f32(1.0);
    let zero = e.f32(0.0);
    // d + d_lo = 1 + E exactly (up to E's own error), by Fast2Sum as 1 >= E.
    let (d, d_lo) = super::fast_two_sum(e, one, eh);
    let d_lo = e.b.ins().fadd(d_lo, el);
    let non_negative = e.fcmp(FloatCC::GreaterThanOrEqual, x, zero);
    let num = e.select(non_negative, one, eh);
    let num_lo = e.select(non_negative, zero, el);
    let q = e.b.ins().fdiv(num, d);
    let neg_q = e.b.ins().fneg(q);
    let residual = e.b.ins().fma(neg_q, d, num);
    let extra = e.b.ins().fma(neg_q, d_lo, num_lo);
    let r = e.b.ins().fadd(residual, extra);
    let c = e.b.ins().fdiv(r, d);
    e.b.ins().fadd(q, c)
}

/// Emits `sigmoid(x)` for the `f64` value `x`: the `f32` method at `f64` precision (`E =
/// e^-|x|` from the inline `f64` [`super::exp`] as `E_hi + E_lo`, `1 + E` by Fast2Sum, the
/// quotient, formed with one division as `num·(1/d)`, corrected once with its exact
/// residual). `sigmoid(-0) = 0.5`,
/// `sigmoid(+inf) = 1`, `sigmoid(-inf) = 0`, NaN stays NaN, tiny results round once into
/// the subnormal range. Range: `[0, 1]`.
///
/// **Maximum error: 2 ulp** ([`MAX_ULP_F64`]; the measured errors are in
/// `BENCHMARKS.md`).
pub fn emit_f64(e: &mut Emit, x: Value) -> Value {
    let a = e.b.ins().fabs(x);
    let neg_a = e.b.ins().fneg(a);
    let (eh, el) = super::exp::emit_parts_f64(e, neg_a);
    let one = e.f64(1.0);
    let zero = e.f64(0.0);
    let (d, d_lo) = super::fast_two_sum(e, one, eh);
    let d_lo = e.b.ins().fadd(d_lo, el);
    let non_negative = e.fcmp(FloatCC::GreaterThanOrEqual, x, zero);
    let num = e.select(non_negative, one, eh);
    let num_lo = e.select(non_negative, zero, el);
    // One division: q = num·(1/d) is within an ulp or two, and the exact residual
    // fma(−q, d, num) corrects it as a quotient would be.
    let inv = e.b.ins().fdiv(one, d);
    let q = e.b.ins().fmul(num, inv);
    let neg_q = e.b.ins().fneg(q);
    let residual = e.b.ins().fma(neg_q, d, num);
    let extra = e.b.ins().fma(neg_q, d_lo, num_lo);
    let r = e.b.ins().fadd(residual, extra);
    e.b.ins().fma(r, inv, q)
}
