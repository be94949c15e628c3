//! `x^y` for `f32` lanes (the lowering of `Power` on `f32`), through `f64`.
//!
//! Each `f32` pair is promoted to `f64` (exact), `|x|^y = e^(y·ln|x|)` is computed in `f64`
//! with the methods of the inline `f64` [`super::log`] and [`super::exp`] at lower
//! polynomial degrees, and the result is demoted to `f32` once. The `f64` intermediate is
//! accurate to about 1e-9 relative wherever the `f32` result is finite and non-zero
//! (`|y·ln|x|| < 104` there), so the only error of note is the final rounding: the result is
//! within 1 ulp of `f32` (see [`MAX_ULP`]).
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

/// Bits of `√½` (rounded to `f64`), as in [`super::log`].
const SQRT_HALF_BITS: i64 = 0x3fe6_a09e_667f_3bcd;

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

/// `(e^r − 1 − r)/r²` on `[-ln2/2, ln2/2]`, degree 6 (`scripts/vmath_f64_fit.py`,
/// |error| < 2.7e-11: ample for one rounding to `f32`).
const QP: [f64; 7] = [
    0.5,
    0.16666666718997508,
    0.041666666718980845,
    0.008333298483754886,
    0.001388885404961482,
    0.0001989927395864936,
    2.4859578222625295e-05,
];
/// `R(z)/z` of [`super::log`]'s `f64` method, degree 3 (|error| < 1.2e-9, entering the
/// logarithm multiplied by `s·z < 0.0051`).
const RP: [f64; 4] = [
    0.6666666655449663,
    0.4000012184017775,
    0.285508207738004,
    0.23330468363519238,
];

/// `x^y` for `f64` lanes holding promoted `f32` values (the `f32` function's core; its
/// accuracy is stated for `f32`). A leaner `e^(y·ln|x|)` than the `f64` functions: no
/// subnormal inputs (promoted `f32` are normal `f64`), lower-degree polynomials (relative
/// error of the intermediate below 1e-9 wherever the `f32` result is finite and non-zero,
/// 0.02 ulp of `f32`), and one scaling by `2^n` (the exponent is clamped to `[-110, 100]`,
/// past `f32`'s range, so `2^n` stays a normal `f64`).
pub(crate) fn emit_f64(e: &mut Emit, x: Value, y: Value) -> Value {
    let ax = e.b.ins().fabs(x);
    // ln|x| = k·ln2 + ln(1 + f), m = 1 + f in [√½, √2) (see `log`).
    let bits = e.f64_bits(ax);
    let shift = e.i64(0x3ff0_0000_0000_0000 - SQRT_HALF_BITS);
    let ix = e.b.ins().iadd(bits, shift);
    let kb = e.b.ins().ushr_imm_u(ix, 52);
    let two52_bits = e.i64(0x4330_0000_0000_0000);
    let kf = e.b.ins().bor(kb, two52_bits);
    let kf = e.f64_from_bits(kf);
    let two52_bias = e.f64(4_503_599_627_370_496.0 + 1023.0);
    let k = e.b.ins().fsub(kf, two52_bias);
    let mant_mask = e.i64(0x000f_ffff_ffff_ffff);
    let mant = e.b.ins().band(ix, mant_mask);
    let sqrt_half = e.i64(SQRT_HALF_BITS);
    let mbits = e.b.ins().iadd(mant, sqrt_half);
    let m = e.f64_from_bits(mbits);
    let one = e.f64(1.0);
    let two = e.f64(2.0);
    let half = e.f64(0.5);
    let f = e.b.ins().fsub(m, one);
    let den = e.b.ins().fadd(two, f);
    let s = e.b.ins().fdiv(f, den);
    let z = e.b.ins().fmul(s, s);
    let rz = e.horner_f64(z, &RP);
    let r = e.b.ins().fmul(z, rz);
    let hf = e.b.ins().fmul(half, f);
    let hfsq = e.b.ins().fmul(hf, f);
    let hr = e.b.ins().fadd(hfsq, r);
    let t = e.b.ins().fmul(s, hr);
    let t = e.b.ins().fsub(hfsq, t);
    let t = e.b.ins().fsub(t, f);
    let ln2 = e.f64(std::f64::consts::LN_2);
    let neg_t = e.b.ins().fneg(t);
    let l = e.b.ins().fma(k, ln2, neg_t);
    // ln 0 = -inf, ln inf = inf, ln NaN = NaN.
    let zero = e.f64(0.0);
    let inf = e.f64(f64::INFINITY);
    let neg_inf = e.f64(f64::NEG_INFINITY);
    let is_zero = e.fcmp(FloatCC::Equal, ax, zero);
    let l = e.select(is_zero, neg_inf, l);
    let is_inf = e.fcmp(FloatCC::Equal, ax, inf);
    let l = e.select(is_inf, inf, l);
    let is_nan = e.fcmp(FloatCC::Unordered, ax, ax);
    let l = e.select(is_nan, ax, l);

    // e^(y·l), the exponent clamped to [-110, 100] (NaN passes).
    let w = e.b.ins().fmul(y, l);
    let lo = e.f64(-110.0);
    let below = e.fcmp(FloatCC::LessThan, w, lo);
    let w = e.select(below, lo, w);
    let hi = e.f64(100.0);
    let above = e.fcmp(FloatCC::GreaterThan, w, hi);
    let w = e.select(above, hi, w);
    let (_, n, rr) = super::exp::reduce_f64(e, w);
    let q = e.horner_f64(rr, &QP);
    let r2 = e.b.ins().fmul(rr, rr);
    let em1 = e.b.ins().fma(r2, q, rr);
    let p = e.b.ins().fadd(em1, one);
    let scale = super::exp::pow2_f64(e, n);
    let r = e.b.ins().fmul(p, scale);

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
    let negative = e.fcmp(FloatCC::LessThan, x, zero);
    let finite = e.fcmp(FloatCC::GreaterThan, x, neg_inf);
    let not_int = e.not(y_int);
    let bad = e.b.ins().band(negative, finite);
    let bad = e.b.ins().band(bad, not_int);
    let nan = e.f64(f64::NAN);
    let r = e.select(bad, nan, r);

    // pow(x, ±0) = 1, pow(1, y) = 1, pow(-1, ±inf) = 1.
    let minus_one = e.f64(-1.0);
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
