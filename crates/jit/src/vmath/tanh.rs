//! `tanh(x)` for `f32` lanes.
//!
//! On `a = |x|`: for `a < 0.625`, `tanh(a) = a + a³·P(a²)` with a degree-5 `P` (a
//! Chebyshev fit of `(tanh(a) − a)/a³`, |error| < 1.3e-8 after rounding to `f32`), which
//! keeps relative accuracy for tiny and subnormal `x`; otherwise
//! `tanh(a) = 1 − 2/(e^(2a) + 1)` with the inline [`super::exp`]. The sign of `x` is put
//! back with a bit operation, so `tanh(-0) = -0` and NaN stays NaN.
//!
//! Range: the result is always in `[-1, 1]`: `2/(e^(2a) + 1)` lies in `[0, 1)` for
//! `a ≥ 0.625`, and is `0` once `e^(2a)` overflows, so `tanh(±inf) = ±1` exactly.
//!
//! **Maximum error: 2 ulp** (measured 1.330 ulp over every `f32`, against `f64::tanh`).
//!
//! **`f64` (`F64X2` and scalar): maximum error 2 ulp** ([`MAX_ULP_F64`]; measured 1.010 ulp
//! against MPFR on a dense sample, see [`crate::vmath`]); the method is in the doc of the
//! `f64` section below (`emit_f64`).

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};

use crate::codegen::lanes::Emit;

/// Documented maximum error in ulp.
pub const MAX_ULP: f64 = 2.0;

/// Below this `|x|` the small-argument polynomial is used.
const SMALL: f32 = 0.625;
/// `(tanh(a) − a)/a³` as a polynomial in `a²`, ascending.
const P: [f32; 6] = [
    -0.333_333_34,
    0.133_333_04,
    -0.053_959_258,
    0.021_768_918,
    -0.008_343_945,
    0.002_292_744_8,
];

/// Emits `tanh(x)` for the `f32` value `x`.
pub(crate) fn emit(e: &mut Emit, x: Value) -> Value {
    let a = e.b.ins().fabs(x);
    // Small |x|: a + a³·P(a²).
    let z = e.b.ins().fmul(a, a);
    let p = e.horner(z, &P);
    let a3 = e.b.ins().fmul(a, z);
    let small = e.b.ins().fma(a3, p, a);
    // Large |x|: 1 − 2/(e^(2a) + 1).
    let two_a = e.b.ins().fadd(a, a);
    let ex = super::exp::emit(e, two_a);
    let one = e.f32(1.0);
    let two = e.f32(2.0);
    let den = e.b.ins().fadd(ex, one);
    let q = e.b.ins().fdiv(two, den);
    let large = e.b.ins().fsub(one, q);
    let threshold = e.f32(SMALL);
    let is_small = e.fcmp(FloatCC::LessThan, a, threshold);
    let r = e.select(is_small, small, large);
    e.copysign(r, x)
}

// ---- f64 ----

/// Documented maximum error of the `f64` function in ulp of `f64`.
pub const MAX_ULP_F64: f64 = 2.0;

/// Below this `|x|` the quotient `E/(E + 2)` is used, above it `1 − 2/(E + 2)`.
const SMALL_F64: f64 = 0.55;

/// Past this `|x|` (`2|x|` past 40) `tanh` rounds to `±1`; the argument of `expm1` is
/// clamped there.
const CLAMP_2A_F64: f64 = 40.0;

/// Emits `tanh(x)` for the `f64` value `x`.
///
/// On `a = |x|`, with `E = e^(2a) − 1` as an unevaluated sum `E + E_lo` from the inline
/// `f64` [`super::expm1`] (relative accuracy near 0; `2a` clamped to 40, where `tanh`
/// rounds to 1): `D + D_lo = E + E_lo + 2` (Fast2Sum), then `tanh(a) = E/(E + 2)` for
/// `a < 0.55` (relative accuracy for tiny and subnormal `x`) and `1 − 2/(E + 2)` above, each
/// quotient `q = num·(1/D)` corrected once with its exact residual `fma(−q, D, num)` and the
/// low parts, so the only sizeable roundings left are `E`'s own and the last one or two.
/// The sign of `x` is put back with a bit operation, so `tanh(-0) = -0` and NaN stays NaN.
/// Range: `[-1, 1]` (`E/(E + 2) ≤ 1` and `2/(E + 2) ∈ [0, 1]` for `E ≥ 0`, up to the
/// corrections, which are far below an ulp of the result).
///
/// **Maximum error: 2 ulp** ([`MAX_ULP_F64`]; measured 1.010 ulp against MPFR on the dense
/// sample of 4096 inputs per binade, see [`crate::vmath`]).
pub(crate) fn emit_f64(e: &mut Emit, x: Value) -> Value {
    let a = e.b.ins().fabs(x);
    let two_a = e.b.ins().fadd(a, a);
    let clamp = e.f64(CLAMP_2A_F64);
    let above = e.fcmp(FloatCC::GreaterThan, two_a, clamp);
    let two_a = e.select(above, clamp, two_a);
    let p = super::expm1::parts_f64(e, two_a);
    let (em1, em1_lo) = (p.value, p.lo);
    let one = e.f64(1.0);
    let two = e.f64(2.0);
    // D + D_lo = E + E_lo + 2 (Fast2Sum: for a < 0.55, E < 2.01 has the exponent of 2 or
    // less; for larger a, E ≥ 2 and the order does not matter for the low part's size).
    let den = e.b.ins().fadd(em1, two);
    let two_minus = e.b.ins().fsub(two, den);
    let den_lo = e.b.ins().fadd(two_minus, em1);
    let den_lo = e.b.ins().fadd(den_lo, em1_lo);
    let inv = e.b.ins().fdiv(one, den);
    // Small: E/D, corrected.
    let q = e.b.ins().fmul(em1, inv);
    let neg_q = e.b.ins().fneg(q);
    let res = e.b.ins().fma(neg_q, den, em1);
    let res = e.b.ins().fadd(res, em1_lo);
    let res = e.b.ins().fma(neg_q, den_lo, res);
    let small = e.b.ins().fma(res, inv, q);
    // Large: 1 − 2/D, corrected.
    let q2 = e.b.ins().fmul(two, inv);
    let neg_q2 = e.b.ins().fneg(q2);
    let res2 = e.b.ins().fma(neg_q2, den, two);
    let res2 = e.b.ins().fma(neg_q2, den_lo, res2);
    let c2 = e.b.ins().fmul(res2, inv);
    let w = e.b.ins().fsub(one, q2);
    let large = e.b.ins().fsub(w, c2);
    let threshold = e.f64(SMALL_F64);
    let is_small = e.fcmp(FloatCC::LessThan, a, threshold);
    let r = e.select(is_small, small, large);
    e.copysign_f64(r, x)
}
