//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::trig`]: its constants,
//! range reduction and error bounds live there. The lanes beyond [`REDUCE_MAX`] are left to
//! the caller ([`in_range`]), which calls the reference's scalar function for them.

use crate::lanes::Emit;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, Value};
use graphlift_ir::UnaryOp;
pub use graphlift_kernels::vmath::trig::*;

/// The mask of the lanes of `x` that the inline code computes: `|x| ≤` [`REDUCE_MAX`] (not
/// the infinities, not NaN).
pub fn in_range(e: &mut Emit, x: Value) -> Value {
    let a = e.b.ins().fabs(x);
    let max = e.f32(REDUCE_MAX);
    e.fcmp(FloatCC::LessThanOrEqual, a, max)
}

/// The reduction `x = k·π/2 + r`: `(q, r)` with `q = k` as `i32` lanes (only its low two bits
/// are used) and `|r| ≤ π/4` (about; exact to an ulp for `|x| ≤ REDUCE_MAX`).
fn reduce(e: &mut Emit, x: Value) -> (Value, Value) {
    let two_over_pi = e.f32(TWO_OVER_PI);
    let magic = e.f32(super::exp::MAGIC);
    let t = e.b.ins().fma(x, two_over_pi, magic);
    let k = e.b.ins().fsub(t, magic);
    let q = e.f32_bits(t);
    let neg_k = e.b.ins().fneg(k);
    let p1 = e.f32(PIO2_1);
    let p2 = e.f32(PIO2_2);
    let p3 = e.f32(PIO2_3);
    let r = e.b.ins().fma(neg_k, p1, x);
    let r = e.b.ins().fma(neg_k, p2, r);
    let r = e.b.ins().fma(neg_k, p3, r);
    (q, r)
}

/// `(sin(r), cos(r))` for `|r| ≤ π/4`: the two polynomials of the module.
fn sin_cos(e: &mut Emit, r: Value) -> (Value, Value) {
    let z = e.b.ins().fmul(r, r);
    let s = e.horner(z, &SIN);
    let rz = e.b.ins().fmul(r, z);
    let sin = e.b.ins().fma(rz, s, r);
    let c = e.horner(z, &COS);
    let z2 = e.b.ins().fmul(z, z);
    let minus_half = e.f32(-0.5);
    let one = e.f32(1.0);
    let head = e.b.ins().fma(z, minus_half, one);
    let cos = e.b.ins().fma(z2, c, head);
    (sin, cos)
}

/// Flips the sign of the `f32` lanes of `v` where bit 1 of the `i32` lanes `q` is set.
fn flip_by_bit1(e: &mut Emit, v: Value, q: Value) -> Value {
    let two = e.i32(2);
    let bit = e.b.ins().band(q, two);
    let sign = e.b.ins().ishl_imm_u(bit, 30);
    let bits = e.f32_bits(v);
    let flipped = e.b.ins().bxor(bits, sign);
    e.f32_from_bits(flipped)
}

/// Emits `op` (`Sin`, `Cos` or `Tan`) of the `f32` value `x`, for the lanes of [`in_range`]
/// (others give unspecified values).
pub fn emit(e: &mut Emit, op: UnaryOp, x: Value) -> Value {
    let (q, r) = reduce(e, x);
    let (sin, cos) = sin_cos(e, r);
    let one = e.i32(1);
    let zero = e.i32(0);
    let q_odd = e.b.ins().band(q, one);
    let odd = e.icmp(IntCC::NotEqual, q_odd, zero);
    let r = match op {
        UnaryOp::Sin => {
            // k mod 4 = 0, 1, 2, 3: sin, cos, −sin, −cos.
            let v = e.select(odd, cos, sin);
            flip_by_bit1(e, v, q)
        }
        UnaryOp::Cos => {
            // k mod 4 = 0, 1, 2, 3: cos, −sin, −cos, sin: the sign flips where k + 1 has bit 1.
            let v = e.select(odd, sin, cos);
            let q1 = e.b.ins().iadd(q, one);
            flip_by_bit1(e, v, q1)
        }
        _ => {
            // Even k: sin/cos; odd k: −cos/sin.
            let num = e.select(odd, cos, sin);
            let den = e.select(odd, sin, cos);
            let t = e.b.ins().fdiv(num, den);
            let minus = e.b.ins().fneg(t);
            e.select(odd, minus, t)
        }
    };
    if op == UnaryOp::Cos {
        return r;
    }
    // sin(±0) = tan(±0) = ±0: the reduction's `−k·PIO2_2` term is +0 for k = 0 and turns
    // r = −0 into +0.
    let zero = e.f32(0.0);
    let is_zero = e.fcmp(FloatCC::Equal, x, zero);
    e.select(is_zero, x, r)
}
