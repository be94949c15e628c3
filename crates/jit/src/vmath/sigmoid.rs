//! The logistic function `1/(1 + e^-x)` for `f32` lanes.
//!
//! As the reference does, without overflow: with `E = e^-|x|`, `1/(1 + E)` for `x ≥ 0`
//! and `E/(1 + E)` for `x < 0`. `E` comes from the inline [`super::exp`] as an unevaluated
//! sum `E_hi + E_lo` (its last rounding error kept), `1 + E` is formed exactly as
//! `d + d_lo` (Fast2Sum, since `E ≤ 1`), and the quotient `q = num/d` is corrected once
//! with its exact residual (`fma(-q, d, num)`): `q + (residual + num_lo − q·d_lo)/d`. This
//! removes the error of `E` and of `1 + E` that a plain `E/(1 + E)` keeps (2.4 ulp).
//!
//! `sigmoid(-0) = 0.5`, `sigmoid(+inf) = 1`, `sigmoid(-inf) = 0`, NaN stays NaN, tiny
//! results round once into the subnormal range. Range: always in `[0, 1]`.
//!
//! **Maximum error: 1 ulp** (measured 0.987 ulp over every `f32`, against the `f64`
//! reference `sigmoid_f64`).
//!
//! **`f64` (`F64X2` and scalar): maximum error 2 ulp** ([`MAX_ULP_F64`]; measured 0.938 ulp
//! against MPFR on a dense sample, see [`crate::vmath`]); the method is in the doc of the
//! `f64` section below (`emit_f64`).

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};

use crate::codegen::lanes::Emit;

/// Documented maximum error in ulp.
pub const MAX_ULP: f64 = 1.0;

/// Emits `sigmoid(x)` for the `f32` value `x`.
pub(crate) fn emit(e: &mut Emit, x: Value) -> Value {
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

// ---- f64 ----

/// Documented maximum error of the `f64` function in ulp of `f64`.
pub const MAX_ULP_F64: f64 = 2.0;

/// Emits `sigmoid(x)` for the `f64` value `x`: the `f32` method at `f64` precision (`E =
/// e^-|x|` from the inline `f64` [`super::exp`] as `E_hi + E_lo`, `1 + E` by Fast2Sum, the
/// quotient, formed with one division as `num·(1/d)`, corrected once with its exact
/// residual). `sigmoid(-0) = 0.5`,
/// `sigmoid(+inf) = 1`, `sigmoid(-inf) = 0`, NaN stays NaN, tiny results round once into
/// the subnormal range. Range: `[0, 1]`.
///
/// **Maximum error: 2 ulp** ([`MAX_ULP_F64`]; measured 0.938 ulp against MPFR on the dense
/// sample of 4096 inputs per binade, see [`crate::vmath`]).
pub(crate) fn emit_f64(e: &mut Emit, x: Value) -> Value {
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
