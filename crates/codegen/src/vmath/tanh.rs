//! Emits the inline (Cranelift IR) code of [`graphlift_kernels::vmath::tanh`]: its constants,
//! range reduction and error bounds live there.

use crate::lanes::Emit;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};
pub use graphlift_kernels::vmath::tanh::*;

/// Emits `tanh(x)` for the `f32` value `x`: the half angle `N = x_c·P(x_c²)`,
/// `D = Q(x_c²)` and the doubling identity `(N·D + N·D) / fma(N, N, D·D)`, with `x_c` the signed
/// clamp of `x` (two compare-and-selects: NaN stays NaN, `±0` stays `±0`); rounding to
/// nearest is symmetric, so the result is `sign(x)·tanh(|x|)` exactly, and no cap is needed
/// ([`CLAMP`]).
pub fn emit(e: &mut Emit, x: Value) -> Value {
    let clamp = e.f32(CLAMP);
    let minus_clamp = e.f32(-CLAMP);
    let above = e.fcmp(FloatCC::GreaterThan, x, clamp);
    let xc = e.select(above, clamp, x);
    let below = e.fcmp(FloatCC::LessThan, xc, minus_clamp);
    let xc = e.select(below, minus_clamp, xc);
    let t = e.b.ins().fmul(xc, xc);
    let p = e.horner(t, &P);
    let d = e.horner(t, &Q);
    let n = e.b.ins().fmul(xc, p);
    let nd = e.b.ins().fmul(n, d);
    let num = e.b.ins().fadd(nd, nd);
    let dd = e.b.ins().fmul(d, d);
    let den = e.b.ins().fma(n, n, dd);
    e.b.ins().fdiv(num, den)
}

/// Emits `tanh(x)` for the `f64` value `x`.
///
/// On `a = |x|`, with `E = e^(2a) − 1` as an unevaluated sum `E + E_lo` from the inline
/// `f64` [`super::expm1`] (relative accuracy near 0; `2a` clamped to 40, where `tanh`
/// rounds to 1): `D + D_lo = E + E_lo + 2` (Fast2Sum), then `tanh(a) = E/(E + 2)` for
/// `a < 0.55` (relative accuracy for tiny and subnormal `x`) and `1 − 2/(E + 2)` above, each
/// quotient `q = num·(1/D)` corrected once with its exact residual `fma(−q, D, num)` and the
/// low parts, so the only sizeable roundings left are `E`'s own and the last one or two.
/// The sign of `x` is put back with a bit operation, so `tanh(-0) = -0` and NaN stays NaN.
/// Range: `[-1, 1]` (`E/(E + 2) ≤ 1` and `2/(E + 2) ∈ [0, 1]` for `E ≥ 0`, up to the
/// corrections, which are far below an ulp of the result).
///
/// **Maximum error: 2 ulp** ([`MAX_ULP_F64`]; the measured errors are in
/// `BENCHMARKS.md`).
pub fn emit_f64(e: &mut Emit, x: Value) -> Value {
    let a = e.b.ins().fabs(x);
    let two_a = e.b.ins().fadd(a, a);
    let clamp = e.f64(CLAMP_2A_F64);
    let above = e.fcmp(FloatCC::GreaterThan, two_a, clamp);
    let two_a = e.select(above, clamp, two_a);
    let p = super::expm1::parts_f64(e, two_a);
    let (em1, em1_lo) = (p.value, p.lo);
    let one = e.f64(1.0);
    let two = e.f64(2.0);
    // D + D_lo = E + E_lo + 2 (Fast2Sum: for a < 0.55, E < 2.01 has the exponent of 2 or
    // less; for larger a, E ≥ 2 and the order does not matter for the low part's size).
    let den = e.b.ins().fadd(em1, two);
    let two_minus = e.b.ins().fsub(two, den);
    let den_lo = e.b.ins().fadd(two_minus, em1);
    let den_lo = e.b.ins().fadd(den_lo, em1_lo);
    let inv = e.b.ins().fdiv(one, den);
    // Small: E/D, corrected.
    let q = e.b.ins().fmul(em1, inv);
    let neg_q = e.b.ins().fneg(q);
    let res = e.b.ins().fma(neg_q, den, em1);
    let res = e.b.ins().fadd(res, em1_lo);
    let res = e.b.ins().fma(neg_q, den_lo, res);
    let small = e.b.ins().fma(res, inv, q);
    // Large: 1 − 2/D, corrected.
    let q2 = e.b.ins().fmul(two, inv);
    let neg_q2 = e.b.ins().fneg(q2);
    let res2 = e.b.ins().fma(neg_q2, den, two);
    let res2 = e.b.ins().fma(neg_q2, den_lo, res2);
    let c2 = e.b.ins().fmul(res2, inv);
    let w = e.b.ins().fsub(one, q2);
    let large = e.b.ins().fsub(w, c2);
    let threshold = e.f64(SMALL_F64);
    let is_small = e.fcmp(FloatCC::LessThan, a, threshold);
    let r = e.select(is_small, small, large);
    e.copysign_f64(r, x)
}
