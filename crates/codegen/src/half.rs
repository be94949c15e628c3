//! The 16-bit floats (`f16`, `bf16`) in `f32` lanes: widening their bits, rounding an
//! `f32` to the nearest of their values, and the bits of such a value, in Cranelift IR
//! (x64 Cranelift 0.135 has no F16C lowering), with the `half` crate's results bit for bit.
//!
//! A value of a 16-bit float type is held in a kernel as the `f32` of the same value
//! ([`crate::storage`]); loads widen ([`bits16_to_f32`]), ops round ([`round_to_16`]),
//! stores take the bits of a value already rounded ([`bits16_of_value`]). No sequence
//! computes with `f32` subnormals except where its input is one.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, Value};
use graphlift_ir::ElementType;

use super::lanes::Emit;

/// 2^-14, the least normal `f16`, as `f32` bits.
const F16_MIN_NORMAL: i32 = 0x3880_0000;
/// The `f32` exponent bits, and the bits of infinity.
const EXPONENT: i32 = 0x7f80_0000;
/// The `f16` exponent bits, and the bits of its infinity.
const F16_EXPONENT: i32 = 0x7c00;
/// The `f32` quiet-NaN bit.
const QUIET: i32 = 0x0040_0000;

/// `i32` lanes holding a 16-bit float's bits (the low 16 bits, the rest zero) to the `f32`
/// of the same value, exactly; a NaN keeps its payload with the quiet bit set (as the
/// `half` crate and x86's `vcvtph2ps`).
///
/// `f16`: normals by moving the exponent and mantissa into `f32` place and rebiasing
/// (an integer add of 112 · 2^23); subnormals (mantissa `m`, value `m · 2^-24`) by an
/// integer-to-float conversion and a product (both exact, no subnormal operand); infinities
/// and NaNs with the exponent set to all ones. `bf16`: the bits moved to the high half.
pub fn bits16_to_f32(e: &mut Emit, t: ElementType, h: Value) -> Value {
    if t == ElementType::BF16 {
        let up = e.b.ins().ishl_imm_u(h, 16);
        let mag = e.i32(0x7fff_ffff);
        let inf = e.i32(EXPONENT);
        let a = e.b.ins().band(up, mag);
        let nan = e.icmp(IntCC::SignedGreaterThan, a, inf);
        let quiet = e.i32(QUIET);
        let q = e.b.ins().bor(up, quiet);
        let r = e.select(nan, q, up);
        return e.f32_from_bits(r);
    }
    let em_mask = e.i32(0x7fff);
    let em = e.b.ins().band(h, em_mask);
    let sign = e.b.ins().bxor(h, em);
    let sign = e.b.ins().ishl_imm_u(sign, 16);
    let shifted = e.b.ins().ishl_imm_u(em, 13);
    let rebias = e.i32(112 << 23);
    let normal = e.b.ins().iadd(shifted, rebias);
    let ty = e.f32_ty();
    let m = e.b.ins().fcvt_from_sint(ty, em);
    let step = e.f32(f32::from_bits(0x3380_0000)); // 2^-24
    let sub = e.b.ins().fmul(m, step);
    let sub = e.f32_bits(sub);
    let min_normal = e.i32(0x0400);
    let small = e.icmp(IntCC::SignedLessThan, em, min_normal);
    let finite = e.select(small, sub, normal);
    // Infinities and NaNs: the exponent all ones, NaNs quieted.
    let inf_exp = e.i32(EXPONENT);
    let special = e.b.ins().bor(shifted, inf_exp);
    let quiet = e.i32(QUIET);
    let quieted = e.b.ins().bor(special, quiet);
    let inf16 = e.i32(F16_EXPONENT);
    let is_nan = e.icmp(IntCC::SignedGreaterThan, em, inf16);
    let special = e.select(is_nan, quieted, special);
    let is_special = e.icmp(IntCC::SignedGreaterThanOrEqual, em, inf16);
    let r = e.select(is_special, special, finite);
    let r = e.b.ins().bor(r, sign);
    e.f32_from_bits(r)
}

/// `f32` lanes rounded to the nearest value of the 16-bit float type `t` (ties to even), as
/// `f32`: what the `half` crate's `from_f32` then `to_f32` give (overflow to infinity, a
/// NaN's payload cut to the type's bits, quiet bit set, sign kept).
///
/// `f16`: `|x|` is rounded by one float add and subtract of `c = 2^(e + 13)`, `e` the
/// exponent of `|x|` held to `[-14, 16]`: the sum lies in `c`'s binade, whose spacing is the
/// `f16` spacing at `|x|` (2^-24 below 2^-14), so the add rounds as wanted and the subtract
/// is exact; a result of 2^16 or more is infinity; the 13 low mantissa bits cleared (a
/// NaN's payload cut, every other result has them zero); then the sign. `bf16`: an integer add of
/// `0x7fff` plus the lowest kept bit, the low half cleared.
pub fn round_to_16(e: &mut Emit, t: ElementType, x: Value) -> Value {
    let bits = e.f32_bits(x);
    let mag_mask = e.i32(0x7fff_ffff);
    let a = e.b.ins().band(bits, mag_mask);
    let exp_bits = e.i32(EXPONENT);
    if t == ElementType::BF16 {
        let nan = e.icmp(IntCC::SignedGreaterThan, a, exp_bits);
        let lsb = e.b.ins().ushr_imm_u(bits, 16);
        let one = e.i32(1);
        let lsb = e.b.ins().band(lsb, one);
        let bias = e.i32(0x7fff);
        let r = e.b.ins().iadd(bits, bias);
        let r = e.b.ins().iadd(r, lsb);
        let quiet = e.i32(QUIET);
        let q = e.b.ins().bor(bits, quiet);
        let r = e.select(nan, q, r);
        let high = e.i32(-0x1_0000);
        let r = e.b.ins().band(r, high);
        return e.f32_from_bits(r);
    }
    let sign = e.b.ins().bxor(bits, a);
    let exp = e.b.ins().band(a, exp_bits);
    let lo = e.i32(F16_MIN_NORMAL);
    let hi = e.i32(0x4780_0000); // 2^16
    let exp = e.b.ins().smax(exp, lo);
    let exp = e.b.ins().smin(exp, hi);
    let k = e.i32(13 << 23);
    let c = e.b.ins().iadd(exp, k);
    let c = e.f32_from_bits(c);
    let mag = e.f32_from_bits(a);
    let sum = e.b.ins().fadd(mag, c);
    let r = e.b.ins().fsub(sum, c);
    let limit = e.f32(65536.0);
    let big = e.fcmp(FloatCC::GreaterThanOrEqual, r, limit);
    let inf = e.f32(f32::INFINITY);
    let r = e.select(big, inf, r);
    // A NaN (quieted by the add) keeps the ten payload bits an `f16` has; every other
    // result is an `f16` value, whose 13 low mantissa bits are zero already.
    let r = e.f32_bits(r);
    let keep = e.i32(-0x2000);
    let r = e.b.ins().band(r, keep);
    let r = e.b.ins().bor(r, sign);
    e.f32_from_bits(r)
}

/// The bits of `f32` lanes that hold values of the 16-bit float type `t` (as
/// [`round_to_16`] leaves them; NaNs quiet), in the low 16 bits of `i32` lanes (the rest
/// zero).
///
/// `f16`: normals by rebiasing the exponent and dropping the 13 low mantissa bits (zero);
/// subnormals as the integer bits of `0.5 + |x|` less those of 0.5 (exact: the sum's
/// spacing is 2^-24, the `f16` subnormal step); infinities and NaNs as the exponent all
/// ones and the payload's high bits. `bf16`: the high half.
pub fn bits16_of_value(e: &mut Emit, t: ElementType, x: Value) -> Value {
    let bits = e.f32_bits(x);
    if t == ElementType::BF16 {
        return e.b.ins().ushr_imm_u(bits, 16);
    }
    let mag_mask = e.i32(0x7fff_ffff);
    let a = e.b.ins().band(bits, mag_mask);
    let sign = e.b.ins().bxor(bits, a);
    let sign = e.b.ins().ushr_imm_u(sign, 16);
    let shifted = e.b.ins().ushr_imm_u(a, 13);
    let rebias = e.i32(112 << 10);
    let normal = e.b.ins().isub(shifted, rebias);
    let half = e.f32(0.5);
    let mag = e.f32_from_bits(a);
    let sum = e.b.ins().fadd(mag, half);
    let sum = e.f32_bits(sum);
    let half_bits = e.i32(0x3f00_0000);
    let sub = e.b.ins().isub(sum, half_bits);
    let min_normal = e.i32(F16_MIN_NORMAL);
    let small = e.icmp(IntCC::SignedLessThan, a, min_normal);
    let finite = e.select(small, sub, normal);
    let payload = e.i32(0x3ff);
    let special = e.b.ins().band(shifted, payload);
    let inf16 = e.i32(F16_EXPONENT);
    let special = e.b.ins().bor(special, inf16);
    let exp_bits = e.i32(EXPONENT);
    let is_special = e.icmp(IntCC::SignedGreaterThanOrEqual, a, exp_bits);
    let r = e.select(is_special, special, finite);
    e.b.ins().bor(r, sign)
}
