//! Storage types: the element types a fused kernel reads and writes in memory but computes
//! in a wider type (`f16`, `bf16` in `f32`; `i8`, `u8`, `i16`, `u16` in `i32`), and the
//! conversions between the two that loads, stores and ops emit, so such values fuse.
//!
//! A value of storage type `t` is held in lanes of [`compute_type`]`(t)` and is always one
//! of `t`'s values there: a 16-bit float as the `f32` of the same value (exact), a narrow
//! integer as its value sign- or zero-extended to 32 bits. Loads convert exactly; every op
//! whose result may leave `t`'s values is followed by [`narrow`] (round to nearest even to
//! the 16-bit float, NaN quieted, as the `half` crate; wrap to the integer's width), so a
//! kernel computes what the interpreter does: 16-bit floats in `f32`, rounded once per op
//! (ONNX), narrow integers wrapping in their own width.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value};
use graphlift_ir::{BinaryOp, ElementType, UnaryOp};

use super::lanes::Emit;
use super::plan::{KernelPlan, SlotId, SlotOp};

/// The type a value of element type `t` is computed in: `f32` for `f16` and `bf16`, `i32`
/// for `i8`, `u8`, `i16` and `u16`; `t` itself for every other type.
pub fn compute_type(t: ElementType) -> ElementType {
    match t {
        ElementType::F16 | ElementType::BF16 => ElementType::F32,
        ElementType::I8 | ElementType::U8 | ElementType::I16 | ElementType::U16 => {
            ElementType::I32
        }
        other => other,
    }
}

/// Whether `t` is held in a wider type than it is stored in ([`compute_type`]).
pub fn is_narrow(t: ElementType) -> bool {
    compute_type(t) != t
}

/// The range of narrow integer type `t` as floats (`i8`: −128..=127), for the saturating
/// conversion from floats (Rust's `as`: out of range to the nearest bound, NaN to 0); `None`
/// for every other type.
pub fn saturation_bounds(t: ElementType) -> Option<(f64, f64)> {
    match t {
        ElementType::I8 => Some((-128.0, 127.0)),
        ElementType::U8 => Some((0.0, 255.0)),
        ElementType::I16 => Some((-32768.0, 32767.0)),
        ElementType::U16 => Some((0.0, 65535.0)),
        _ => None,
    }
}

/// Whether `op` on values of a narrow storage type (and of operand type `from` for a
/// `Convert`) always gives one of the type's values, so needs no [`narrow`] after it:
/// selects, `Maximum`/`Minimum`, and `Relu`, `Floor`, `Ceil`, `Round`, `Sign` (and on floats
/// `Negative`, `Abs`) pick or reproduce an operand's value.
pub fn keeps_values(op: &SlotOp, t: ElementType) -> bool {
    let float = compute_type(t) == ElementType::F32;
    match op {
        SlotOp::Load { .. } | SlotOp::Const(_) | SlotOp::Select(..) | SlotOp::Compare(..) => true,
        SlotOp::Binary(b, _, _) => matches!(b, BinaryOp::Maximum | BinaryOp::Minimum),
        SlotOp::Unary(u, _) => match u {
            UnaryOp::Relu | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Sign => {
                true
            }
            UnaryOp::Negative | UnaryOp::Abs => float,
            _ => false,
        },
        SlotOp::Convert(_) => false,
    }
}

/// Whether every value of storage type `s` is one of `t`'s (`i8` in `i16`, `u8` in `i16`,
/// `u16`, `f16` and `bf16`; `i8` in `f16` and `bf16`; every type in itself).
fn values_within(s: ElementType, t: ElementType) -> bool {
    use ElementType::{BF16, F16, I16, I8, U16, U8};
    s == t
        || matches!(
            (s, t),
            (I8, I16 | F16 | BF16) | (U8, I16 | U16 | F16 | BF16)
        )
}

/// How deep [`holds_values`] looks through the slots a value is picked from.
const HOLDS_DEPTH: usize = 8;

/// Whether slot `k` of `plan` is known to hold values of storage type `t` only (so that a
/// `Convert` of it to `t` needs no [`narrow`]): a value of a type within `t`
/// ([`values_within`]: a load, or a result narrowed to its type), a constant that is one of
/// `t`'s values, a `Convert` that is the identity in the compute type (`f16` → `f32`), or
/// what a select, `Maximum`/`Minimum` or value-keeping unary op ([`keeps_values`]) picks
/// from such values; looked for through at most [`HOLDS_DEPTH`] slots.
pub fn holds_values(plan: &KernelPlan, k: SlotId, t: ElementType) -> bool {
    holds_within(plan, k, t, HOLDS_DEPTH)
}

fn holds_within(plan: &KernelPlan, k: SlotId, t: ElementType, depth: usize) -> bool {
    let slot = &plan.slots[k];
    if values_within(slot.storage, t) && (is_narrow(slot.storage) || slot.storage == t) {
        return true;
    }
    if slot.ty != compute_type(t) || depth == 0 {
        return false;
    }
    let holds = |a: SlotId| holds_within(plan, a, t, depth - 1);
    match &slot.op {
        SlotOp::Const(bits) => constant_within(*bits, slot.ty, t),
        SlotOp::Convert(a) => plan.slots[*a].ty == slot.ty && holds(*a),
        SlotOp::Select(_, a, b) => holds(*a) && holds(*b),
        SlotOp::Binary(BinaryOp::Maximum | BinaryOp::Minimum, a, b) => holds(*a) && holds(*b),
        SlotOp::Unary(_, a) if keeps_values(&slot.op, t) => holds(*a),
        _ => false,
    }
}

/// Whether the constant `bits` (of compute type `ty`) is one of storage type `t`'s values.
fn constant_within(bits: u64, ty: ElementType, t: ElementType) -> bool {
    match (ty, t) {
        (ElementType::F32, ElementType::F16) => {
            let x = f32::from_bits(bits as u32);
            graphlift_ir::f16::from_f32(x).to_f32().to_bits() == x.to_bits()
        }
        (ElementType::F32, ElementType::BF16) => {
            let x = f32::from_bits(bits as u32);
            graphlift_ir::bf16::from_f32(x).to_f32().to_bits() == x.to_bits()
        }
        (ElementType::I32, _) => {
            let v = bits as i64;
            match t {
                ElementType::I8 => i8::try_from(v).is_ok(),
                ElementType::U8 => u8::try_from(v).is_ok(),
                ElementType::I16 => i16::try_from(v).is_ok(),
                ElementType::U16 => u16::try_from(v).is_ok(),
                _ => false,
            }
        }
        _ => false,
    }
}

/// `x` (lanes of [`compute_type`]`(t)`) brought to one of storage type `t`'s values: a
/// 16-bit float rounded to nearest even ([`f32_to_bits16`] then [`bits16_to_f32`]), a
/// narrow integer wrapped to its width (sign- or zero-extended from it). The identity for
/// other types.
pub fn narrow(e: &mut Emit, t: ElementType, x: Value) -> Value {
    match t {
        ElementType::F16 | ElementType::BF16 => {
            let bits = f32_to_bits16(e, t, x);
            bits16_to_f32(e, t, bits)
        }
        ElementType::I8 | ElementType::I16 => {
            let shift = i64::from(32 - t.size_bytes() as u32 * 8);
            let up = e.b.ins().ishl_imm_u(x, shift);
            e.b.ins().sshr_imm_u(up, shift)
        }
        ElementType::U8 | ElementType::U16 => {
            let mask = e.i32(if t == ElementType::U8 { 0xff } else { 0xffff });
            e.b.ins().band(x, mask)
        }
        _ => x,
    }
}

/// `i32` lanes holding a 16-bit float's bits (in the low 16 bits, the rest zero) to the
/// `f32` of the same value, exactly; a NaN keeps its payload with the quiet bit set (as
/// the `half` crate and x86's `vcvtph2ps`).
///
/// `f16`: the exponent and mantissa shifted into `f32` place and scaled by 2^112 (which
/// rebias normals and normalizes subnormals exactly), infinities and NaNs by their bits.
/// `bf16`: the bits shifted into the high half.
pub fn bits16_to_f32(e: &mut Emit, t: ElementType, h: Value) -> Value {
    if t == ElementType::BF16 {
        let up = e.b.ins().ishl_imm_u(h, 16);
        let mag = e.i32(0x7fff_ffff);
        let inf = e.i32(0x7f80_0000);
        let a = e.b.ins().band(up, mag);
        let nan = e.icmp(IntCC::SignedGreaterThan, a, inf);
        let quiet = e.i32(0x0040_0000);
        let q = e.b.ins().bor(up, quiet);
        let r = e.select(nan, q, up);
        return e.f32_from_bits(r);
    }
    let em_mask = e.i32(0x7fff);
    let em = e.b.ins().band(h, em_mask);
    let sign = e.b.ins().bxor(h, em);
    let sign = e.b.ins().ishl_imm_u(sign, 16);
    let shifted = e.b.ins().ishl_imm_u(em, 13);
    // Finite values: exact, since a product with a power of two only moves the exponent.
    let f = e.f32_from_bits(shifted);
    let scale = e.f32(f32::from_bits(0x7780_0000)); // 2^112
    let finite = e.b.ins().fmul(f, scale);
    let finite = e.f32_bits(finite);
    // Infinities and NaNs: the exponent all ones, NaNs quieted.
    let inf_exp = e.i32(0x7f80_0000);
    let special = e.b.ins().bor(shifted, inf_exp);
    let quiet = e.i32(0x0040_0000);
    let quieted = e.b.ins().bor(special, quiet);
    let inf16 = e.i32(0x7c00);
    let is_nan = e.icmp(IntCC::SignedGreaterThan, em, inf16);
    let special = e.select(is_nan, quieted, special);
    let is_special = e.icmp(IntCC::SignedGreaterThanOrEqual, em, inf16);
    let r = e.select(is_special, special, finite);
    let r = e.b.ins().bor(r, sign);
    e.f32_from_bits(r)
}

/// `f32` lanes to the bits of the nearest 16-bit float (ties to even), in the low 16 bits
/// of `i32` lanes (the rest zero): the same bits as the `half` crate's `from_f32` and x86's
/// `vcvtps2ph` with round-to-nearest: overflow to infinity, NaN quieted with its payload's
/// high bits kept.
///
/// `f16` (after F. Giesen's `float_to_half_fast3_rtne`): infinities and NaNs by their bits;
/// magnitudes from 65520 up to infinity; normals rebiased and rounded by adding
/// `0xfff + lsb` before the shift; subnormals (below 2^-14) by one float add of 0.5, whose
/// rounding to the `f32` spacing there (2^-24, the `f16` subnormal step) is the rounding
/// wanted, leaving the mantissa in the low bits. `bf16`: the high half after adding
/// `0x7fff + lsb`; NaN: the high half with the quiet bit set.
pub fn f32_to_bits16(e: &mut Emit, t: ElementType, x: Value) -> Value {
    let bits = e.f32_bits(x);
    let mag_mask = e.i32(0x7fff_ffff);
    let a = e.b.ins().band(bits, mag_mask);
    let inf = e.i32(0x7f80_0000);
    let is_nan = e.icmp(IntCC::SignedGreaterThan, a, inf);
    if t == ElementType::BF16 {
        let lsb = e.b.ins().ushr_imm_u(bits, 16);
        let one = e.i32(1);
        let lsb = e.b.ins().band(lsb, one);
        let bias = e.i32(0x7fff);
        let r = e.b.ins().iadd(bits, bias);
        let r = e.b.ins().iadd(r, lsb);
        let rounded = e.b.ins().ushr_imm_u(r, 16);
        let high = e.b.ins().ushr_imm_u(bits, 16);
        let quiet = e.i32(0x0040);
        let nan = e.b.ins().bor(high, quiet);
        return e.select(is_nan, nan, rounded);
    }
    let sign = e.b.ins().bxor(bits, a);
    let sign = e.b.ins().ushr_imm_u(sign, 16);
    // NaN: 0x7e00 | the payload's high bits; infinity and overflow: 0x7c00.
    let payload = e.b.ins().ushr_imm_u(a, 13);
    let payload_mask = e.i32(0x3ff);
    let payload = e.b.ins().band(payload, payload_mask);
    let nan_bits = e.i32(0x7e00);
    let nan = e.b.ins().bor(payload, nan_bits);
    let inf16 = e.i32(0x7c00);
    let special = e.select(is_nan, nan, inf16);
    // Normals: rebias (127 → 15) and round to nearest even at bit 13.
    let lsb = e.b.ins().ushr_imm_u(a, 13);
    let one = e.i32(1);
    let lsb = e.b.ins().band(lsb, one);
    let rebias = e.i32(0xfff - 0x3800_0000);
    let n = e.b.ins().iadd(a, rebias);
    let n = e.b.ins().iadd(n, lsb);
    let normal = e.b.ins().ushr_imm_u(n, 13);
    // Subnormals and zero: 0.5 + |x| rounds |x| to a multiple of 2^-24.
    let half = e.f32(0.5);
    let mag = e.f32_from_bits(a);
    let sum = e.b.ins().fadd(mag, half);
    let sum = e.f32_bits(sum);
    let half_bits = e.i32(0x3f00_0000);
    let sub = e.b.ins().isub(sum, half_bits);
    let min_normal = e.i32(0x3880_0000); // 2^-14
    let small = e.icmp(IntCC::SignedLessThan, a, min_normal);
    let finite = e.select(small, sub, normal);
    let overflow = e.i32(0x477f_f000); // 65520: rounds to infinity
    let big = e.icmp(IntCC::SignedGreaterThanOrEqual, a, overflow);
    let r = e.select(big, special, finite);
    e.b.ins().bor(r, sign)
}
