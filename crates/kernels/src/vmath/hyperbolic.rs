//! `sinh`, `cosh`, `asinh`, `acosh`, `atanh` for `f32` lanes: the methods and error bounds of
//! the inline hyperbolic functions, built on the inline `exp`, `expm1`, `log` and `log1p` in
//! forms that avoid cancellation. `f64` lanes call the reference's scalar functions.

/// Documented maximum error of `sinh` in ulp: **3 ulp** (see [`super::max_ulp`]; 2.17
/// measured on every 97th `f32`).
///
/// On `a = |x|` with `E = expm1(a)` (relative accuracy near 0): `sinh(a) = (E + E/(E + 1))/2`
/// up to [`BIG`]; above, where `E` would overflow before `sinh` does,
/// `sinh(a) = (h/2)·h` with `h = exp(a/2)`. The sign of `x` is put back with a bit
/// operation: `sinh(±0) = ±0`, subnormals give themselves, `sinh(±inf) = ±inf`, NaN stays
/// NaN.
pub const MAX_ULP_SINH: f64 = 3.0;

/// Documented maximum error of `cosh` in ulp: **3 ulp** (2.17 measured on every 97th `f32`,
/// just above [`BIG`], where `exp(|x|/2)`'s error doubles in the square): `e/2 + (1/2)/e` with `e = exp(|x|)`
/// up to [`BIG`], `(h/2)·h` with `h = exp(|x|/2)` above. `cosh(±0) = 1`, `cosh(±inf) = +inf`,
/// NaN stays NaN.
pub const MAX_ULP_COSH: f64 = 3.0;

/// Documented maximum error of `asinh` in ulp: **3 ulp** (2.00 measured): on `a = |x|`,
/// `log1p(a + a²/(1 + √(1 + a²)))` below [`HUGE`] (no cancellation: every term is
/// positive), `log(a) + ln 2` from `HUGE` on (where `a²` could overflow and `1/(4a²)` is
/// below the rounding). The sign is put back with a bit operation: `asinh(±0) = ±0`,
/// `asinh(±inf) = ±inf`, NaN stays NaN.
pub const MAX_ULP_ASINH: f64 = 3.0;

/// Documented maximum error of `acosh` in ulp: **3 ulp** (2.20 measured): with `t = x − 1` (exact for
/// `x ∈ [1, 2]`), `log1p(t + √(t·(t + 2)))` below 2 (accurate near 1, where `acosh` goes to
/// 0), `log(2x − 1/(x + √(x² − 1)))` from 2 to [`HUGE`], `log(x) + ln 2` above. `acosh(1) =
/// +0`, `acosh(+inf) = +inf`; `x < 1` gives NaN (by select), NaN stays NaN.
pub const MAX_ULP_ACOSH: f64 = 3.0;

/// Documented maximum error of `atanh` in ulp: **3 ulp** (2.35 measured): `log1p(2a/(1 − a))/2` on
/// `a = |x|` (relative accuracy near 0; `1 − a` is exact from `1/2` on), the sign put back
/// with a bit operation. `atanh(±0) = ±0`, `atanh(±1) = ±inf`, `|x| > 1` gives NaN
/// (`log1p` below `-1`), NaN stays NaN.
pub const MAX_ULP_ATANH: f64 = 3.0;

/// Above this `|x|` `sinh` and `cosh` take `(h/2)·h` with `h = exp(|x|/2)`: `e^88` is
/// finite in `f32`, `e^89` is not, while `sinh` and `cosh` overflow only past 89.415.
pub const BIG: f32 = 88.0;

/// From this `|x|` (2^12) on, `asinh` and `acosh` are `log(|x|) + ln 2`.
pub const HUGE: f32 = 4096.0;

/// `ln 2`, rounded to `f32`.
pub const LN2: f32 = std::f32::consts::LN_2;
