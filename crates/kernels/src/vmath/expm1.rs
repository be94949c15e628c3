//! `e^x − 1` for `f32` and `f64` lanes: the constants, method and error bounds of the inline
//! `expm1`, built on `exp`'s reduction so that it keeps relative accuracy near 0.

/// Documented maximum error in ulp: **2 ulp** (see [`super::max_ulp`] for how it is
/// checked).
///
/// The reduction of [`super::exp`], `x = n·ln2 + r` with `|r| ≤ ln2/2`, and its polynomial
/// `y = e^r − 1 = r + r²·Q(r)`, which keeps relative accuracy as `r → 0`. Then
/// `e^x − 1 = 2^n·y + (2^n − 1)`, evaluated as one fused multiply-add, so it rounds once:
/// for `n = 0` (`|x| ≤ ln2/2`) it is `y` itself; for `|n| ≤ 24` ([`EXACT_N`]), `2^n − 1` is
/// exact in `f32`. Past `n = 24` the `−1` is below half an ulp and the result is
/// [`super::exp`]'s minus one (overflow to `+inf` included). The input is clamped below at
/// `-30` ([`LO`]: `e^-30 − 1` rounds to `-1`), so `expm1(-inf) = -1`; `expm1(+inf) = +inf`;
/// NaN stays NaN; `expm1(±0) = ±0` (by select). The result is never below `-1`.
pub const MAX_ULP: f64 = 2.0;

/// Below this the result is `-1` after rounding.
pub const LO: f32 = -30.0;

/// The largest `n` for which `2^n − 1` is exact in `f32`.
pub const EXACT_N: i32 = 24;

// ---- f64 ----

/// Documented maximum error of the `f64` function (`F64X2` and scalar loops) in ulp of
/// `f64`: **2 ulp** against 256-bit references (see [`super::max_ulp`]).
///
/// The `f32` method at `f64` precision, with more care for the cancellation in
/// `2^n·y + (2^n − 1)`: the rounding error of `r` is kept, `y = e^r − 1` is an unevaluated
/// sum `y_hi + y_lo`, and the terms are summed with TwoSum for `n ≤ 53` ([`EXACT_N_F64`],
/// where `2^n − 1` is exact); past that `e^x − 1` rounds as `e^x = (1 + y)·2^n`, scaled in
/// two steps like `exp`'s (overflow to `+inf` included). Clamped to `[-40, 710]`, so
/// `expm1(-inf) = -1`; `expm1(+inf) = +inf`; NaN stays NaN; `expm1(±0) = ±0`; never below
/// `-1`; subnormal `x` give `x`. The emitter, `graphlift_codegen::vmath::expm1::emit_f64`,
/// documents each step.
pub const MAX_ULP_F64: f64 = 2.0;

/// Below this the `f64` result is `-1` after rounding (`e^-40 < 2^-54`).
pub const LO_F64: f64 = -40.0;

/// Above this `e^x` (and `e^x − 1`) overflows: `exp`'s clamp ([`super::exp::HI_F64`]).
pub use super::exp::HI_F64;

/// The largest `n` for which `2^n − 1` is exact in `f64`.
pub const EXACT_N_F64: i64 = 53;
