//! Mixed-width kernels ([`Lanes::Mixed`]): four elements per loop body, each value in *parts*
//! (a 32-bit number one `X4` vector, a 64-bit number two `X2` vectors), since x64 Cranelift
//! has 128-bit vectors only and one vector cannot hold lanes of two widths.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, ConstantData, InstBuilder, Type, Value};
use cranelift_frontend::FunctionBuilder;
use graphlift_ir::ElementType;

use super::convert::{small_f64_to_i64, small_i64_to_f64, unless_all, unless_all_parts, SMALL};
use super::lanes::{cast_flags, Emit, Lanes};
use super::plan::{KernelPlan, SlotOp};

/// The form of every slot's value: its own width for numbers, and for `bool` the form of
/// what it was computed from (loads and constants: `X4`). Every slot of a kernel that is not
/// `Mixed` has the kernel's width.
///
/// A 32-bit number is one `X4` vector (elements 0–3), a 64-bit number two `X2` vectors
/// (elements 0–1, then 2–3). A `bool` mask takes the form (`X4`: one `I32X4`, or `X2`: two
/// `I64X2`) of what it was computed from: a comparison the width of its operands, a
/// conversion to `bool` the width of its source, logic and selects of masks the form of their
/// first mask operand, loads and constants `X4`. Where a mask meets values of the other width
/// (a compare on `f32` selecting between `f64` values, a mask stored next to `i64` values,
/// ...) it is moved between forms by [`reform`].
pub fn forms(plan: &KernelPlan) -> Vec<Lanes> {
    let mut forms: Vec<Lanes> = Vec::with_capacity(plan.slots.len());
    for slot in &plan.slots {
        let form = match (plan.lanes, slot.ty, &slot.op) {
            (Lanes::Mixed, ElementType::Bool, op) => match op {
                SlotOp::Unary(_, a)
                | SlotOp::Convert(a)
                | SlotOp::Binary(_, a, _)
                | SlotOp::Compare(_, a, _)
                | SlotOp::Select(_, a, _) => forms[*a],
                SlotOp::Load { .. } | SlotOp::Const(_) => Lanes::X4,
            },
            (l, t, _) => l.of_number(t),
        };
        forms.push(form);
    }
    forms
}

/// How many vectors a value of form `form` takes in a loop of width `loop_lanes`: 2 for an
/// `X2` value in a `Mixed` loop, else 1.
pub fn parts(loop_lanes: Lanes, form: Lanes) -> usize {
    loop_lanes.count() / form.count()
}

/// A mask's parts in form `to` (from form `from`): `swiden_low` / `swiden_high` one way, one
/// shuffle of the low 32 bits of each lane the other (a mask lane is all-ones or all-zeros,
/// so both keep it).
pub fn reform(b: &mut FunctionBuilder, v: &[Value], from: Lanes, to: Lanes) -> Vec<Value> {
    match (from, to, v) {
        (Lanes::X4, Lanes::X2, &[m]) => vec![b.ins().swiden_low(m), b.ins().swiden_high(m)],
        (Lanes::X2, Lanes::X4, &[lo, hi]) => vec![low_words(b, lo, hi)],
        _ => v.to_vec(),
    }
}

/// The bytes `picks` (0–15 from `a`, 16–31 from `c`) of two 128-bit vectors, as `ty`.
fn shuffle_bytes(b: &mut FunctionBuilder, a: Value, c: Value, picks: [u8; 16], ty: Type) -> Value {
    let a = b.ins().bitcast(types::I8X16, cast_flags(), a);
    let c = b.ins().bitcast(types::I8X16, cast_flags(), c);
    let picks = b
        .func
        .dfg
        .immediates
        .push(ConstantData::from(picks.to_vec()));
    let r = b.ins().shuffle(a, c, picks);
    b.ins().bitcast(ty, cast_flags(), r)
}

/// The low 32 bits of each 64-bit lane of `lo` then `hi`, as one `I32X4`.
fn low_words(b: &mut FunctionBuilder, lo: Value, hi: Value) -> Value {
    let picks = [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27];
    shuffle_bytes(b, lo, hi, picks, types::I32X4)
}

/// The high 32 bits of each 64-bit lane of `lo` then `hi`, as one `I32X4`.
fn high_words(b: &mut FunctionBuilder, lo: Value, hi: Value) -> Value {
    let picks = [4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31];
    shuffle_bytes(b, lo, hi, picks, types::I32X4)
}

/// Lanes 0–1 of `lo` then lanes 0–1 of `hi` (32-bit lanes), as `ty`.
fn low_halves(b: &mut FunctionBuilder, lo: Value, hi: Value, ty: Type) -> Value {
    let picks = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
    shuffle_bytes(b, lo, hi, picks, ty)
}

/// Lanes 2–3 of a 32-bit vector moved to lanes 0–1 (lanes 2–3 keep theirs).
fn high_half(b: &mut FunctionBuilder, v: Value) -> Value {
    let ty = b.func.dfg.value_type(v);
    let picks = [8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15];
    shuffle_bytes(b, v, v, picks, ty)
}

/// Converts `x` (parts of `from`) to `to` when the two are numbers of different widths in a
/// `Mixed` loop; `None` for every other conversion (`f64` ↔ `i64`, `f32` ↔ `i32`, to and from
/// `bool`: done part by part by [`super::lower`]).
///
/// The interpreter's semantics are kept (Rust's `as`: float to int saturates, NaN → 0; int
/// to float rounds to nearest; `i64` → `i32` wraps):
///
/// | from → to | lowering |
/// |---|---|
/// | `f32` → `f64` | `fvpromote_low` of the vector and of its high half (`cvtps2pd`) |
/// | `f64` → `f32` | `fvdemote` of each part (`cvtpd2ps`), the low halves joined by a shuffle |
/// | `i32` → `i64` | `swiden_low` / `swiden_high` (`pmovsxdq`) |
/// | `i64` → `i32` | the low 32 bits of each lane, one shuffle of both parts (wrapping) |
/// | `i32` → `f64` | `fcvt_from_sint` of `swiden_low` (`cvtdq2pd`, exact) of each half |
/// | `f64` → `i32` | `snarrow(fcvt_to_sint_sat.i64x2(x), 0)` (x64's NaN-to-0, clamping `cvttpd2dq` pattern) per part, joined by a shuffle |
/// | `f32` → `i64` | when all four lanes are within ±2^51: `fvpromote_low` (exact), then [`super::convert`]'s exact vector code; else per lane: scalar `fcvt_to_sint_sat` (x64 has no `fcvt_to_sint_sat.i64x2`) |
/// | `i64` → `f32` | when all four lanes are `i32` values: their low words by one shuffle, `fcvt_from_sint` (`cvtdq2ps`, one rounding); else when all are within ±2^51: exact to `f64` by [`super::convert`], then `fvdemote` (one rounding); else per lane: scalar `fcvt_from_sint` (no vector form; through `f64` it would round twice) |
pub fn convert_across(
    b: &mut FunctionBuilder,
    from: ElementType,
    to: ElementType,
    x: &[Value],
) -> Option<Vec<Value>> {
    use ElementType::{F32, F64, I32, I64};
    Some(match (from, to, x) {
        (F32, F64, &[v]) => {
            let hi = high_half(b, v);
            vec![b.ins().fvpromote_low(v), b.ins().fvpromote_low(hi)]
        }
        (F64, F32, &[lo, hi]) => {
            let lo = b.ins().fvdemote(lo);
            let hi = b.ins().fvdemote(hi);
            vec![low_halves(b, lo, hi, types::F32X4)]
        }
        (I32, I64, &[v]) => vec![b.ins().swiden_low(v), b.ins().swiden_high(v)],
        (I64, I32, &[lo, hi]) => vec![low_words(b, lo, hi)],
        (I32, F64, &[v]) => {
            let hi = high_half(b, v);
            [v, hi]
                .into_iter()
                .map(|h| {
                    let w = b.ins().swiden_low(h);
                    b.ins().fcvt_from_sint(types::F64X2, w)
                })
                .collect()
        }
        (F64, I32, &[lo, hi]) => {
            let zero = Emit::new(b, Lanes::X2).constant(I64, 0);
            let [lo, hi] = [lo, hi].map(|h| {
                let wide = b.ins().fcvt_to_sint_sat(types::I64X2, h);
                b.ins().snarrow(wide, zero)
            });
            vec![low_halves(b, lo, hi, types::I32X4)]
        }
        (F32, I64, &[v]) => {
            // Fast: every lane within ±2^51 (not NaN): exact through f64. Else per lane.
            let mut e = Emit::new(b, Lanes::X4);
            let limit = e.f32(SMALL);
            let mag = b.ins().fabs(v);
            let ok = b.ins().fcmp(FloatCC::LessThan, mag, limit);
            let hi = high_half(b, v);
            let fast: Vec<Value> = [v, hi]
                .into_iter()
                .map(|h| {
                    let d = b.ins().fvpromote_low(h);
                    small_f64_to_i64(b, d).0
                })
                .collect();
            unless_all_parts(b, ok, &fast, |b| {
                let lanes: Vec<Value> = (0..4)
                    .map(|l| {
                        let s = b.ins().extractlane(v, l);
                        b.ins().fcvt_to_sint_sat(types::I64, s)
                    })
                    .collect();
                Ok(lanes
                    .chunks(2)
                    .zip(&fast)
                    .map(|(pair, &f)| {
                        let v = b.ins().insertlane(f, pair[0], 0);
                        b.ins().insertlane(v, pair[1], 1)
                    })
                    .collect())
            })
            .ok()?
        }
        (I64, F32, &[lo, hi]) => {
            // No vector form, and going through f64 would round twice (2^60 + 2^36 + 1).
            // Fastest: every lane is an i32 (its high word is its low word's sign), and
            // `cvtdq2ps` rounds once. Else every lane within ±2^51 converts exactly to f64,
            // and `fvdemote` rounds once. Else per lane.
            let low = low_words(b, lo, hi);
            let high = high_words(b, lo, hi);
            let sign = b.ins().sshr_imm_u(low, 31);
            let ok = b.ins().icmp(IntCC::Equal, high, sign);
            let fast = b.ins().fcvt_from_sint(types::F32X4, low);
            let v = unless_all(b, ok, fast, |b| {
                let (flo, ok_lo) = small_i64_to_f64(b, lo);
                let (fhi, ok_hi) = small_i64_to_f64(b, hi);
                let ok = b.ins().band(ok_lo, ok_hi);
                let dlo = b.ins().fvdemote(flo);
                let dhi = b.ins().fvdemote(fhi);
                let medium = low_halves(b, dlo, dhi, types::F32X4);
                unless_all(b, ok, medium, |b| {
                    let mut acc = medium;
                    for l in 0..4u8 {
                        let s = b.ins().extractlane([lo, hi][usize::from(l / 2)], l % 2);
                        let f = b.ins().fcvt_from_sint(types::F32, s);
                        acc = b.ins().insertlane(acc, f, l);
                    }
                    Ok(acc)
                })
            })
            .ok()?;
            vec![v]
        }
        _ => return None,
    })
}
