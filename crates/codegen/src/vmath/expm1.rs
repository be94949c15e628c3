//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::expm1`]: its constants,
//! range reduction and error bounds live there.

use crate::lanes::Emit;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, Value};
pub use graphlift_kernels::vmath::expm1::*;

/// Emits `e^x − 1` for the `f32` value `x`.
pub fn emit(e: &mut Emit, x: Value) -> Value {
    let exp_x = super::exp::emit(e, x);
    let one = e.f32(1.0);
    let large = e.b.ins().fsub(exp_x, one);

    let lo = e.f32(LO);
    let below = e.fcmp(FloatCC::LessThan, x, lo);
    let xc = e.select(below, lo, x);
    // Large x take the exp path; clamp so that 2^n below stays finite in either case.
    let hi = e.f32(20.0);
    let above = e.fcmp(FloatCC::GreaterThan, xc, hi);
    let xc = e.select(above, hi, xc);
    let (n, _, r) = super::exp::reduce(e, xc);
    let y = super::exp::expm1_reduced(e, r);
    let s = super::exp::pow2(e, n);
    let t = e.b.ins().fsub(s, one);
    let mid = e.b.ins().fma(y, s, t);

    // x > 20 was clamped to n = 29, so it takes the exp path too.
    let limit = e.i32(EXACT_N);
    let big = e.icmp(IntCC::SignedGreaterThan, n, limit);
    let r = e.select(big, large, mid);
    // ±0 keep their sign (the polynomial gives +0 for -0).
    let zero = e.f32(0.0);
    let is_zero = e.fcmp(FloatCC::Equal, x, zero);
    e.select(is_zero, x, r)
}

/// Emits `e^x − 1` for the `f64` value `x`.
///
/// The `f32` method at `f64` precision, with more care for the cancellation in
/// `2^n·y + (2^n − 1)` when `n < 0 < y` or `y < 0 < n` (which doubled the error of `y`):
/// with [`super::exp`]'s `f64` reduction `x = n·ln2 + r` (and the rounding error of `r`
/// kept), `y = e^r − 1 = r + r²·Q(r)` as an unevaluated sum `y_hi + y_lo`, and
/// `e^x − 1 = 2^n·y + (2^n − 1)` summed with TwoSum for `n ≤ 53` (where `2^n − 1` is
/// exact); past that `e^x − 1` rounds as `e^x`, which is `(1 + y)·2^n` scaled in two steps
/// like [`super::exp`]'s (overflow to `+inf` included), from the same reduction.
/// Clamped to `[-40, 710]`, so
/// `expm1(-inf) = -1`; `expm1(+inf) = +inf`; NaN stays NaN; `expm1(±0) = ±0`; never below
/// `-1`; subnormal `x` give `x`.
///
/// **Maximum error: 2 ulp** ([`MAX_ULP_F64`]; the measured errors are in
/// `BENCHMARKS.md`).
pub fn emit_f64(e: &mut Emit, x: Value) -> Value {
    let lo = e.f64(LO_F64);
    let below = e.fcmp(FloatCC::LessThan, x, lo);
    let xc = e.select(below, lo, x);
    let hi = e.f64(HI_F64);
    let above = e.fcmp(FloatCC::GreaterThan, xc, hi);
    let xc = e.select(above, hi, xc);
    let p = parts_f64(e, xc);

    // n > 53: e^x − 1 rounds as e^x = (1 + y)·2^n, scaled in two steps as in `exp`.
    let one = e.f64(1.0);
    let big_p = e.b.ins().fadd(one, p.y_hi);
    let (s1, s2) = super::exp::pow2_halves_f64(e, p.nf, p.n);
    let large = e.b.ins().fmul(big_p, s1);
    let large = e.b.ins().fmul(large, s2);

    let limit = e.i64(EXACT_N_F64);
    let big = e.icmp(IntCC::SignedGreaterThan, p.n, limit);
    let r = e.select(big, large, p.value);
    let zero = e.f64(0.0);
    let is_zero = e.fcmp(FloatCC::Equal, x, zero);
    e.select(is_zero, x, r)
}

/// The pieces of [`parts_f64`].
pub struct Parts {
    /// `e^x − 1`, rounded (for `n ≤ 53`).
    pub value: Value,
    /// Its rounding error.
    pub lo: Value,
    /// The reduction's `n`, as `i64` lanes.
    pub n: Value,
    /// The same `n` as `f64` lanes.
    pub nf: Value,
    /// `e^r − 1` (rounded), `r = x − n·ln2`.
    pub y_hi: Value,
}

/// `e^x − 1` for a clamped `f64` `x ∈ [-40, 710]` (NaN passes) as an unevaluated sum
/// `value + lo`, with the reduction's pieces. Accurate to about 1 ulp for `n ≤ 53`
/// (`x ≤ 36.7`); past that (where `2^n − 1` is not exact, and `2^n` overflows the exponent
/// field from `n = 1024` on) `value` is not meaningful: [`emit_f64`] uses `(1 + y)·2^n`
/// there, and `tanh` clamps its argument to 40, where a relative error of `2^-53` in
/// `e^x − 1` is far below its ulp.
pub fn parts_f64(e: &mut Emit, xc: Value) -> Parts {
    let one = e.f64(1.0);
    let (nf, n, r) = super::exp::reduce_f64(e, xc);
    // The rounding error of r (its high part x − n·LN2_HI is exact).
    let neg_ln2_hi = e.f64(-super::exp::LN2_HI_F64);
    let neg_ln2_lo = e.f64(-super::exp::LN2_LO_F64);
    let r_hi = e.b.ins().fma(nf, neg_ln2_hi, xc);
    let d = e.b.ins().fsub(r_hi, r);
    let r_lo = e.b.ins().fma(nf, neg_ln2_lo, d);
    // y = e^r − 1 as y_hi + y_lo: r + r²·Q(r), by Fast2Sum (|r²·Q| < |r|).
    let q = e.horner_f64(r, &super::exp::Q_F64);
    let r2 = e.b.ins().fmul(r, r);
    let p = e.b.ins().fmul(r2, q);
    let (y_hi, y_lo) = super::fast_two_sum(e, r, p);
    let y_lo = e.b.ins().fadd(y_lo, r_lo);
    // 2^n·y + (2^n − 1): the two exact terms t and a = 2^n·y_hi by TwoSum, then the rest.
    let s = super::exp::pow2_f64(e, n);
    let t = e.b.ins().fsub(s, one);
    let a = e.b.ins().fmul(s, y_hi);
    let hi = e.b.ins().fadd(t, a);
    let bb = e.b.ins().fsub(hi, t);
    let hi_minus = e.b.ins().fsub(hi, bb);
    let e1 = e.b.ins().fsub(t, hi_minus);
    let e2 = e.b.ins().fsub(a, bb);
    let lo = e.b.ins().fadd(e1, e2);
    let lo = e.b.ins().fma(s, y_lo, lo);
    let mid = e.b.ins().fadd(hi, lo);
    let mid_minus = e.b.ins().fsub(mid, hi);
    let mid_lo = e.b.ins().fsub(lo, mid_minus);
    Parts {
        value: mid,
        lo: mid_lo,
        n,
        nf,
        y_hi,
    }
}
