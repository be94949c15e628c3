//! `ln(x)` for `f32` and `f64` lanes: the constants, method and error bounds of the inline
//! logarithm (after fdlibm's), which the JIT's Cranelift code uses and `log1p` and `pow` build on.

/// Documented maximum error in ulp: **1 ulp** (see [`super::max_ulp`] for how it is
/// checked).
///
/// After fdlibm's `logf`: subnormal inputs are first scaled by `2^23`; then `x = 2^k · m`
/// with `m ∈ [√½, √2)`, `f = m − 1`, `s = f/(2 + f)`, and
/// `ln(1 + f) = f − f²/2 + s·(f²/2 + R(s²))`, where `R(z) ≈ 2·atanh(s)/s − 2` is a degree-4
/// polynomial in `z` ([`R`]: a Chebyshev fit, |error| < 3e-8 relative to `R`, which is itself
/// a correction of order `s³`). The result adds `k·ln2` in two parts (the high part has 9
/// significant bits, so `k·ln2_hi` is exact). Special values by select: `ln(±0) = -inf`,
/// `ln(x < 0) = NaN`, `ln(+inf) = +inf`, `ln(NaN) = NaN`.
pub const MAX_ULP: f64 = 1.0;

/// `ln 2` in two parts, `exp`'s ([`super::exp::LN2_HI`], [`super::exp::LN2_LO`]).
pub use super::exp::{LN2_HI, LN2_LO};

/// Bits of `√½` (rounded): mantissas at or above it stay in `[√½, 1)` after the shift.
pub const SQRT_HALF_BITS: i32 = 0x3f35_04f3;

/// `R(z)/z` ascending in `z = s²`.
pub const R: [f32; 4] = [0.666_666_7, 0.400_001_23, 0.285_508_22, 0.233_304_68];

// ---- f64 ----

/// Documented maximum error of the `f64` function (`F64X2` and scalar loops) in ulp of
/// `f64`: **2 ulp** against 256-bit references (see [`super::max_ulp`]).
///
/// The `f32` method at `f64` precision: subnormal inputs scaled by `2^54`, the same
/// reduction, a degree-6 `R` ([`R_F64`]) and `k·ln2` in two parts; `k` becomes a float
/// without an `i64 → f64` conversion (none lowers on `F64X2`): the biased exponent is put
/// into the mantissa of `2^52`. Special values by select: `ln(±0) = -inf`,
/// `ln(x < 0) = NaN`, `ln(+inf) = +inf`, NaN stays NaN. The emitter,
/// `graphlift_codegen::vmath::log::emit_f64`, documents each step.
pub const MAX_ULP_F64: f64 = 2.0;

/// Bits of `√½` (rounded to `f64`).
pub const SQRT_HALF_BITS_F64: i64 = 0x3fe6_a09e_667f_3bcd;

/// `R(z)/z` ascending in `z = s²` on `[0, 0.02944]`: a degree-6 Chebyshev interpolant of
/// `(2·atanh(s)/s − 2)/z` (`scripts/vmath_f64_fit.py`, |error| < 3.2e-16, which enters the
/// result multiplied by `s·z < 0.0051`).
pub const R_F64: [f64; 7] = [
    0.666666666666667,
    0.39999999999899505,
    0.28571428625975764,
    0.22222211134749734,
    0.18182889128565508,
    0.15331721490738642,
    0.14616451042434167,
];
