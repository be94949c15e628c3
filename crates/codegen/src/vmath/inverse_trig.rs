//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::inverse_trig`]: its
//! constants, reductions and error bounds live there.

use crate::lanes::Emit;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
use graphlift_ir::UnaryOp;
pub use graphlift_kernels::vmath::inverse_trig::*;

/// Emits `atan(x)` for the `f32` value `x`.
pub fn atan(e: &mut Emit, x: Value) -> Value {
    let a = e.b.ins().fabs(x);
    let one = e.f32(1.0);
    let minus_one = e.f32(-1.0);
    let zero = e.f32(0.0);
    let big_limit = e.f32(TAN_3PI_8);
    let mid_limit = e.f32(TAN_PI_8);
    let big = e.fcmp(FloatCC::GreaterThan, a, big_limit);
    let mid = e.fcmp(FloatCC::GreaterThan, a, mid_limit);
    let inv = e.b.ins().fdiv(minus_one, a);
    let am1 = e.b.ins().fsub(a, one);
    let ap1 = e.b.ins().fadd(a, one);
    let ratio = e.b.ins().fdiv(am1, ap1);
    let t = e.select(mid, ratio, a);
    let t = e.select(big, inv, t);
    let (pio4_hi, pio4_lo) = (e.f32(PIO4_HI), e.f32(PIO4_LO));
    let (pio2_hi, pio2_lo) = (e.f32(PIO2_HI), e.f32(PIO2_LO));
    let hi = e.select(mid, pio4_hi, zero);
    let hi = e.select(big, pio2_hi, hi);
    let lo = e.select(mid, pio4_lo, zero);
    let lo = e.select(big, pio2_lo, lo);
    let z = e.b.ins().fmul(t, t);
    let p = e.horner(z, &ATAN);
    let tz = e.b.ins().fmul(t, z);
    // (t + lo) + t·z·A(z), then + hi.
    let tail = e.b.ins().fadd(t, lo);
    let tail = e.b.ins().fma(tz, p, tail);
    let r = e.b.ins().fadd(hi, tail);
    e.copysign(r, x)
}

/// Emits `op` (`Asin` or `Acos`) of the `f32` value `x`.
pub fn emit_asin_acos(e: &mut Emit, op: UnaryOp, x: Value) -> Value {
    let a = e.b.ins().fabs(x);
    let half = e.f32(0.5);
    let one = e.f32(1.0);
    let two = e.f32(2.0);
    let big = e.fcmp(FloatCC::GreaterThan, a, half);
    // z = (1 − a)/2 (exact for a ≥ 1/2) and u = √z above 1/2; z = a², u = a below.
    let one_minus = e.b.ins().fsub(one, a);
    let z_big = e.b.ins().fmul(one_minus, half);
    let a2 = e.b.ins().fmul(a, a);
    let z = e.select(big, z_big, a2);
    let s = e.b.ins().sqrt(z);
    let u = e.select(big, s, a);
    let p = e.horner(z, &ASIN);
    let uz = e.b.ins().fmul(u, z);
    // t = asin(u).
    let t = e.b.ins().fma(uz, p, u);
    let (pio2_hi, pio2_lo) = (e.f32(PIO2_HI), e.f32(PIO2_LO));
    let two_t = e.b.ins().fmul(two, t);
    if op == UnaryOp::Asin {
        // a > 1/2: π/2 − 2t = PIO2_HI − (2t − PIO2_LO).
        let w = e.b.ins().fsub(two_t, pio2_lo);
        let r_big = e.b.ins().fsub(pio2_hi, w);
        let r = e.select(big, r_big, t);
        return e.copysign(r, x);
    }
    // |x| ≤ 1/2: π/2 − asin(x) = PIO2_HI − (asin(x) − PIO2_LO).
    let signed_t = e.copysign(t, x);
    let w = e.b.ins().fsub(signed_t, pio2_lo);
    let small = e.b.ins().fsub(pio2_hi, w);
    // x > 1/2: 2t; x < −1/2: π − 2t = PI_HI − (2t − PI_LO).
    let (pi_hi, pi_lo) = (e.f32(PI_HI), e.f32(PI_LO));
    let w = e.b.ins().fsub(two_t, pi_lo);
    let negative = e.b.ins().fsub(pi_hi, w);
    let zero = e.f32(0.0);
    let below = e.fcmp(FloatCC::LessThan, x, zero);
    let r_big = e.select(below, negative, two_t);
    e.select(big, r_big, small)
}
