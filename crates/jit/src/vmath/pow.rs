//! `x^y` for `f32` lanes (the lowering of `Power` on `f32`), through `f64`.
//!
//! Each `f32` pair is promoted to `f64` (exact), `|x|^y = e^(y·ln|x|)` is computed with the
//! inline `f64` [`super::log`] and [`super::exp`], and the result is demoted to `f32` once.
//! The `f64` intermediate is accurate to about `|y·ln|x||·2^-52` relative (under `2.4e-14`
//! wherever the `f32` result is finite and non-zero, as `|y·ln|x|| < 104` there), so the only
//! error of note is the final rounding: the result is within 1 ulp of `f32` (see
//! [`MAX_ULP`]).
//!
//! IEEE 754 `pow` special cases, as the interpreter's `f64::powf` gives them: `pow(x, ±0) =
//! 1` and `pow(1, y) = 1` for every `x`, `y` (NaN included); `pow(-1, ±inf) = 1`; a negative
//! finite `x` with a non-integer finite `y` gives NaN; a negative `x` (`-0` and `-inf`
//! included) with an odd integer `y` gives a negative result, with an even integer `y` or
//! an infinite one a positive one; `±0` and `±inf` bases and infinite exponents follow from
//! `e^(±inf) ∈ {0, inf}` (`pow(0, y < 0) = inf`, `pow(|x| < 1, -inf) = inf`, ...); any
//! other NaN operand gives NaN.
//!
//! In a vector loop the `F32X4` operands are split into two `F64X2` halves
//! (`fvpromote_low` of the low lanes and of the high lanes moved down by a byte shuffle),
//! computed, demoted with `fvdemote` and put back together with one shuffle.

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{types, ConstantData, InstBuilder, Value};

use crate::codegen::lanes::{cast_flags, Emit, Lanes};

/// Documented maximum error of the `f32` function, in ulp of `f32` against the `f64`
/// reference `f64::powf` (before rounding).
pub const MAX_ULP: f64 = 1.0;

/// Emits `x^y` for `f32` values `x`, `y` (at [`Lanes::X4`] or [`Lanes::X1`]).
pub(crate) fn emit(e: &mut Emit, x: Value, y: Value) -> Value {
    match e.lanes {
        Lanes::X1 => {
            let xd = e.b.ins().fpromote(types::F64, x);
            let yd = e.b.ins().fpromote(types::F64, y);
            let r = emit_f64(e, xd, yd);
            e.b.ins().fdemote(types::F32, r)
        }
        _ => {
            let (xl, xh) = halves(e, x);
            let (yl, yh) = halves(e, y);
            let rl = e.with_lanes(Lanes::X2, |e| emit_f64(e, xl, yl));
            let rh = e.with_lanes(Lanes::X2, |e| emit_f64(e, xh, yh));
            let dl = e.b.ins().fvdemote(rl);
            let dh = e.b.ins().fvdemote(rh);
            // Lanes 0, 1 of dl, then lanes 0, 1 of dh.
            let mask: Vec<u8> = (0..8).chain(16..24).collect();
            shuffle(e, dl, dh, mask)
        }
    }
}

/// The two `F64X2` halves of an `F32X4`: lanes 0, 1 and lanes 2, 3.
fn halves(e: &mut Emit, v: Value) -> (Value, Value) {
    let lo = e.b.ins().fvpromote_low(v);
    let mask: Vec<u8> = (8..16).chain(8..16).collect();
    let high = shuffle(e, v, v, mask);
    let hi = e.b.ins().fvpromote_low(high);
    (lo, hi)
}

/// A byte shuffle of two `F32X4` values (`mask` indexes the 32 bytes of `a` then `b`).
fn shuffle(e: &mut Emit, a: Value, b: Value, mask: Vec<u8>) -> Value {
    let a8 = e.b.ins().bitcast(types::I8X16, cast_flags(), a);
    let b8 = e.b.ins().bitcast(types::I8X16, cast_flags(), b);
    let imm = e.b.func.dfg.immediates.push(ConstantData::from(mask));
    let s = e.b.ins().shuffle(a8, b8, imm);
    e.b.ins().bitcast(types::F32X4, cast_flags(), s)
}

/// `x^y` for `f64` lanes (the `f32` function's core; its accuracy is stated for `f32`).
pub(crate) fn emit_f64(e: &mut Emit, x: Value, y: Value) -> Value {
    let ax = e.b.ins().fabs(x);
    let l = super::log::emit_f64(e, ax);
    let t = e.b.ins().fmul(y, l);
    let r = super::exp::emit_f64(e, t);

    // y an integer (infinities count), and odd.
    let ny = e.b.ins().nearest(y);
    let y_int = e.fcmp(FloatCC::Equal, ny, y);
    let half = e.f64(0.5);
    let hy = e.b.ins().fmul(y, half);
    let nhy = e.b.ins().nearest(hy);
    let hy_frac = e.fcmp(FloatCC::NotEqual, nhy, hy);
    let odd = e.b.ins().band(y_int, hy_frac);
    let negative_r = e.copysign_f64(r, x);
    let r = e.select(odd, negative_r, r);

    // Negative finite x, non-integer y: NaN.
    let zero = e.f64(0.0);
    let neg_inf = e.f64(f64::NEG_INFINITY);
    let negative = e.fcmp(FloatCC::LessThan, x, zero);
    let finite = e.fcmp(FloatCC::GreaterThan, x, neg_inf);
    let not_int = e.not(y_int);
    let bad = e.b.ins().band(negative, finite);
    let bad = e.b.ins().band(bad, not_int);
    let nan = e.f64(f64::NAN);
    let r = e.select(bad, nan, r);

    // pow(x, ±0) = 1, pow(1, y) = 1, pow(-1, ±inf) = 1.
    let one = e.f64(1.0);
    let minus_one = e.f64(-1.0);
    let inf = e.f64(f64::INFINITY);
    let y_zero = e.fcmp(FloatCC::Equal, y, zero);
    let x_one = e.fcmp(FloatCC::Equal, x, one);
    let x_minus_one = e.fcmp(FloatCC::Equal, x, minus_one);
    let ay = e.b.ins().fabs(y);
    let y_inf = e.fcmp(FloatCC::Equal, ay, inf);
    let m1_inf = e.b.ins().band(x_minus_one, y_inf);
    let ones = e.b.ins().bor(y_zero, x_one);
    let ones = e.b.ins().bor(ones, m1_inf);
    e.select(ones, one, r)
}
