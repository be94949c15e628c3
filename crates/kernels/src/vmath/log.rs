//! `ln(x)` for `f32` lanes.
//!
//! After fdlibm's `logf`: subnormal inputs are first scaled by `2^23`; then
//! `x = 2^k · m` with `m ∈ [√½, √2)`, `f = m − 1`, `s = f/(2 + f)`, and
//! `ln(1 + f) = f − f²/2 + s·(f²/2 + R(s²))`, where `R(z) ≈ 2·atanh(s)/s − 2` is a degree-4
//! polynomial in `z` (a Chebyshev fit, |error| < 3e-8 relative to `R`, which is itself a
//! correction of order `s³`). The result adds `k·ln2` in two parts (the high part has 9
//! significant bits, so `k·ln2_hi` is exact).
//!
//! Special values by select: `ln(±0) = -inf`, `ln(x < 0) = NaN`, `ln(+inf) = +inf`,
//! `ln(NaN) = NaN`.
//!
//! **Maximum error: 1 ulp** (measured 0.835 ulp over every `f32`, against `f64::ln`).
//!
//! **`f64` (`F64X2` and scalar): maximum error 2 ulp** ([`MAX_ULP_F64`]; measured 0.783 ulp
//! against MPFR on a dense sample, see [`crate::vmath`]); the method is in the doc of the
//! `f64` section below (`emit_f64`).

/// Documented maximum error in ulp.
pub const MAX_ULP: f64 = 1.0;

/// `ln 2` in two parts, `exp`'s ([`super::exp::LN2_HI`], [`super::exp::LN2_LO`]).
pub use super::exp::{LN2_HI, LN2_LO};

/// Bits of `√½` (rounded): mantissas at or above it stay in `[√½, 1)` after the shift.
pub const SQRT_HALF_BITS: i32 = 0x3f35_04f3;

/// `R(z)/z` ascending in `z = s²`.
pub const R: [f32; 4] = [0.666_666_7, 0.400_001_23, 0.285_508_22, 0.233_304_68];

// ---- f64 ----

/// Documented maximum error of the `f64` function in ulp of `f64`.
pub const MAX_ULP_F64: f64 = 2.0;

/// Bits of `√½` (rounded to `f64`).
pub const SQRT_HALF_BITS_F64: i64 = 0x3fe6_a09e_667f_3bcd;

/// `R(z)/z` ascending in `z = s²` on `[0, 0.02944]`: a degree-6 Chebyshev interpolant of
/// `(2·atanh(s)/s − 2)/z` (`scripts/vmath_f64_fit.py`, |error| < 3.2e-16, which enters the
/// result multiplied by `s·z < 0.0051`).
pub const R_F64: [f64; 7] = [
    0.666666666666667,
    0.39999999999899505,
    0.28571428625975764,
    0.22222211134749734,
    0.18182889128565508,
    0.15331721490738642,
    0.14616451042434167,
];
