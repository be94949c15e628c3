//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath`]: its constants,
//! range reduction and error bounds live there.

use crate::lanes::Emit;
use cranelift_codegen::ir::{InstBuilder, Value};
use graphlift_ir::{ElementType, UnaryOp};
pub use graphlift_kernels::vmath::*;
pub mod erf;
pub mod exp;
pub mod expm1;
pub mod hyperbolic;
pub mod inverse_trig;
pub mod log;
pub mod log1p;
pub mod pow;
pub mod sigmoid;
pub mod tanh;
pub mod trig;
pub mod two_piece;

/// Emits the inline approximation of `op` on `x` of element type `t` (`f32` or `f64`), or
/// `None` if `op` has none on `t`. For `Sin`, `Cos` and `Tan` the value is only meant for
/// the lanes of [`trig::in_range`]: the caller computes the others ([`trig_fallback`]).
pub fn emit(e: &mut Emit, op: UnaryOp, t: ElementType, x: Value) -> Option<Value> {
    Some(match (t, op) {
        (ElementType::F32, UnaryOp::Exp) => exp::emit(e, x),
        (ElementType::F32, UnaryOp::Log) => log::emit(e, x),
        (ElementType::F32, UnaryOp::Tanh) => tanh::emit(e, x),
        (ElementType::F32, UnaryOp::Sigmoid) => sigmoid::emit(e, x),
        (ElementType::F32, UnaryOp::Erf) => erf::emit(e, x),
        (ElementType::F32, UnaryOp::Expm1) => expm1::emit(e, x),
        (ElementType::F32, UnaryOp::Log1p) => log1p::emit(e, x),
        (ElementType::F32, UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Tan) => trig::emit(e, op, x),
        (ElementType::F32, UnaryOp::Asin | UnaryOp::Acos) => inverse_trig::emit_asin_acos(e, op, x),
        (ElementType::F32, UnaryOp::Atan) => inverse_trig::atan(e, x),
        (ElementType::F32, UnaryOp::Sinh) => hyperbolic::sinh(e, x),
        (ElementType::F32, UnaryOp::Cosh) => hyperbolic::cosh(e, x),
        (ElementType::F32, UnaryOp::Asinh) => hyperbolic::asinh(e, x),
        (ElementType::F32, UnaryOp::Acosh) => hyperbolic::acosh(e, x),
        (ElementType::F32, UnaryOp::Atanh) => hyperbolic::atanh(e, x),
        (ElementType::F64, UnaryOp::Exp) => exp::emit_f64(e, x),
        (ElementType::F64, UnaryOp::Log) => log::emit_f64(e, x),
        (ElementType::F64, UnaryOp::Tanh) => tanh::emit_f64(e, x),
        (ElementType::F64, UnaryOp::Sigmoid) => sigmoid::emit_f64(e, x),
        (ElementType::F64, UnaryOp::Erf) => erf::emit_f64(e, x),
        (ElementType::F64, UnaryOp::Expm1) => expm1::emit_f64(e, x),
        (ElementType::F64, UnaryOp::Log1p) => log1p::emit_f64(e, x),
        _ => return None,
    })
}

/// Whether `op` on `t` has an inline approximation ([`emit`] gives `Some`): exactly the
/// functions with a documented bound ([`max_ulp`]).
pub fn inline(op: UnaryOp, t: ElementType) -> bool {
    max_ulp(op, t).is_some()
}

/// Whether the inline code of `op` on `t` covers only part of the inputs and the caller must
/// compute the lanes outside [`trig::in_range`] with the reference's scalar function:
/// `Sin`, `Cos`, `Tan` on `f32` (the Cody–Waite reduction holds up to
/// [`trig::REDUCE_MAX`]; infinities and NaN go there too).
pub fn trig_fallback(op: UnaryOp, t: ElementType) -> bool {
    t == ElementType::F32 && matches!(op, UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Tan)
}

/// Fast2Sum (Dekker 1971): `(s, err)` with `s + err = a + b` exactly, when `|a| ≥ |b|` (or
/// `a` is zero), in three float operations on lanes of either element type.
pub fn fast_two_sum(e: &mut Emit, a: Value, b: Value) -> (Value, Value) {
    let s = e.b.ins().fadd(a, b);
    let b_in_s = e.b.ins().fsub(s, a);
    let err = e.b.ins().fsub(b, b_in_s);
    (s, err)
}
