//! `sin`, `cos`, `tan` for `f32` lanes: the constants, method and error bounds of the inline
//! Cody–Waite reduction by `π/2` and the minimax polynomials on `[-π/4, π/4]`
//! (`scripts/trig_fit.py`). `f64` lanes call the reference's scalar functions.

/// Documented maximum error of `sin` in ulp: **2 ulp** (see [`super::max_ulp`] for how
/// it is checked; 1.55 ulp measured on every 97th `f32`, `cos` alike).
///
/// For `|x| ≤` [`REDUCE_MAX`]: `k = round(x·2/π)` (the 1.5·2^23 magic add, ties to even)
/// and `r = x − k·π/2` by three fused multiply-adds with the three-part `π/2`
/// ([`PIO2_1`] + [`PIO2_2`] + [`PIO2_3`], 72 bits; the first step is exact: `x` and
/// `k·PIO2_1` are multiples of `2^-23` and `|r| < 1`), so `r` is within about an ulp of the
/// true reduced argument (the part of `π/2` left out, below `2^-75·|k|`, is far smaller
/// than the closest approach of an `f32` below `REDUCE_MAX` to a multiple of `π/2`). Then
/// `sin(r) ≈ r + r³·S(r²)` ([`SIN`]) and `cos(r) ≈ 1 − r²/2 + r⁴·C(r²)` ([`COS`]), both of
/// relative error below `0.07·2^-24` before rounding, and the quadrant `k mod 4` picks
/// `±sin(r)` or `±cos(r)` (a select and a sign-bit flip). Lanes beyond `REDUCE_MAX`,
/// infinities and NaN take the reference's scalar function instead (a per-lane call, only
/// in vectors that hold such a lane), so `sin(±inf) = NaN` and NaN stays NaN; `sin(±0) =
/// ±0` (by select: the reduction gives `+0` for `−0`).
pub const MAX_ULP_SIN: f64 = 2.0;

/// Documented maximum error of `cos` in ulp: **2 ulp** (method of [`MAX_ULP_SIN`]).
pub const MAX_ULP_COS: f64 = 2.0;

/// Documented maximum error of `tan` in ulp: **4 ulp** (3.50 measured): `sin(r)/cos(r)` for even `k`,
/// `−cos(r)/sin(r)` for odd `k`, one division of the two polynomials of [`MAX_ULP_SIN`];
/// the same reduction and the same scalar fallback.
pub const MAX_ULP_TAN: f64 = 4.0;

/// Beyond this `|x|` (2^14) the reduction's argument is not trusted and the lane calls the
/// reference's scalar function.
pub const REDUCE_MAX: f32 = 16_384.0;

/// `2/π`, rounded to `f32`.
pub const TWO_OVER_PI: f32 = f32::from_bits(0x3f22_f983);

/// `π/2` rounded to `f32`.
pub const PIO2_1: f32 = f32::from_bits(0x3fc9_0fdb);

/// `π/2 − PIO2_1`, rounded to `f32`.
pub const PIO2_2: f32 = f32::from_bits(0xb33b_bd2e);

/// `π/2 − PIO2_1 − PIO2_2`, rounded to `f32`.
pub const PIO2_3: f32 = f32::from_bits(0xa6f7_2ced);

/// `S(z) ≈ (sin(r) − r)/r³`, `z = r²`, on `r ∈ [0, π/4]`, ascending (Lawson minimax fit in
/// relative error of `sin`: 0.064·2^-24 before rounding to `f32`).
pub const SIN: [f32; 3] = [
    f32::from_bits(0xbe2a_aaa3),
    f32::from_bits(0x3c08_839e),
    f32::from_bits(0xb94c_a1f1),
];

/// `C(z) ≈ (cos(r) − 1 + r²/2)/r⁴`, `z = r²`, on `r ∈ [0, π/4]`, ascending (relative error
/// of `cos` 0.002·2^-24 before rounding).
pub const COS: [f32; 3] = [
    f32::from_bits(0x3d2a_aaa5),
    f32::from_bits(0xbab6_061a),
    f32::from_bits(0x37cc_f5ce),
];
