//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::hyperbolic`]: its
//! methods and error bounds live there.

use crate::lanes::Emit;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
pub use graphlift_kernels::vmath::hyperbolic::*;

/// `(h/2)·h` with `h = exp(a/2)`: `e^a/2` for the `a` above [`BIG`], without overflowing
/// before the result does.
fn half_exp_large(e: &mut Emit, a: Value) -> Value {
    let half = e.f32(0.5);
    let a_half = e.b.ins().fmul(a, half);
    let h = super::exp::emit(e, a_half);
    let h_half = e.b.ins().fmul(h, half);
    e.b.ins().fmul(h_half, h)
}

/// `a = |x|`, the mask of the lanes where `a` is past `limit` (by `cc`), and `a` clamped to
/// `limit` in those lanes (NaN passes).
fn abs_clamped(e: &mut Emit, x: Value, limit: f32, cc: FloatCC) -> (Value, Value, Value) {
    let a = e.b.ins().fabs(x);
    let limit = e.f32(limit);
    let past = e.fcmp(cc, a, limit);
    let clamped = e.select(past, limit, a);
    (a, past, clamped)
}

/// Emits `sinh(x)` for the `f32` value `x`.
pub fn sinh(e: &mut Emit, x: Value) -> Value {
    let (a, big, a_c) = abs_clamped(e, x, BIG, FloatCC::GreaterThan);
    let em1 = super::expm1::emit(e, a_c);
    let one = e.f32(1.0);
    let half = e.f32(0.5);
    let den = e.b.ins().fadd(em1, one);
    let q = e.b.ins().fdiv(em1, den);
    let sum = e.b.ins().fadd(em1, q);
    let small = e.b.ins().fmul(sum, half);
    let large = half_exp_large(e, a);
    let r = e.select(big, large, small);
    e.copysign(r, x)
}

/// Emits `cosh(x)` for the `f32` value `x`.
pub fn cosh(e: &mut Emit, x: Value) -> Value {
    let (a, big, a_c) = abs_clamped(e, x, BIG, FloatCC::GreaterThan);
    let ex = super::exp::emit(e, a_c);
    let half = e.f32(0.5);
    let inv = e.b.ins().fdiv(half, ex);
    let small = e.b.ins().fma(ex, half, inv);
    let large = half_exp_large(e, a);
    e.select(big, large, small)
}

/// `log(a) + ln 2` for the `a` from [`HUGE`] on.
fn log_twice(e: &mut Emit, a: Value) -> Value {
    let l = super::log::emit(e, a);
    let ln2 = e.f32(LN2);
    e.b.ins().fadd(l, ln2)
}

/// Emits `asinh(x)` for the `f32` value `x`.
pub fn asinh(e: &mut Emit, x: Value) -> Value {
    let (a, is_huge, a_c) = abs_clamped(e, x, HUGE, FloatCC::GreaterThanOrEqual);
    let one = e.f32(1.0);
    // a + a²/(1 + √(1 + a²)).
    let a2 = e.b.ins().fmul(a_c, a_c);
    let s = e.b.ins().fadd(a2, one);
    let s = e.b.ins().sqrt(s);
    let den = e.b.ins().fadd(s, one);
    let q = e.b.ins().fdiv(a2, den);
    let arg = e.b.ins().fadd(a_c, q);
    let small = super::log1p::emit(e, arg);
    let large = log_twice(e, a);
    let r = e.select(is_huge, large, small);
    e.copysign(r, x)
}

/// Emits `acosh(x)` for the `f32` value `x`.
pub fn acosh(e: &mut Emit, x: Value) -> Value {
    let one = e.f32(1.0);
    let two = e.f32(2.0);
    let huge = e.f32(HUGE);
    let below_two = e.fcmp(FloatCC::LessThan, x, two);
    let is_huge = e.fcmp(FloatCC::GreaterThanOrEqual, x, huge);
    // Near 1: log1p(t + √(t·(t + 2))), t = x − 1.
    let t = e.b.ins().fsub(x, one);
    let t2 = e.b.ins().fadd(t, two);
    let w = e.b.ins().fmul(t, t2);
    let w = e.b.ins().sqrt(w);
    let arg = e.b.ins().fadd(t, w);
    let near = super::log1p::emit(e, arg);
    // Middle: log(2x − 1/(x + √(x² − 1))), on x clamped to [2, HUGE].
    let xm = e.select(below_two, two, x);
    let xm = e.select(is_huge, huge, xm);
    let minus_one = e.f32(-1.0);
    let x2m1 = e.b.ins().fma(xm, xm, minus_one);
    let s = e.b.ins().sqrt(x2m1);
    let den = e.b.ins().fadd(xm, s);
    let inv = e.b.ins().fdiv(one, den);
    let twice = e.b.ins().fadd(xm, xm);
    let arg = e.b.ins().fsub(twice, inv);
    let middle = super::log::emit(e, arg);
    let large = log_twice(e, x);
    let r = e.select(is_huge, large, middle);
    let r = e.select(below_two, near, r);
    // x < 1 is outside the domain.
    let nan = e.f32(f32::NAN);
    let outside = e.fcmp(FloatCC::LessThan, x, one);
    e.select(outside, nan, r)
}

/// Emits `atanh(x)` for the `f32` value `x`.
pub fn atanh(e: &mut Emit, x: Value) -> Value {
    let a = e.b.ins().fabs(x);
    let one = e.f32(1.0);
    let half = e.f32(0.5);
    let den = e.b.ins().fsub(one, a);
    let twice = e.b.ins().fadd(a, a);
    let q = e.b.ins().fdiv(twice, den);
    let l = super::log1p::emit(e, q);
    let r = e.b.ins().fmul(l, half);
    e.copysign(r, x)
}
