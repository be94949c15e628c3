//! Storage types: the element types a fused kernel reads and writes in memory but computes
//! in a wider type (`f16`, `bf16` in `f32`; `i8`, `u8`, `i16`, `u16` in `i32`; `u32` in
//! `i64`), and the conversions between the two that loads, stores and ops emit, so such values fuse.
//!
//! A value of storage type `t` is held in lanes of [`compute_type`]`(t)` and is always one
//! of `t`'s values there: a 16-bit float as the `f32` of the same value (exact), a narrow
//! integer as its value sign- or zero-extended to 32 bits (`u32` zero-extended to 64). Loads convert exactly; every op
//! whose result may leave `t`'s values is followed by [`narrow`] (round to nearest even to
//! the 16-bit float, NaN quieted, as the `half` crate; wrap to the integer's width), so a
//! kernel computes what the interpreter does: 16-bit floats in `f32`, rounded once per op
//! (ONNX), narrow integers wrapping in their own width.

use cranelift_codegen::ir::{InstBuilder, Value};
use graphlift_ir::{BinaryOp, ElementType, UnaryOp};

use super::half::round_to_16;
use super::lanes::Emit;
use super::plan::{KernelPlan, SlotId, SlotOp};

/// The type a value of element type `t` is computed in: `f32` for `f16` and `bf16`, `i32`
/// for `i8`, `u8`, `i16` and `u16`, `i64` for `u32` (zero-extended, so signed compares,
/// divisions and conversions of the wide type are the unsigned ones); `t` itself for every
/// other type.
pub fn compute_type(t: ElementType) -> ElementType {
    match t {
        ElementType::F16 | ElementType::BF16 => ElementType::F32,
        ElementType::I8 | ElementType::U8 | ElementType::I16 | ElementType::U16 => ElementType::I32,
        ElementType::U32 => ElementType::I64,
        other => other,
    }
}

/// Whether `t` is held in a wider type than it is stored in ([`compute_type`]).
pub fn is_narrow(t: ElementType) -> bool {
    compute_type(t) != t
}

/// The range of narrow integer type `t` (`i8`: −128..=127), to which a conversion from a
/// float saturates (Rust's `as`: out of range to the nearest bound, NaN to 0); `None` for
/// every other type.
pub fn saturation_bounds(t: ElementType) -> Option<(i64, i64)> {
    match t {
        ElementType::I8 => Some((i8::MIN.into(), i8::MAX.into())),
        ElementType::U8 => Some((0, u8::MAX.into())),
        ElementType::I16 => Some((i16::MIN.into(), i16::MAX.into())),
        ElementType::U16 => Some((0, u16::MAX.into())),
        ElementType::U32 => Some((0, u32::MAX.into())),
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
            UnaryOp::Relu | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Sign => true,
            UnaryOp::Negative | UnaryOp::Abs => float,
            _ => false,
        },
        SlotOp::Convert(_) => false,
    }
}

/// Whether every value of storage type `s` is one of `t`'s (`i8` in `i16`, `u8` in `i16`,
/// `u16`, `f16` and `bf16`; `i8` in `f16` and `bf16`; every type in itself).
fn values_within(s: ElementType, t: ElementType) -> bool {
    use ElementType::{BF16, F16, I16, I8, U16, U32, U8};
    s == t
        || matches!(
            (s, t),
            (I8, I16 | F16 | BF16) | (U8, I16 | U16 | U32 | F16 | BF16) | (U16, U32)
        )
}

/// How deep [`holds_values`] looks through the slots a value is picked from.
const HOLDS_DEPTH: usize = 8;

/// Whether slot `k` of `plan` is known to hold values of storage type `t` only (so that a
/// `Convert` of it to `t` needs no [`narrow`]): a value of a storage type within `t`
/// (`i8` within `i16`, `f16`, `bf16`; `u8` also within `u16`; a value of a storage type
/// holds its type's values and no others);
/// else, for a value of a full-width type, a constant that is one of `t`'s values, a
/// `Convert` that is the identity in the compute type (`f16` → `f32`), or what a select,
/// `Maximum`/`Minimum` or value-keeping unary op ([`keeps_values`]) picks from such values;
/// looked for through at most eight slots.
pub fn holds_values(plan: &KernelPlan, k: SlotId, t: ElementType) -> bool {
    holds_within(plan, k, t, HOLDS_DEPTH)
}

fn holds_within(plan: &KernelPlan, k: SlotId, t: ElementType, depth: usize) -> bool {
    let slot = &plan.slots[k];
    // A value of a storage type holds that type's values (narrowed or kept), no others.
    if is_narrow(slot.storage) {
        return values_within(slot.storage, t);
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
        (ElementType::I64, ElementType::U32) => u32::try_from(bits as i64).is_ok(),
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

/// The result `x` of computing slot `k` of `plan` (one part, at `e`'s form) brought to the
/// values of the slot's storage type: a conversion from a float to a narrow integer clamped
/// to the integer's range after the (saturating) conversion to the wide one
/// ([`saturation_bounds`]); any other result [`narrow`]ed, unless the op keeps the type's
/// values ([`keeps_values`]) or its operand holds them already ([`holds_values`]). The
/// identity for a slot computed in its own type. The one definition for Cranelift's loops
/// and the assembler's programs.
pub fn to_storage(e: &mut Emit, plan: &KernelPlan, k: SlotId, x: Value) -> Value {
    let slot = &plan.slots[k];
    match finish(plan, k) {
        Finish::Keep => x,
        Finish::Clamp(lo, hi) => {
            let lo = e.constant(slot.ty, lo as u64);
            let hi = e.constant(slot.ty, hi as u64);
            let x = e.b.ins().smax(x, lo);
            e.b.ins().smin(x, hi)
        }
        Finish::Narrow => narrow(e, slot.storage, x),
    }
}

/// What [`to_storage`] does to the result of a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// Nothing: the slot is computed in its own type, its op keeps the type's values, or
    /// its operand holds them already.
    Keep,
    /// A conversion from a float to a narrow integer, held to the integer's range (the
    /// wide conversion saturates at its own, so nothing is left to wrap).
    Clamp(i64, i64),
    /// [`narrow`]: rounded (16-bit floats) or wrapped (narrow integers).
    Narrow,
}

/// What the result of computing slot `k` of `plan` needs to be one of its storage type's
/// values ([`to_storage`]).
pub fn finish(plan: &KernelPlan, k: SlotId) -> Finish {
    let slot = &plan.slots[k];
    let (operand_holds, saturate) = match slot.op {
        SlotOp::Convert(a) => (
            holds_values(plan, a, slot.storage),
            saturation_bounds(slot.storage).filter(|_| plan.slots[a].ty.is_float()),
        ),
        _ => (false, None),
    };
    if let Some((lo, hi)) = saturate {
        Finish::Clamp(lo, hi)
    } else if slot.storage == slot.ty || keeps_values(&slot.op, slot.storage) || operand_holds {
        Finish::Keep
    } else {
        Finish::Narrow
    }
}

/// `x` (lanes of [`compute_type`]`(t)`) brought to one of storage type `t`'s values: a
/// 16-bit float rounded to nearest even ([`round_to_16`]), a narrow integer wrapped to its
/// width (sign- or zero-extended from it). The identity for other types.
pub fn narrow(e: &mut Emit, t: ElementType, x: Value) -> Value {
    match t {
        ElementType::F16 | ElementType::BF16 => round_to_16(e, t, x),
        ElementType::I8 | ElementType::I16 => {
            let shift = i64::from(32 - t.size_bytes() as u32 * 8);
            let up = e.b.ins().ishl_imm_u(x, shift);
            e.b.ins().sshr_imm_u(up, shift)
        }
        ElementType::U8 | ElementType::U16 => {
            let mask = e.i32(if t == ElementType::U8 { 0xff } else { 0xffff });
            e.b.ins().band(x, mask)
        }
        ElementType::U32 => {
            let mask = e.i64(0xffff_ffff);
            e.b.ins().band(x, mask)
        }
        _ => x,
    }
}
