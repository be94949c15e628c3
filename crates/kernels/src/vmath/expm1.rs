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
//! **`f64` (`F64X2` and scalar): maximum error 2 ulp** ([`MAX_ULP_F64`]; measured 1.002 ulp
//! against MPFR on a dense sample, see [`crate::vmath`]); the method is in the doc of the
//! `f64` section below (`emit_f64`).

/// Documented maximum error in ulp.
pub const MAX_ULP: f64 = 2.0;

/// Below this the result is `-1` after rounding.
pub const LO: f32 = -30.0;

/// The largest `n` for which `2^n − 1` is exact in `f32`.
pub const EXACT_N: i32 = 24;

// ---- f64 ----

/// Documented maximum error of the `f64` function in ulp of `f64`.
pub const MAX_ULP_F64: f64 = 2.0;

/// Below this the `f64` result is `-1` after rounding (`e^-40 < 2^-54`).
pub const LO_F64: f64 = -40.0;

/// Above this `e^x` (and `e^x − 1`) overflows: `exp`'s clamp ([`super::exp::HI_F64`]).
pub use super::exp::HI_F64;

/// The largest `n` for which `2^n − 1` is exact in `f64`.
pub const EXACT_N_F64: i64 = 53;
