//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::log1p`]: its constants,
//! range reduction and error bounds live there.

use crate::lanes::Emit;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
pub use graphlift_kernels::vmath::log1p::*;

/// Emits `ln(1 + x)` for the `f32` value `x`.
pub fn emit(e: &mut Emit, x: Value) -> Value {
    let one = e.f32(1.0);
    let u = e.b.ins().fadd(one, x);
    let log_u = super::log::emit(e, u);
    let u_minus_one = e.b.ins().fsub(u, one);
    let c = e.b.ins().fsub(u_minus_one, x);
    let corr = e.b.ins().fdiv(c, u);
    let zero = e.f32(0.0);
    let is_nan = e.fcmp(FloatCC::Unordered, corr, corr);
    let corr = e.select(is_nan, zero, corr);
    let r = e.b.ins().fsub(log_u, corr);
    let exact_one = e.fcmp(FloatCC::Equal, u, one);
    e.select(exact_one, x, r)
}

/// Emits `ln(1 + x)` for the `f64` value `x`: the `f32` method (`u = 1 + x`, `ln(u)` from
/// the inline `f64` [`super::log`], minus the first-order correction `c/u` for the rounding
/// error `c` of `u`; `x` itself where `u = 1`). Special values: `log1p(-1) = -inf`,
/// `log1p(x < -1) = NaN`, `log1p(+inf) = +inf`, `log1p(±0) = ±0`, NaN stays NaN.
///
/// **Maximum error: 2 ulp** ([`MAX_ULP_F64`]; the measured errors are in
/// `BENCHMARKS.md`).
pub fn emit_f64(e: &mut Emit, x: Value) -> Value {
    let one = e.f64(1.0);
    let u = e.b.ins().fadd(one, x);
    let log_u = super::log::emit_f64(e, u);
    let u_minus_one = e.b.ins().fsub(u, one);
    let c = e.b.ins().fsub(u_minus_one, x);
    let corr = e.b.ins().fdiv(c, u);
    let zero = e.f64(0.0);
    let is_nan = e.fcmp(FloatCC::Unordered, corr, corr);
    let corr = e.select(is_nan, zero, corr);
    let r = e.b.ins().fsub(log_u, corr);
    let exact_one = e.fcmp(FloatCC::Equal, u, one);
    e.select(exact_one, x, r)
}
