//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::pow`]: its constants,
//! method and error bounds live there. The `f32` and `f64` functions share the double-word
//! logarithm (`ln_dw`) and the special cases (`ieee_cases`), each written once over the
//! element type.

use crate::lanes::Emit;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
use graphlift_ir::ElementType;
pub use graphlift_kernels::vmath::pow::*;

/// Emits `x^y` for `f32` values `x`, `y` (at [`crate::lanes::Lanes::X4`] or
/// [`crate::lanes::Lanes::X1`]), in `f32` arithmetic throughout.
///
/// 1. `ln|x| = L_hi + L_lo` to about 2^-37 relative (`ln_dw`).
/// 2. `w = y·L`: `w_hi = y·L_hi` and `w_lo = fma(y, L_hi, −w_hi) + y·L_lo`.
/// 3. `w_hi` is clamped to `exp`'s `[-104, 89]` (beyond them the result is `0` or `inf`;
///    `w_lo`, possibly NaN from `inf − inf`, is dropped there), `n = round(w_hi/ln2)`, and
///    `r = (w_hi − n·ln2_hi) + (w_lo − n·ln2_lo)`: the first part exact, the second below
///    0.04, one rounding in the sum.
/// 4. `e^r·2^n` by `exp`'s polynomial and two-step scaling ([`super::exp::scale_reduced`]).
/// 5. Signs and the IEEE special cases by select (`ieee_cases`).
pub fn emit(e: &mut Emit, x: Value, y: Value) -> Value {
    let t = ElementType::F32;
    let ax = e.b.ins().fabs(x);
    let (l_hi, l_lo) = ln_dw(e, t, ax);
    let l_hi = ln_special_cases(e, t, ax, l_hi);

    let (w_hi, w_err) = two_prod(e, y, l_hi);
    let w_lo = e.b.ins().fma(y, l_lo, w_err);
    // Each comparison feeds one select (an AVX-512 compare into a mask register and a
    // blend). `w_lo` is kept where `w_hi` was not clamped: there it is finite.
    let lo = e.f32(super::exp::LO);
    let below = e.fcmp(FloatCC::LessThan, w_hi, lo);
    let w1 = e.select(below, lo, w_hi);
    let hi = e.f32(super::exp::HI);
    let above = e.fcmp(FloatCC::GreaterThan, w1, hi);
    let w2 = e.select(above, hi, w1);
    let zero = e.f32(0.0);
    let kept = e.fcmp(FloatCC::Equal, w2, w_hi);
    let w_lo = e.select(kept, w_lo, zero);

    let (nf, n) = super::exp::round_to_ln2_multiple(e, w2);
    let neg_ln2_hi = e.f32(-super::exp::LN2_HI);
    let neg_ln2_lo = e.f32(-super::exp::LN2_LO);
    // Exact (as in `exp`); the correction is below 0.04 and rounds once in the sum.
    let r1 = e.b.ins().fma(nf, neg_ln2_hi, w2);
    let corr = e.b.ins().fma(nf, neg_ln2_lo, w_lo);
    let r = e.b.ins().fadd(r1, corr);
    let (p, _) = super::exp::scale_reduced(e, (n, nf), r);
    ieee_cases(e, t, x, y, p)
}

/// A constant `v` of float type `t` (`f32` or `f64`) at the emitter's width.
fn float(e: &mut Emit, t: ElementType, v: f64) -> Value {
    match t {
        ElementType::F32 => e.f32(v as f32),
        _ => e.f64(v),
    }
}

/// `ln|x|` (float type `t`) with its special values put in: `l_hi` where `0 < |x| < inf`,
/// `-inf` at 0, `inf` at `inf`, NaN at NaN. (The low part needs no such care: where the
/// logarithm is special, `w = y·ln|x|` is not finite and the callers drop its low part.)
fn ln_special_cases(e: &mut Emit, t: ElementType, ax: Value, l_hi: Value) -> Value {
    let inf = float(e, t, f64::INFINITY);
    let finite = e.fcmp(FloatCC::LessThan, ax, inf);
    let l = e.select(finite, l_hi, ax);
    let zero = float(e, t, 0.0);
    let neg_inf = float(e, t, f64::NEG_INFINITY);
    let is_zero = e.fcmp(FloatCC::Equal, ax, zero);
    e.select(is_zero, neg_inf, l)
}

/// The IEEE 754 special cases of `pow` (listed on [`MAX_ULP`]) on float type `t`, applied to
/// `r`, an approximation of `|x|^y` that is already right (`0`, `inf` or NaN) wherever `x`
/// or `y` is `±0`, `±inf` or NaN: the sign for a negative `x` and an odd integer `y`, NaN
/// for a negative finite `x` and a non-integer `y`, and the cases whose result is 1.
fn ieee_cases(e: &mut Emit, t: ElementType, x: Value, y: Value, r: Value) -> Value {
    let f32_type = t == ElementType::F32;
    let to_bits = |e: &mut Emit, v| {
        if f32_type {
            e.f32_bits(v)
        } else {
            e.f64_bits(v)
        }
    };
    // y an integer (infinities count), and odd.
    let ny = e.b.ins().nearest(y);
    let y_int = e.fcmp(FloatCC::Equal, ny, y);
    let half = float(e, t, 0.5);
    let hy = e.b.ins().fmul(y, half);
    let nhy = e.b.ins().nearest(hy);
    let hy_frac = e.fcmp(FloatCC::NotEqual, nhy, hy);
    let odd = e.b.ins().band(y_int, hy_frac);
    // r ≥ 0 (or NaN): x's sign bit where y is odd, by exclusive or.
    let (xb, rb) = (to_bits(e, x), to_bits(e, r));
    let (sign, none) = if f32_type {
        (e.i32(i32::MIN), e.i32(0))
    } else {
        (e.i64(i64::MIN), e.i64(0))
    };
    let sign = e.b.ins().band(xb, sign);
    let sign = e.select(odd, sign, none);
    let rb = e.b.ins().bxor(rb, sign);
    let r = if f32_type {
        e.f32_from_bits(rb)
    } else {
        e.f64_from_bits(rb)
    };

    // Negative finite x, non-integer y: NaN.
    let zero = float(e, t, 0.0);
    let neg_inf = float(e, t, f64::NEG_INFINITY);
    let negative = e.fcmp(FloatCC::LessThan, x, zero);
    let finite = e.fcmp(FloatCC::GreaterThan, x, neg_inf);
    let not_int = e.fcmp(FloatCC::NotEqual, ny, y);
    let bad = e.b.ins().band(negative, finite);
    let bad = e.b.ins().band(bad, not_int);
    let nan = float(e, t, f64::NAN);
    let r = e.select(bad, nan, r);

    // pow(x, ±0) = 1, pow(1, y) = 1, pow(-1, ±inf) = 1.
    let one = float(e, t, 1.0);
    let minus_one = float(e, t, -1.0);
    let inf = float(e, t, f64::INFINITY);
    let x_minus_one = e.fcmp(FloatCC::Equal, x, minus_one);
    let ay = e.b.ins().fabs(y);
    let y_inf = e.fcmp(FloatCC::Equal, ay, inf);
    let m1_inf = e.b.ins().band(x_minus_one, y_inf);
    let r = e.select(m1_inf, one, r);
    let y_zero = e.fcmp(FloatCC::Equal, y, zero);
    let r = e.select(y_zero, one, r);
    let x_one = e.fcmp(FloatCC::Equal, x, one);
    e.select(x_one, one, r)
}

/// Emits `x^y` for `f64` values `x`, `y` (at [`crate::lanes::Lanes::X2`] or
/// [`crate::lanes::Lanes::X1`]).
///
/// 1. `ln|x| = L_hi + L_lo` to about 2^-66 relative (`ln_dw`).
/// 2. `w = y·L`: `w_hi = y·L_hi` and `w_lo = fma(y, L_hi, −w_hi) + y·L_lo`.
/// 3. `w_hi` is clamped to `[-746, 710]` (beyond them the result is `0` or `inf`; `w_lo` is
///    dropped there), `n = round(w_hi/ln2)`, and the reduced argument
///    `r = (w_hi − n·ln2_hi) + (w_lo − n·ln2_lo)` is kept as `r_hi + r_lo` (Fast2Sum).
/// 4. `e^r = 1 + (q + r_lo·(1 + q))` with `q = e^r_hi − 1` from `exp`'s polynomial, scaled by
///    `2^n` in two steps so that a subnormal result rounds once.
/// 5. Signs and the IEEE special cases by select (listed on [`MAX_ULP`]).
pub fn emit_f64(e: &mut Emit, x: Value, y: Value) -> Value {
    let ax = e.b.ins().fabs(x);
    let (l_hi, l_lo) = ln_dw(e, ElementType::F64, ax);
    let l_hi = ln_special_cases(e, ElementType::F64, ax, l_hi);
    let zero = e.f64(0.0);

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
    ieee_cases(e, ElementType::F64, x, y, r)
}

/// `ln(x)` for a positive finite `x` of float type `t` as an unevaluated sum `hi + lo`, to
/// about 2^-66 relative on `f64` and 2^-37 on `f32` (the values at `0`, `inf` and NaN are
/// meaningless); `|lo|` is within a few ulp of `hi` (not renormalized: the product
/// `y·(hi + lo)` needs no more).
///
/// `x = 2^k·(1 + f)` ([`super::log::reduce`], [`super::log::reduce_f64`]); `s = f/(2 + f)`
/// as `s_hi + s_lo` (the denominator by Fast2Sum, one reciprocal, the quotient's remainder
/// by fma); `ln(1 + f) = 2s + (2/3)s³ + s⁵·R(s²)` with `(2/3)s³` as a double-word value (its
/// rounding would cost 2^-60 on `f64`, 2^-31 on `f32`) and the `s⁵` tail, at most 1.7e-4 of
/// the sum, in plain arithmetic; `k·ln2` is `k·ln2_hi` (exact) `+ k·ln2_lo`. The large terms
/// are added by Fast2Sum, the small ones (the early ones first) into the low part. `k·ln2` and `ln(1 + f)` never
/// cancel (`|k·ln2| ≥ 0.69`, `|ln(1 + f)| ≤ 0.35`).
fn ln_dw(e: &mut Emit, t: ElementType, x: Value) -> (Value, Value) {
    let f32_type = t == ElementType::F32;
    let (k, f) = if f32_type {
        super::log::reduce(e, x)
    } else {
        super::log::reduce_f64(e, x)
    };
    let two = float(e, t, 2.0);
    // den + den_lo = 2 + f exactly (Fast2Sum: |f| < 2).
    let (den, den_lo) = super::fast_two_sum(e, two, f);
    // s_hi = f·(1/den) (within an ulp or two of f/den, so the remainder f − s_hi·den is
    // exact by fma), s_lo = (f − s_hi·den − s_hi·den_lo)·(1/den).
    let one = float(e, t, 1.0);
    let inv = e.b.ins().fdiv(one, den);
    let s_hi = e.b.ins().fmul(f, inv);
    let neg_s_hi = e.b.ins().fneg(s_hi);
    let rem = e.b.ins().fma(neg_s_hi, den, f);
    let rem = e.b.ins().fma(neg_s_hi, den_lo, rem);
    let s_lo = e.b.ins().fmul(rem, inv);

    // s³ = s3 + s3_lo: z + z_lo = s_hi² exactly, then z·s_hi by fma, plus the s_lo term.
    let (z, z_lo) = two_prod(e, s_hi, s_hi);
    let (s3, s3_err) = two_prod(e, z, s_hi);
    let three = float(e, t, 3.0);
    let three_z = e.b.ins().fmul(three, z);
    let s3_lo = e.b.ins().fma(three_z, s_lo, s3_err);
    let s3_lo = e.b.ins().fma(z_lo, s_hi, s3_lo);
    // c + c_lo = (2/3)·s³.
    let (c3_hi, c3_lo) = if f32_type {
        (e.f32(C3_HI_F32), e.f32(C3_LO_F32))
    } else {
        (e.f64(C3_HI), e.f64(C3_LO))
    };
    let (c, c_lo) = two_prod(e, c3_hi, s3);
    let c_lo = e.b.ins().fma(c3_hi, s3_lo, c_lo);
    let c_lo = e.b.ins().fma(c3_lo, s3, c_lo);
    // s⁵·R(z).
    let rz = if f32_type {
        e.horner(z, &R5_F32)
    } else {
        e.horner_f64(z, &R5)
    };
    let s5 = e.b.ins().fmul(s3, z);
    let tail = e.b.ins().fmul(s5, rz);

    let (ln2_hi, ln2_lo) = if f32_type {
        (e.f32(super::exp::LN2_HI), e.f32(super::exp::LN2_LO))
    } else {
        (e.f64(super::exp::LN2_HI_F64), e.f64(super::exp::LN2_LO_F64))
    };
    let k_hi = e.b.ins().fmul(k, ln2_hi);
    let k_lo = e.b.ins().fmul(k, ln2_lo);
    let two_s_hi = e.b.ins().fadd(s_hi, s_hi);
    let two_s_lo = e.b.ins().fadd(s_lo, s_lo);
    // Fast2Sum: |k·ln2_hi| ≥ 0.69 > |2s|, or k = 0.
    let (a, a_lo) = super::fast_two_sum(e, k_hi, two_s_hi);
    let (b, b_lo) = super::fast_two_sum(e, a, c);
    // The small terms, the early ones first (a short chain after the late ones).
    let early = e.b.ins().fadd(k_lo, two_s_lo);
    let early = e.b.ins().fadd(early, a_lo);
    let late = e.b.ins().fadd(tail, c_lo);
    let lo = e.b.ins().fadd(early, late);
    let lo = e.b.ins().fadd(lo, b_lo);
    (b, lo)
}

/// TwoProduct by fma: `(p, err)` with `p + err = a·b` exactly (barring overflow and
/// underflow), `p` the rounded product.
fn two_prod(e: &mut Emit, a: Value, b: Value) -> (Value, Value) {
    let p = e.b.ins().fmul(a, b);
    let neg_p = e.b.ins().fneg(p);
    let err = e.b.ins().fma(a, b, neg_p);
    (p, err)
}
