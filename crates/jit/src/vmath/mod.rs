//! Vector math: `exp`, `expm1`, `log`, `log1p`, `tanh`, `sigmoid` and `erf` for `f32`, emitted inline as
//! polynomial approximations in Cranelift IR.
//!
//! Each function is written once against the crate's lane view (`codegen::lanes::Emit`) and
//! so emits either `F32X4` code (vector loops) or scalar `f32` code (scalar loops) with the
//! same operation sequence, lane for lane. Fused multiply-adds are used inside the polynomials
//! (and only there: kernel arithmetic is never contracted).
//!
//! # Accuracy
//!
//! Error is measured in ulp of the exact result: `|y − ref| / ulp(ref)`, where `ref` is the
//! reference interpreter's `f64` value (before rounding to `f32`) and `ulp(ref)` is the
//! spacing of `f32` numbers at `|ref|` (`2^-149` in the subnormal range). A correctly
//! rounded result is within 0.5 ulp. The bounds were measured over every one of the 2^32
//! `f32` bit patterns through the kernels' own code
//! ([`crate::accuracy`]) with
//!
//! ```text
//! cargo run --release -p graphlift-cli -- accuracy            # --step K for every K-th
//! ```
//!
//! | function | bound ([`max_ulp`]) | max error, every `f32` | where | max relative error (normal results) |
//! |---|---|---|---|---|
//! | [`exp`] | 1 ulp | 0.987 ulp | `x = -59.94443` | 8.22e-8 |
//! | [`expm1`] | 2 ulp | 1.439 ulp | `x = 17.001972` (`n = 25`, the first on the `e^x − 1` path) | 1.21e-7 |
//! | [`log`] | 1 ulp | 0.835 ulp | `x = 1.4054595` | 8.13e-8 |
//! | [`log1p`] | 2 ulp | 1.437 ulp | `x = -8.940697e-8` | 1.34e-7 |
//! | [`tanh`] | 2 ulp | 1.330 ulp | `|x| = 0.62830955`, just past the small-argument polynomial | 1.42e-7 |
//! | [`sigmoid`] | 1 ulp | 0.987 ulp | `x = -59.94443` (where it is `e^x`) | 8.92e-8 |
//! | [`erf`] | 2 ulp | 1.450 ulp | `x = 0.9942459`, the top of the small-argument polynomial | 1.12e-7 |
//!
//! (`graphlift accuracy`, 2026-11-22: 25–60 s per function on two cores.)
//!
//! Measured on x86-64 (FMA available) in the vector loop; the scalar loop runs the same
//! operation sequence and gives the same bits (`accuracy --scalar` sweeps it). No input broke a range
//! or special-value guarantee.
//!
//! The unit tests sweep every 97th bit pattern against the same bounds, and check the
//! special values: NaN in gives NaN out; `exp(+inf) = +inf`, `exp(-inf) = 0`;
//! `log(±0) = -inf`, `log(x < 0) = NaN`, `log(+inf) = +inf`; `tanh` in `[-1, 1]`,
//! `sigmoid` in `[0, 1]`, `erf` in `[-1, 1]`; odd functions keep the sign of zero.

pub mod erf;
pub mod exp;
pub mod expm1;
pub mod log;
pub mod log1p;
pub mod sigmoid;
pub mod tanh;

use cranelift_codegen::ir::Value;
use graphlift_ir::UnaryOp;

use crate::codegen::lanes::Emit;

/// The documented maximum error of the inline `f32` lowering of `op`, in ulp, or `None` if
/// `op` is exact (or not a vector math function).
pub fn max_ulp(op: UnaryOp) -> Option<f64> {
    match op {
        UnaryOp::Exp => Some(exp::MAX_ULP),
        UnaryOp::Log => Some(log::MAX_ULP),
        UnaryOp::Tanh => Some(tanh::MAX_ULP),
        UnaryOp::Sigmoid => Some(sigmoid::MAX_ULP),
        UnaryOp::Erf => Some(erf::MAX_ULP),
        UnaryOp::Expm1 => Some(expm1::MAX_ULP),
        UnaryOp::Log1p => Some(log1p::MAX_ULP),
        _ => None,
    }
}

/// Emits the inline `f32` approximation of `op` on `x`, or `None` if `op` has none.
pub(crate) fn emit(e: &mut Emit, op: UnaryOp, x: Value) -> Option<Value> {
    Some(match op {
        UnaryOp::Exp => exp::emit(e, x),
        UnaryOp::Log => log::emit(e, x),
        UnaryOp::Tanh => tanh::emit(e, x),
        UnaryOp::Sigmoid => sigmoid::emit(e, x),
        UnaryOp::Erf => erf::emit(e, x),
        UnaryOp::Expm1 => expm1::emit(e, x),
        UnaryOp::Log1p => log1p::emit(e, x),
        _ => return None,
    })
}

/// The error of `y` against the exact value `exact`, in ulp of `f32` at `exact` (see the
/// module documentation). Equal values (two NaNs, two equal infinities) give 0; a NaN
/// against a number gives `f64::INFINITY`. An infinite `y` counts as `±2^128` (where `f32`
/// rounding puts it): exact for an exact value beyond `2^128`, and a large error for an
/// overflow that should not happen.
pub fn ulp_error(y: f32, exact: f64) -> f64 {
    if y.is_nan() || exact.is_nan() {
        return if y.is_nan() && exact.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let mut y = f64::from(y);
    if y == exact {
        return 0.0;
    }
    if exact.is_infinite() {
        return f64::INFINITY;
    }
    if y.is_infinite() {
        let limit = 2f64.powi(128);
        if y.signum() == exact.signum() && exact.abs() >= limit {
            return 0.0;
        }
        y = y.signum() * limit;
    }
    (y - exact).abs() / ulp_at(exact.abs().min(f64::from(f32::MAX)))
}

/// The spacing of `f32` numbers at magnitude `m` (an `f64`), `2^-149` for subnormals.
fn ulp_at(m: f64) -> f64 {
    if m < f64::from(f32::MIN_POSITIVE) {
        return 2f64.powi(-149);
    }
    // The exponent of m, from its bits (exact, unlike log2).
    let e = ((m.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    2f64.powi(e - 23)
}
