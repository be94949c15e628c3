//! `ln(1 + x)` for `f32` and `f64` lanes: the method and error bounds of the inline `log1p`,
//! the inline `log` with Goldberg's correction, accurate where `1 + x` rounds.

/// Documented maximum error in ulp: **2 ulp** (see [`super::max_ulp`] for how it is
/// checked).
///
/// `u = 1 + x` rounds; its rounding error `c = (u − 1) − x` is exact (Sterbenz), and
/// `ln(1 + x) = ln(u) − c/u` to first order (Goldberg's correction), with `ln(u)` from the
/// inline [`super::log`]. Where `u = 1` (`|x| < 2^-24`) the result is `x` itself, which is
/// `ln(1 + x)` correctly rounded there and keeps the sign of zero and subnormals. Special
/// values: `log1p(-1) = -inf`, `log1p(x < -1) = NaN`, `log1p(+inf) = +inf`, NaN stays NaN
/// (the correction is dropped where `c/u` is not a number: `u ∈ {0, inf}`).
pub const MAX_ULP: f64 = 2.0;

// ---- f64 ----

/// Documented maximum error of the `f64` function (`F64X2` and scalar loops) in ulp of
/// `f64`: **2 ulp** against 256-bit references (see [`super::max_ulp`]).
///
/// The `f32` method at `f64` precision, with `ln(u)` from the inline `f64` [`super::log`]:
/// `log1p(-1) = -inf`, `log1p(x < -1) = NaN`, `log1p(+inf) = +inf`, `log1p(±0) = ±0`, NaN
/// stays NaN.
pub const MAX_ULP_F64: f64 = 2.0;
