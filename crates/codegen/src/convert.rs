//! Exact `i64` ↔ `f64` vector conversions by the 1.5 · 2^52 magic-number trick, for lanes
//! within ±2^51, because x64 Cranelift lowers these conversions to scalar code or not at all.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, BlockArg, InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;
use graphlift_ir::ElementType;

use super::lanes::{cast_flags, Emit, Lanes};
use crate::JitError;

/// 1.5 · 2^52, where the `f64` spacing is exactly 1: an integer `k` with `|k| < 2^51` added
/// to it is exact, and the sum's bits are `MAGIC.to_bits() + k`. So an integer becomes a
/// float by an integer add and a float subtract, and a truncated float becomes an integer by
/// a float add and an integer subtract.
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// 2^51: the magnitude below which the fast conversions are exact.
///
/// Lanes in this range (masks, indices, counts: the common case) avoid Cranelift 0.135's
/// x64 lowering, which has none for `fcvt_to_sint_sat.i64x2` and turns `fcvt_from_sint` of
/// `I64X2` into two scalar `cvtsi2sd`. Each conversion also gives the mask of the lanes where
/// it is exact; a kernel checks all lanes at once ([`unless_all`]) and runs the per-lane
/// scalar code otherwise.
pub const SMALL: f32 = 2_251_799_813_685_248.0;

/// `i64` lanes to `f64`, exact where `|x| < 2^51` (`bits(MAGIC) + x` read as a float,
/// minus `MAGIC`), and the mask of the lanes where that holds: exactly those whose sum kept
/// `MAGIC`'s sign and exponent.
pub fn small_i64_to_f64(b: &mut FunctionBuilder, x: Value) -> (Value, Value) {
    let mut e = Emit::new(b, Lanes::X2);
    let magic_bits = e.constant(ElementType::I64, MAGIC.to_bits());
    let magic = e.constant(ElementType::F64, MAGIC.to_bits());
    let exponent = e.constant(ElementType::I64, MAGIC.to_bits() >> 52);
    let v = b.ins().iadd(x, magic_bits);
    let top = b.ins().ushr_imm_u(v, 52);
    let ok = b.ins().icmp(IntCC::Equal, top, exponent);
    let f = b.ins().bitcast(types::F64X2, cast_flags(), v);
    (b.ins().fsub(f, magic), ok)
}

/// `f64` lanes to `i64`, truncating, exact where `|x| < 2^51` (`trunc(x) + MAGIC` read as
/// bits, minus `bits(MAGIC)`), and the mask (`I64X2`) of those lanes (NaN is not one).
pub fn small_f64_to_i64(b: &mut FunctionBuilder, x: Value) -> (Value, Value) {
    let mut e = Emit::new(b, Lanes::X2);
    let magic_bits = e.constant(ElementType::I64, MAGIC.to_bits());
    let magic = e.constant(ElementType::F64, MAGIC.to_bits());
    let limit = e.constant(ElementType::F64, f64::from(SMALL).to_bits());
    let mag = b.ins().fabs(x);
    let ok = b.ins().fcmp(FloatCC::LessThan, mag, limit);
    let t = b.ins().trunc(x);
    let f = b.ins().fadd(t, magic);
    let v = b.ins().bitcast(types::I64X2, cast_flags(), f);
    (b.ins().isub(v, magic_bits), ok)
}

/// `fast` when every lane of the mask `ok` is set, else what `slow` computes (emitted in a
/// block of its own, branched to once per vector); the builder continues after both.
///
/// # Errors
/// What `slow` returns.
pub fn unless_all(
    b: &mut FunctionBuilder,
    ok: Value,
    fast: Value,
    slow: impl FnOnce(&mut FunctionBuilder) -> Result<Value, JitError>,
) -> Result<Value, JitError> {
    let v = unless_all_parts(b, ok, &[fast], |b| slow(b).map(|v| vec![v]))?;
    Ok(v[0])
}

/// [`unless_all`] for several values at once.
///
/// # Errors
/// What `slow` returns.
pub fn unless_all_parts(
    b: &mut FunctionBuilder,
    ok: Value,
    fast: &[Value],
    slow: impl FnOnce(&mut FunctionBuilder) -> Result<Vec<Value>, JitError>,
) -> Result<Vec<Value>, JitError> {
    let all = b.ins().vall_true(ok);
    let slow_block = b.create_block();
    let merge = b.create_block();
    let outs: Vec<Value> = fast
        .iter()
        .map(|&v| {
            let ty = b.func.dfg.value_type(v);
            b.append_block_param(merge, ty)
        })
        .collect();
    let args: Vec<BlockArg> = fast.iter().map(|&v| BlockArg::Value(v)).collect();
    b.ins().brif(all, merge, &args, slow_block, &[]);
    b.switch_to_block(slow_block);
    let vs = slow(b)?;
    let args: Vec<BlockArg> = vs.iter().map(|&v| BlockArg::Value(v)).collect();
    b.ins().jump(merge, &args);
    b.switch_to_block(merge);
    Ok(outs)
}
