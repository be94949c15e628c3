//! The error function `erf(x)` for `f32` lanes.
//!
//! On `a = |x|`, with `z = a²`:
//! - `a < 1`: `erf(a) = a·c0_hi + a·(c0_lo + z·P(z))`, where `c0 = 2/√π` is split in two
//!   `f32` parts and `P` is a degree-5 Chebyshev fit of `(erf(a)/a − c0)/z` (relative error
//!   of `erf` < 1.5e-8 after rounding to `f32`): relative accuracy near 0, subnormals
//!   included;
//! - `1 ≤ a`: `erf(a) = 1 − e^(−a² + q(a − 2.5))`, where `q` is a degree-8 Chebyshev fit of
//!   `ln(erfc(a)) + a²` on `[1, 3.95]` (|error| < 3e-8) and the exponential is the inline
//!   [`super::exp`]; `−a² + q` is one fused multiply-add;
//! - `a > 3.95`: `1` (`erfc(3.92) < 2^-25`, so `erf` rounds to 1 from there on).
//!
//! The sign of `x` is put back with a bit operation: `erf(-0) = -0`, `erf(±inf) = ±1`, NaN
//! stays NaN. Range: `[-1, 1]`.
//!
//! **Maximum error: 2 ulp** (measured 1.450 ulp over every `f32`, against `libm::erf`).
//!
//! **`f64` (`F64X2` and scalar): maximum error 2 ulp** ([`MAX_ULP_F64`]; measured 1.195 ulp
//! against MPFR on a dense sample, see [`crate::vmath`]); the method is in the doc of the
//! `f64` section below (`emit_f64`).

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};

use crate::codegen::lanes::Emit;

/// Documented maximum error in ulp.
pub const MAX_ULP: f64 = 2.0;

/// `2/√π` rounded to `f32`, and the remainder.
const C0_HI: f32 = std::f32::consts::FRAC_2_SQRT_PI;
const C0_LO: f32 = -5.863_538_3e-8;
/// `(erf(a)/a − 2/√π)/a²` as a polynomial in `a²` on `[0, 1]`, ascending.
const P: [f32; 6] = [
    -0.376_126_38,
    0.112_837_54,
    -0.026_861_7,
    0.005_204_579,
    -0.000_816_198_65,
    0.000_083_797_55,
];
/// Centre of the large-argument fit.
const MID: f32 = 2.5;
/// `ln(erfc(a)) + a²` as a polynomial in `a − 2.5` on `[1, 3.95]`, ascending.
const Q: [f32; 9] = [
    -1.556_815_3,
    -0.352_680_68,
    0.056_106_266,
    -0.010_858_476,
    0.002_165_391_8,
    -0.000_420_193_36,
    0.000_077_212_906,
    -0.000_013_293_513,
    0.000_001_658_320_6,
];
/// Past this `|x|`, `erf(x)` is 1 in `f32`.
const ONE_FROM: f32 = 3.95;

/// Emits `erf(x)` for the `f32` value `x`.
pub(crate) fn emit(e: &mut Emit, x: Value) -> Value {
    let a = e.b.ins().fabs(x);
    let z = e.b.ins().fmul(a, a);
    // Small |x|.
    let p = e.horner(z, &P);
    let c0_lo = e.f32(C0_LO);
    let c0_hi = e.f32(C0_HI);
    let tail = e.b.ins().fma(z, p, c0_lo);
    let tail = e.b.ins().fmul(a, tail);
    let small = e.b.ins().fma(a, c0_hi, tail);
    // Large |x|.
    let mid = e.f32(MID);
    let t = e.b.ins().fsub(a, mid);
    let q = e.horner(t, &Q);
    let neg_a = e.b.ins().fneg(a);
    let arg = e.b.ins().fma(neg_a, a, q);
    let ex = super::exp::emit(e, arg);
    let one = e.f32(1.0);
    let large = e.b.ins().fsub(one, ex);
    let cut = e.f32(ONE_FROM);
    let saturated = e.fcmp(FloatCC::GreaterThan, a, cut);
    let large = e.select(saturated, one, large);
    let is_small = e.fcmp(FloatCC::LessThan, a, one);
    let r = e.select(is_small, small, large);
    e.copysign(r, x)
}

// ---- f64 ----

/// Documented maximum error of the `f64` function in ulp of `f64`.
pub const MAX_ULP_F64: f64 = 2.0;

/// `2/√π` rounded to `f64`, and the remainder.
const C0_HI_F64: f64 = std::f64::consts::FRAC_2_SQRT_PI;
const C0_LO_F64: f64 = 1.533545961316588e-17;
/// `(erf(a)/a − 2/√π)/a²` as a polynomial in `a²` on `[0, 1]`, ascending: a degree-12
/// Chebyshev interpolant (`scripts/vmath_f64_fit.py`).
const P_F64: [f64; 13] = [
    -0.37612638903183754,
    0.11283791670955125,
    -0.026866170645131082,
    0.005223977625438469,
    -0.0008548327023024696,
    0.0001205533295270044,
    -1.4925649082364785e-05,
    1.6462076794793434e-06,
    -1.6365085592632062e-07,
    1.4796618901290416e-08,
    -1.219035624032117e-09,
    8.800680090460203e-11,
    -4.374621450325064e-12,
];
/// `ln(erfc(a)) + a²` as a polynomial in `a − 1.75` on `[1, 2.5]` (degree 16).
const Q1_F64: [f64; 17] = [
    -1.2553635254332227,
    -0.4596109008134153,
    0.09005983350326342,
    -0.020538840381642994,
    0.004624930498877531,
    -0.0009640986489423922,
    0.00017452306454516999,
    -2.3741463568154805e-05,
    8.275194478827921e-07,
    8.908616929462253e-07,
    -4.0192933598788253e-07,
    1.1310522337428491e-07,
    -2.307431396619057e-08,
    2.862289649232427e-09,
    2.349991963047211e-10,
    -3.4320349789246363e-10,
    1.1398544940688474e-10,
];
/// `ln(erfc(a)) + a²` as a polynomial in `a − 4.25` on `[2.5, 6]` (degree 16).
const Q2_F64: [f64; 17] = [
    -2.045269901469707,
    -0.22377571552195313,
    0.02391542360311686,
    -0.0032637442789577157,
    0.00048052875642905777,
    -7.237983657975445e-05,
    1.0879251818304368e-05,
    -1.6067286323630878e-06,
    2.3019673791948704e-07,
    -3.154825282334365e-08,
    4.051516015342507e-09,
    -4.674305474428252e-10,
    4.435655510937355e-11,
    -2.940872614232999e-12,
    -2.6991288529127863e-13,
    2.8698220841370513e-13,
    -5.946112033676618e-14,
];
/// Past this `|x|`, `erf(x)` is 1 in `f64` (`erfc(5.87) < 2^-54`).
const ONE_FROM_F64: f64 = 6.0;

/// Emits `erf(x)` for the `f64` value `x`.
///
/// On `a = |x|`, `z = a²`: for `a < 1`, `erf(a) = a·c0_hi + a·(c0_lo + z·P(z))` (`c0 = 2/√π`
/// in two parts, `P` of degree 12; relative accuracy near 0, subnormals included); for
/// `1 ≤ a ≤ 6`, `erf(a) = 1 − e^(−a² + q(a))` with `q ≈ ln(erfc(a)) + a²` a degree-16
/// polynomial on `[1, 2.5]` or on `[2.5, 6]` (both evaluated, one selected), `−a² + q` one
/// fused multiply-add and the exponential the inline `f64` [`super::exp`]; past 6, `1`.
/// The sign is put back with a bit operation: `erf(-0) = -0`, `erf(±inf) = ±1`, NaN stays
/// NaN. Range: `[-1, 1]`.
///
/// **Maximum error: 2 ulp** ([`MAX_ULP_F64`]; measured 1.195 ulp against MPFR on the dense
/// sample of 4096 inputs per binade, see [`crate::vmath`]).
pub(crate) fn emit_f64(e: &mut Emit, x: Value) -> Value {
    let a = e.b.ins().fabs(x);
    let z = e.b.ins().fmul(a, a);
    let p = e.horner_f64(z, &P_F64);
    let c0_lo = e.f64(C0_LO_F64);
    let c0_hi = e.f64(C0_HI_F64);
    let tail = e.b.ins().fma(z, p, c0_lo);
    let tail = e.b.ins().fmul(a, tail);
    let small = e.b.ins().fma(a, c0_hi, tail);

    let mid1 = e.f64(1.75);
    let t1 = e.b.ins().fsub(a, mid1);
    let q1 = e.horner_f64(t1, &Q1_F64);
    let mid2 = e.f64(4.25);
    let t2 = e.b.ins().fsub(a, mid2);
    let q2 = e.horner_f64(t2, &Q2_F64);
    let split = e.f64(2.5);
    let first = e.fcmp(FloatCC::LessThan, a, split);
    let q = e.select(first, q1, q2);
    let neg_a = e.b.ins().fneg(a);
    let arg = e.b.ins().fma(neg_a, a, q);
    let ex = super::exp::emit_f64(e, arg);
    let one = e.f64(1.0);
    let large = e.b.ins().fsub(one, ex);
    let cut = e.f64(ONE_FROM_F64);
    let saturated = e.fcmp(FloatCC::GreaterThan, a, cut);
    let large = e.select(saturated, one, large);
    let is_small = e.fcmp(FloatCC::LessThan, a, one);
    let r = e.select(is_small, small, large);
    e.copysign_f64(r, x)
}
