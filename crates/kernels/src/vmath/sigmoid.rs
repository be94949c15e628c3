//! The logistic function `1/(1 + e^-x)` for `f32` lanes.
//!
//! As the reference does, without overflow: with `E = e^-|x|`, `1/(1 + E)` for `x ≥ 0`
//! and `E/(1 + E)` for `x < 0`. `E` comes from the inline [`super::exp`] as an unevaluated
//! sum `E_hi + E_lo` (its last rounding error kept), `1 + E` is formed exactly as
//! `d + d_lo` (Fast2Sum, since `E ≤ 1`), and the quotient `q = num/d` is corrected once
//! with its exact residual (`fma(-q, d, num)`): `q + (residual + num_lo − q·d_lo)/d`. This
//! removes the error of `E` and of `1 + E` that a plain `E/(1 + E)` keeps (2.4 ulp).
//!
//! `sigmoid(-0) = 0.5`, `sigmoid(+inf) = 1`, `sigmoid(-inf) = 0`, NaN stays NaN, tiny
//! results round once into the subnormal range. Range: always in `[0, 1]`.
//!
//! **Maximum error: 1 ulp** (measured 0.987 ulp over every `f32`, against the `f64`
//! reference `sigmoid_f64`).
//!
//! **`f64` (`F64X2` and scalar): maximum error 2 ulp** ([`MAX_ULP_F64`]; measured 0.938 ulp
//! against MPFR on a dense sample, see [`crate::vmath`]); the method is in the doc of the
//! `f64` section below (`emit_f64`).

/// Documented maximum error in ulp.
pub const MAX_ULP: f64 = 1.0;

// ---- f64 ----

/// Documented maximum error of the `f64` function in ulp of `f64`.
pub const MAX_ULP_F64: f64 = 2.0;
