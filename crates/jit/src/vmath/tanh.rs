//! `tanh(x)` for `f32` lanes.
//!
//! One rational function on `a = min(|x|, clamp)`: `tanh(a) = a·P(a²)/Q(a²)`, with `P` and
//! `Q` of degree 4 in `a²` (the kind of approximation Eigen's fast `float` tanh uses,
//! fitted here), the result capped at `1` and the sign of `x` put back; computed on the
//! signed value (see `emit`): about fourteen vector operations, one of them a division
//! (a separate unit on x86: replacing it by a multiplication did not change the library
//! loop's speed), no exponential and no second piece.
//!
//! The fit holds `P(0) = Q(0) = 1` and `P`'s leading coefficient at `2^-26`, and the shipped
//! coefficients are both polynomials divided by `2^-26`: `P` is monic, so its Horner
//! evaluation starts with an addition instead of a fused multiply-add (one operation fewer
//! on the multiply pipes, which bound GELU-tanh in the vector math library: E2 in cache
//! 0.218 → 0.207 ns per element), and `P(0) = Q(0) = 2^26` exactly, so tiny and subnormal
//! `x` (below `2^-13`) give `x` exactly and `tanh(-0) = -0`.
//! `clamp = 9.0111084` is where the rational reaches `1.0` (from `9.0109138`, the
//! smallest `f32` whose correctly rounded `tanh` is `1`, the result is `1` or its
//! predecessor). The clamp is a compare and select, so NaN stays NaN and
//! `tanh(±inf) = ±1`. The cap (`min(r, 1)`) keeps the result in `[-1, 1]`: the rational
//! itself reaches slightly above `1` before the clamp.
//!
//! The coefficients are a minimax fit in relative error on `[0, clamp]` (Lawson's iteration
//! on the linearised problem, 40 digits; approximation error 0.83 ulp with the leading
//! coefficient fixed, 0.35 without: `scripts/tanh_rational_fit.py`), rounded to `f32`.
//! The rounding of the two Horner evaluations, where the partial sums grow to the size of
//! the result (`a² = 81` at the clamp), is most of the error.
//!
//! The form before this one (two polynomial pieces, `a + a³·P(a²)` and
//! `1 − G(a − 1.75)⁴`, 2 ulp) took about thirty vector operations: twice the time of this
//! one in the vector math library, where GELU-tanh is bound by its number of vector
//! operations. This one trades accuracy for that time, as `-ffast-math` libraries do.
//!
//! **Maximum error: 6 ulp** (measured 5.595 ulp at `x = 5.381278` over every `f32`, in the
//! vector, scalar and library loops; `graphlift accuracy tanh` measures it against
//! `f64::tanh`).
//!
//! **`f64` (`F64X2` and scalar): maximum error 2 ulp** ([`MAX_ULP_F64`]; measured 1.010 ulp
//! against MPFR on a dense sample, see [`crate::vmath`]); the method is in the doc of the
//! `f64` section below (`emit_f64`).

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};

use crate::codegen::lanes::Emit;

/// Documented maximum error in ulp.
pub const MAX_ULP: f64 = 6.0;

/// `|x|` is clamped to this (`0x41102d80`), where `a·P(a²)/Q(a²)` has reached `1.0` (the cap
/// makes it `1` there: `tanh(±inf) = ±1`, checked by the unit tests).
pub(crate) const CLAMP: f32 = f32::from_bits(0x4110_2d80);

/// `CLAMP²` rounded to `f32`: `t = x²` is clamped to it, which gives the `t` of the clamped
/// `|x|` exactly (rounding is monotonic).
pub(crate) const CLAMP_SQUARED: f32 = CLAMP * CLAMP;

/// The numerator's polynomial in `a²`, ascending, **monic**: the coefficients below its
/// leading `1` (the fit's `P` divided by its leading coefficient `2^-26`; `P(0) = 2^26`).
pub(crate) const P: [f32; 4] = [
    f32::from_bits(0x4c80_0000),
    f32::from_bits(0x4b09_b119),
    f32::from_bits(0x486a_18e7),
    f32::from_bits(0x44b6_f48a),
];
/// The denominator's polynomial in `a²`, ascending, divided by the same `2^-26` as [`P`]
/// (`Q(0) = 2^26`).
pub(crate) const Q: [f32; 5] = [
    f32::from_bits(0x4c80_0000),
    f32::from_bits(0x4bef_833d),
    f32::from_bits(0x49d6_64ff),
    f32::from_bits(0x46b2_b103),
    f32::from_bits(0x4262_6bcc),
];

/// Emits `tanh(x)` for the `f32` value `x`, on the signed value: `t = min(x², clamp²)` is
/// the clamped `|x|`'s square exactly, `x·P(t)/Q(t)` is `sign(x)·a·P/Q` exactly (rounding to
/// nearest is symmetric), and for `|x|` past the clamp its magnitude is at least the value at
/// the clamp, `1` (or `±inf` from an overflowing `x·P`), so clamping the result to `[-1, 1]`
/// gives what `min(r, 1)` with the sign put back gives, one vector operation fewer (no
/// `|x|`). NaN stays NaN (with `x`'s bits, quieted), `±0` stays `±0`.
pub(crate) fn emit(e: &mut Emit, x: Value) -> Value {
    let t = e.b.ins().fmul(x, x);
    let clamp = e.f32(CLAMP_SQUARED);
    let over = e.fcmp(FloatCC::GreaterThan, t, clamp);
    let t = e.select(over, clamp, t);
    let p = e.horner_monic(t, &P);
    let q = e.horner(t, &Q);
    let num = e.b.ins().fmul(x, p);
    let r = e.b.ins().fdiv(num, q);
    let one = e.f32(1.0);
    let above = e.fcmp(FloatCC::GreaterThan, r, one);
    let r = e.select(above, one, r);
    let minus_one = e.f32(-1.0);
    let below = e.fcmp(FloatCC::LessThan, r, minus_one);
    e.select(below, minus_one, r)
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
