//! `tanh(x)` for `f32` lanes.
//!
//! Two polynomial pieces on `a = min(|x|, clamp)`, no division and no exponential (the
//! form of [`super::erf`]):
//! - `a < 1.25`: `tanh(a) = a + (a·a²)·P(a²)`, with `P` of degree 7; one fused multiply-add
//!   forms the result, so tiny and subnormal `x` return `x` exactly;
//! - otherwise: `tanh(a) = 1 − G(a − 1.75)⁴`, with `G ≈ (1 − tanh(a))^(1/4)` of degree 10
//!   (the fourth root is smooth where `1 − tanh(a) ≈ 2e^(−2a)` spans eight decades).
//!
//! `clamp = 9.0111084` is where the second piece gives exactly `1.0`; from `9.0109138` (the
//! smallest `f32` whose correctly rounded `tanh` is `1`) the result is `1` or its
//! predecessor. The clamp is a compare and select, so NaN stays NaN and `tanh(±inf) = ±1`.
//! The sign of `x` is put back with a bit operation, so `tanh(-0) = -0`.
//!
//! Range: the result is always in `[-1, 1]`: `1 − G⁴ ≤ 1` by construction, and every input
//! was checked (no result of `x ≥ 0` leaves `[0, 1]`).
//!
//! The coefficients are minimax fits in relative error made for graphlift, rounded to `f32`
//! and checked by an exhaustive sweep with true FMA. The earlier form (a small-argument
//! polynomial, and `1 − 2/(e^(2a) + 1)` with the inline exponential) took about 40 vector
//! operations and a division; this one takes about 30 and no division.
//!
//! **Maximum error: 2 ulp** (measured 1.752 ulp at `x = 1.2501155`, just above the split,
//! over every `f32`; `graphlift accuracy tanh` measures it against `f64::tanh`).
//!
//! **`f64` (`F64X2` and scalar): maximum error 2 ulp** ([`MAX_ULP_F64`]; measured 1.010 ulp
//! against MPFR on a dense sample, see [`crate::vmath`]); the method is in the doc of the
//! `f64` section below (`emit_f64`).

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};

use super::two_piece::TwoPiece;
use crate::codegen::lanes::Emit;

/// Documented maximum error in ulp.
pub const MAX_ULP: f64 = 2.0;

/// `(tanh(a) − a)/a³` as a polynomial in `a²` on `[0, 1.25]`, ascending.
pub(crate) const P: [f32; 8] = [
    f32::from_bits(0xbeaa_aa95),
    f32::from_bits(0x3e08_84cc),
    f32::from_bits(0xbd5c_9da0),
    f32::from_bits(0x3caf_ed52),
    f32::from_bits(0xbc03_a5ea),
    f32::from_bits(0x3b24_eb5d),
    f32::from_bits(0xba0e_fb3c),
    f32::from_bits(0x3871_f10e),
];
/// `(1 − tanh(a))^(1/4)` as a polynomial in `a − 1.75` on `[1.25, clamp]`, ascending.
const G: [f32; 11] = [
    f32::from_bits(0x3efb_ef8b),
    f32::from_bits(0xbe74_8d10),
    f32::from_bits(0x3d50_b277),
    f32::from_bits(0xbacf_6bea),
    f32::from_bits(0xbb71_8881),
    f32::from_bits(0x3afe_eacb),
    f32::from_bits(0xba1f_c3bd),
    f32::from_bits(0x3904_8e0d),
    f32::from_bits(0xb78b_b5fd),
    f32::from_bits(0x35a7_73a7),
    f32::from_bits(0xb32c_5adf),
];
/// Where the pieces meet, the centre of the second, and the clamp of `|x|` (`0x41102d80`,
/// where `1 − G⁴` is exactly `1.0`).
pub(crate) const FORM: TwoPiece = TwoPiece {
    clamp: f32::from_bits(0x4110_2d80),
    split: 1.25,
    mid: 1.75,
    g: &G,
};

/// Emits `tanh(x)` for the `f32` value `x`: `a + (a·a²)·P(a²)`, then the second piece.
pub(crate) fn emit(e: &mut Emit, x: Value) -> Value {
    FORM.emit(e, x, |e, a, t| {
        let p = e.horner(t, &P);
        let a3 = e.b.ins().fmul(a, t);
        e.b.ins().fma(a3, p, a)
    })
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
