//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::pow`]: its constants,
//! range reduction and error bounds live there.

use crate::lanes::{cast_flags, Emit, Lanes};
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{types, ConstantData, InstBuilder, Value};
pub use graphlift_kernels::vmath::pow::*;

/// Emits `x^y` for `f32` values `x`, `y` (at [`Lanes::X4`] or [`Lanes::X1`]).
pub fn emit(e: &mut Emit, x: Value, y: Value) -> Value {
    match e.lanes {
        Lanes::X1 => {
            let xd = e.b.ins().fpromote(types::F64, x);
            let yd = e.b.ins().fpromote(types::F64, y);
            let r = emit_promoted(e, xd, yd);
            e.b.ins().fdemote(types::F32, r)
        }
        _ => {
            let (xl, xh) = halves(e, x);
            let (yl, yh) = halves(e, y);
            let rl = e.with_lanes(Lanes::X2, |e| emit_promoted(e, xl, yl));
            let rh = e.with_lanes(Lanes::X2, |e| emit_promoted(e, xh, yh));
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

/// `x^y` for `f64` lanes holding promoted `f32` values (the `f32` function's core; its
/// accuracy is stated for `f32`). A leaner `e^(y·ln|x|)` than the `f64` functions: no
/// subnormal inputs (promoted `f32` are normal `f64`), lower-degree polynomials (relative
/// error of the intermediate below 1e-9 wherever the `f32` result is finite and non-zero,
/// 0.02 ulp of `f32`), and one scaling by `2^n` (the exponent is clamped to `[-110, 100]`,
/// past `f32`'s range, so `2^n` stays a normal `f64`).
fn emit_promoted(e: &mut Emit, x: Value, y: Value) -> Value {
    let ax = e.b.ins().fabs(x);
    // ln|x| = k·ln2 + ln(1 + f), 1 + f in [√½, √2) (see `log`).
    let (k, f) = super::log::reduce_f64(e, ax);
    let one = e.f64(1.0);
    let two = e.f64(2.0);
    let half = e.f64(0.5);
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
    let (regular, special) = ln_special_cases(e, ax);
    let l = e.select(regular, l, special);

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

    ieee_cases(e, x, y, r)
}

/// `ln|x|` at the special `|x|`: `(regular, value)` with `regular` set where `0 < |x| < inf`,
/// and `value` the logarithm elsewhere: `-inf` at 0, `inf` at `inf`, NaN at NaN.
fn ln_special_cases(e: &mut Emit, ax: Value) -> (Value, Value) {
    let zero = e.f64(0.0);
    let inf = e.f64(f64::INFINITY);
    let neg_inf = e.f64(f64::NEG_INFINITY);
    let positive = e.fcmp(FloatCC::GreaterThan, ax, zero);
    let finite = e.fcmp(FloatCC::LessThan, ax, inf);
    let regular = e.b.ins().band(positive, finite);
    // ax is NaN, 0 or inf here.
    let is_zero = e.fcmp(FloatCC::Equal, ax, zero);
    let special = e.select(is_zero, neg_inf, ax);
    (regular, special)
}

/// The IEEE 754 special cases of `pow` (listed on [`MAX_ULP`]) applied to `r`, an
/// approximation of `|x|^y` that is already right (`0`, `inf` or NaN) wherever `x` or `y`
/// is `±0`, `±inf` or NaN: the sign for a negative `x` and an odd integer `y`, NaN for a
/// negative finite `x` and a non-integer `y`, and the cases whose result is 1.
fn ieee_cases(e: &mut Emit, x: Value, y: Value, r: Value) -> Value {
    let zero = e.f64(0.0);
    let one = e.f64(1.0);
    let inf = e.f64(f64::INFINITY);
    let neg_inf = e.f64(f64::NEG_INFINITY);
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

/// Emits `x^y` for `f64` values `x`, `y` (at [`Lanes::X2`] or [`Lanes::X1`]).
///
/// 1. `ln|x| = L_hi + L_lo` to about 2^-66 relative (`ln_dd`).
/// 2. `w = y·L`: `w_hi = y·L_hi` and `w_lo = fma(y, L_hi, −w_hi) + y·L_lo`.
/// 3. `w_hi` is clamped to `[-746, 710]` (beyond them the result is `0` or `inf`; `w_lo` is
///    dropped there), `n = round(w_hi/ln2)`, and the reduced argument
///    `r = (w_hi − n·ln2_hi) + (w_lo − n·ln2_lo)` is kept as `r_hi + r_lo` (Fast2Sum).
/// 4. `e^r = 1 + (q + r_lo·(1 + q))` with `q = e^r_hi − 1` from `exp`'s polynomial, scaled by
///    `2^n` in two steps so that a subnormal result rounds once.
/// 5. Signs and the IEEE special cases by select (listed on [`MAX_ULP`]).
pub fn emit_f64(e: &mut Emit, x: Value, y: Value) -> Value {
    let ax = e.b.ins().fabs(x);
    let (l_hi, l_lo) = ln_dd(e, ax);
    let (regular, special) = ln_special_cases(e, ax);
    let l_hi = e.select(regular, l_hi, special);
    let zero = e.f64(0.0);
    let l_lo = e.select(regular, l_lo, zero);

    let (w_hi, w_err) = two_prod(e, y, l_hi);
    let w_lo = e.b.ins().fma(y, l_lo, w_err);

    // Clamp (NaN passes); past the clamps the result is 0 or inf and w_lo (possibly NaN,
    // from inf − inf) is dropped.
    let lo = e.f64(-746.0);
    let hi = e.f64(710.0);
    let below = e.fcmp(FloatCC::LessThan, w_hi, lo);
    let above = e.fcmp(FloatCC::GreaterThan, w_hi, hi);
    let w_hi = e.select(below, lo, w_hi);
    let w_hi = e.select(above, hi, w_hi);
    let clamped = e.b.ins().bor(below, above);
    let w_lo = e.select(clamped, zero, w_lo);

    let (nf, n) = super::exp::round_to_ln2_multiple_f64(e, w_hi);
    let neg_ln2_hi = e.f64(-super::exp::LN2_HI_F64);
    let neg_ln2_lo = e.f64(-super::exp::LN2_LO_F64);
    // Exact (as in `exp`), and a correction below 2^-40. Fast2Sum is exact when
    // |r1| ≥ |corr|; otherwise both are below 2^-40 and its error below 2^-90.
    let r1 = e.b.ins().fma(nf, neg_ln2_hi, w_hi);
    let corr = e.b.ins().fma(nf, neg_ln2_lo, w_lo);
    let (r_hi, r_lo) = super::fast_two_sum(e, r1, corr);
    let q = super::exp::expm1_reduced_f64(e, r_hi);
    let lo_term = e.b.ins().fma(r_lo, q, r_lo);
    let q = e.b.ins().fadd(q, lo_term);
    let one = e.f64(1.0);
    let p = e.b.ins().fadd(one, q);
    let (s1, s2) = super::exp::pow2_halves_f64(e, nf, n);
    let r = e.b.ins().fmul(p, s1);
    let r = e.b.ins().fmul(r, s2);
    ieee_cases(e, x, y, r)
}

/// `ln(x)` for a positive finite `x` as an unevaluated sum `hi + lo`, to about 2^-66
/// relative (the values at `0`, `inf` and NaN are meaningless).
///
/// `x = 2^k·(1 + f)` ([`super::log::reduce_f64`]); `s = f/(2 + f)` as `s_hi + s_lo` (the
/// denominator by Fast2Sum, one reciprocal, the quotient's remainder by fma);
/// `ln(1 + f) = 2s + (2/3)s³ + s⁵·R(s²)` with `(2/3)s³` as a double-double (its rounding
/// would cost 2^-60) and the `s⁵` tail, at most 1.7e-4 of the sum, in plain `f64`; `k·ln2`
/// is `k·ln2_hi` (exact) `+ k·ln2_lo`. The large terms are added by Fast2Sum,
/// the small ones into the low part. `k·ln2` and `ln(1 + f)` never cancel (`|k·ln2| ≥ 0.69`,
/// `|ln(1 + f)| ≤ 0.35`).
fn ln_dd(e: &mut Emit, x: Value) -> (Value, Value) {
    let (k, f) = super::log::reduce_f64(e, x);
    let two = e.f64(2.0);
    // den + den_lo = 2 + f exactly (Fast2Sum: |f| < 2).
    let (den, den_lo) = super::fast_two_sum(e, two, f);
    // s_hi = f·(1/den) (within an ulp or two of f/den, so the remainder f − s_hi·den is
    // exact by fma), s_lo = (f − s_hi·den − s_hi·den_lo)·(1/den).
    let one = e.f64(1.0);
    let inv = e.b.ins().fdiv(one, den);
    let s_hi = e.b.ins().fmul(f, inv);
    let neg_s_hi = e.b.ins().fneg(s_hi);
    let rem = e.b.ins().fma(neg_s_hi, den, f);
    let rem = e.b.ins().fma(neg_s_hi, den_lo, rem);
    let s_lo = e.b.ins().fmul(rem, inv);

    // s³ = s3 + s3_lo: z + z_lo = s_hi² exactly, then z·s_hi by fma, plus the s_lo term.
    let (z, z_lo) = two_prod(e, s_hi, s_hi);
    let (s3, s3_err) = two_prod(e, z, s_hi);
    let three = e.f64(3.0);
    let three_z = e.b.ins().fmul(three, z);
    let s3_lo = e.b.ins().fma(three_z, s_lo, s3_err);
    let s3_lo = e.b.ins().fma(z_lo, s_hi, s3_lo);
    // t + t_lo = (2/3)·s³.
    let c3_hi = e.f64(C3_HI);
    let c3_lo = e.f64(C3_LO);
    let (t, t_lo) = two_prod(e, c3_hi, s3);
    let t_lo = e.b.ins().fma(c3_hi, s3_lo, t_lo);
    let t_lo = e.b.ins().fma(c3_lo, s3, t_lo);
    // s⁵·R(z).
    let rz = e.horner_f64(z, &R5);
    let s5 = e.b.ins().fmul(s3, z);
    let tail = e.b.ins().fmul(s5, rz);

    let ln2_hi = e.f64(super::exp::LN2_HI_F64);
    let ln2_lo = e.f64(super::exp::LN2_LO_F64);
    let k_hi = e.b.ins().fmul(k, ln2_hi);
    let k_lo = e.b.ins().fmul(k, ln2_lo);
    let two_s_hi = e.b.ins().fadd(s_hi, s_hi);
    let two_s_lo = e.b.ins().fadd(s_lo, s_lo);
    // Fast2Sum: |k·ln2_hi| ≥ 0.69 > |2s|, or k = 0.
    let (a, a_lo) = super::fast_two_sum(e, k_hi, two_s_hi);
    let (b, b_lo) = super::fast_two_sum(e, a, t);
    let lo = e.b.ins().fadd(tail, t_lo);
    let lo = e.b.ins().fadd(lo, two_s_lo);
    let lo = e.b.ins().fadd(lo, k_lo);
    let lo = e.b.ins().fadd(lo, b_lo);
    let lo = e.b.ins().fadd(lo, a_lo);
    super::fast_two_sum(e, b, lo)
}

/// TwoProduct by fma: `(p, err)` with `p + err = a·b` exactly (barring overflow and
/// underflow), `p` the rounded product.
fn two_prod(e: &mut Emit, a: Value, b: Value) -> (Value, Value) {
    let p = e.b.ins().fmul(a, b);
    let neg_p = e.b.ins().fneg(p);
    let err = e.b.ins().fma(a, b, neg_p);
    (p, err)
}
