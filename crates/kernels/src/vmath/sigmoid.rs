//! The logistic function `1/(1 + e^-x)` for `f32` and `f64` lanes: the method and error
//! bounds of the inline `sigmoid`, which never overflows and corrects its one quotient.

/// Documented maximum error in ulp: **1 ulp** (see [`super::max_ulp`] for how it is
/// checked).
///
/// As the reference does, without overflow: with `E = e^-|x|`, `1/(1 + E)` for `x ≥ 0` and
/// `E/(1 + E)` for `x < 0`. `E` comes from the inline [`super::exp`] as an unevaluated sum
/// `E_hi + E_lo` (its last rounding error kept), `1 + E` is formed exactly as `d + d_lo`
/// (Fast2Sum, since `E ≤ 1`), and the quotient `q = num/d` is corrected once with its exact
/// residual (`fma(-q, d, num)`): `q + (residual + num_lo − q·d_lo)/d`. This removes the
/// error of `E` and of `1 + E` that a plain `E/(1 + E)` keeps. `sigmoid(-0) = 0.5`,
/// `sigmoid(+inf) = 1`, `sigmoid(-inf) = 0`, NaN stays NaN, tiny results round once into the
/// subnormal range. Range: always in `[0, 1]`.
pub const MAX_ULP: f64 = 1.0;

// ---- f64 ----

/// Documented maximum error of the `f64` function (`F64X2` and scalar loops) in ulp of
/// `f64`: **2 ulp** against 256-bit references (see [`super::max_ulp`]).
///
/// The `f32` method at `f64` precision (`E = e^-|x|` from the inline `f64` [`super::exp`] as
/// `E_hi + E_lo`, `1 + E` by Fast2Sum, the quotient, formed with one division as
/// `num·(1/d)`, corrected once with its exact residual). `sigmoid(-0) = 0.5`,
/// `sigmoid(+inf) = 1`, `sigmoid(-inf) = 0`, NaN stays NaN, tiny results round once into the
/// subnormal range. Range: `[0, 1]`.
pub const MAX_ULP_F64: f64 = 2.0;
