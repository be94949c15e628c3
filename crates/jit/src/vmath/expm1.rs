//! `e^x − 1` for `f32` lanes.
//!
//! The reduction of [`super::exp`], `x = n·ln2 + r` with `|r| ≤ ln2/2`, and its polynomial
//! `y = e^r − 1 = r + r²·Q(r)`, which keeps relative accuracy as `r → 0`. Then
//! `e^x − 1 = 2^n·y + (2^n − 1)`, evaluated as one fused multiply-add, so it rounds once:
//! for `n = 0` (`|x| ≤ ln2/2`) it is `y` itself; for `|n| ≤ 24`, `2^n − 1` is exact in
//! `f32`. Past `n = 24` the `−1` is below half an ulp and the result is [`super::exp`]'s
//! minus one (overflow to `+inf` included).
//!
//! The input is clamped below at `-30` (`e^-30 − 1` rounds to `-1`), so
//! `expm1(-inf) = -1`; `expm1(+inf) = +inf`; NaN stays NaN; `expm1(±0) = ±0` (by select).
//! The result is never below `-1`.
//!
//! **Maximum error: 2 ulp** (measured 1.439 ulp with `graphlift accuracy expm1` over every `f32`
//! against `f64::exp_m1`; see [`crate::vmath`]).
//!
//! **`f64` (`F64X2` and scalar): maximum error 3 ulp** ([`MAX_ULP_F64`]; measured 1.735 ulp
//! against MPFR on a dense sample, see [`crate::vmath`]); the method is in the doc of the
//! `f64` section below (`emit_f64`).

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, Value};

use crate::codegen::lanes::Emit;

/// Documented maximum error in ulp.
pub const MAX_ULP: f64 = 2.0;

/// Below this the result is `-1` after rounding.
const LO: f32 = -30.0;
/// The largest `n` for which `2^n − 1` is exact in `f32`.
const EXACT_N: i32 = 24;

/// Emits `e^x − 1` for the `f32` value `x`.
pub(crate) fn emit(e: &mut Emit, x: Value) -> Value {
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
    let (n, r) = super::exp::reduce(e, xc);
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

// ---- f64 ----

/// Documented maximum error of the `f64` function in ulp of `f64`.
pub const MAX_ULP_F64: f64 = 3.0;

/// Below this the `f64` result is `-1` after rounding (`e^-40 < 2^-54`).
const LO_F64: f64 = -40.0;
/// The largest `n` for which `2^n − 1` is exact in `f64`.
const EXACT_N_F64: i64 = 53;

/// Emits `e^x − 1` for the `f64` value `x`.
///
/// The `f32` method at `f64` precision: with [`super::exp`]'s `f64` reduction
/// `x = n·ln2 + r` and `y = e^r − 1 = r + r²·Q(r)`, `e^x − 1 = fma(y, 2^n, 2^n − 1)` for
/// `n ≤ 53` (where `2^n − 1` is exact), `exp(x) − 1` past that. Clamped below at `-40`, so
/// `expm1(-inf) = -1`; `expm1(+inf) = +inf`; NaN stays NaN; `expm1(±0) = ±0`; never below
/// `-1`; subnormal `x` give `x`.
///
/// **Maximum error: 3 ulp** ([`MAX_ULP_F64`]; measured 1.735 ulp against MPFR on the dense
/// sample of 4096 inputs per binade, see [`crate::vmath`]).
pub(crate) fn emit_f64(e: &mut Emit, x: Value) -> Value {
    let exp_x = super::exp::emit_f64(e, x);
    let one = e.f64(1.0);
    let large = e.b.ins().fsub(exp_x, one);

    let lo = e.f64(LO_F64);
    let below = e.fcmp(FloatCC::LessThan, x, lo);
    let xc = e.select(below, lo, x);
    let hi = e.f64(40.0);
    let above = e.fcmp(FloatCC::GreaterThan, xc, hi);
    let xc = e.select(above, hi, xc);
    let (_, n, r) = super::exp::reduce_f64(e, xc);
    let y = super::exp::expm1_reduced_f64(e, r);
    let s = super::exp::pow2_f64(e, n);
    let t = e.b.ins().fsub(s, one);
    let mid = e.b.ins().fma(y, s, t);

    // x > 40 was clamped to n = 58, so it takes the exp path too.
    let limit = e.i64(EXACT_N_F64);
    let big = e.icmp(IntCC::SignedGreaterThan, n, limit);
    let r = e.select(big, large, mid);
    let zero = e.f64(0.0);
    let is_zero = e.fcmp(FloatCC::Equal, x, zero);
    e.select(is_zero, x, r)
}
