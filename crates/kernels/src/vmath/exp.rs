//! `e^x` for `f32` and `f64` lanes: the constants, method and error bounds of the inline
//! Cody–Waite exponential, which the JIT's Cranelift code and the vector math library share.

/// Documented maximum error in ulp: **1 ulp** (subnormal results in the subnormal ulp; see
/// [`super::max_ulp`] for how it is checked).
///
/// Cody–Waite range reduction `x = n·ln2 + r`, `|r| ≤ ln2/2`, with a two-part `ln2` whose
/// high part has 9 significant bits (so `n·ln2_hi` is exact); `e^r = 1 + r + r²·Q(r)` with a
/// degree-5 `Q` (a Chebyshev fit of `(e^r − 1 − r)/r²`, |error| < 5e-9 after rounding the
/// coefficients to `f32`), evaluated with fused multiply-adds; then the result is scaled by
/// `2^n` in two steps `2^(n/2)·2^(n − n/2)` built from exponent bits, so results in the
/// subnormal range round once and overflow gives `+inf`. The input is first clamped to
/// `[-104, 89]` ([`LO`], [`HI`]) with compare-and-select (NaN passes through): `e^-104`
/// rounds to `0` and `e^89` overflows, so `exp(-inf) = 0`, `exp(+inf) = +inf`, and `NaN`
/// gives `NaN`.
pub const MAX_ULP: f64 = 1.0;

/// The input is clamped below to this: `e^-104` rounds to `0` in `f32`.
pub const LO: f32 = -104.0;

/// The input is clamped above to this: `e^89` overflows `f32` to `+inf`.
pub const HI: f32 = 89.0;

/// `log2(e)`: `n = round(x·log2(e))` in the Cody–Waite reduction.
pub const LOG2E: f32 = std::f32::consts::LOG2_E;

/// 1.5·2^23: adding it rounds to an integer (ties to even) in the low mantissa bits.
pub const MAGIC: f32 = 12_582_912.0;

/// `ln 2` to 9 significant bits (0.693359375), so `n·LN2_HI` is exact for `|n| < 2^15`.
pub const LN2_HI: f32 = f32::from_bits(0x3f31_8000);

/// `ln 2 − LN2_HI`, rounded to `f32`.
pub const LN2_LO: f32 = -2.121_944_4e-4;

/// `Q(r) ≈ (e^r − 1 − r)/r²` on `[-ln2/2, ln2/2]`, ascending.
pub const Q: [f32; 6] = [
    0.5,
    0.166_666_67,
    0.041_666_467,
    0.008_333_310_5,
    0.001_393_364_2,
    0.000_198_909_81,
];

// ---- f64 ----

/// Documented maximum error of the `f64` function (`F64X2` and scalar loops) in ulp of
/// `f64`: **2 ulp** against 256-bit references (see [`super::max_ulp`]).
///
/// The `f32` method at `f64` precision: clamp to `[-746, 710]` (NaN passes), Cody–Waite
/// reduction with `n` rounded by the 1.5·2^52 magic add and `ln 2` in two parts (the first
/// with 42 bits), `e^r = 1 + (r + r²·Q(r))` with the degree-10 [`Q_F64`], and the scale by
/// `2^n` in two steps built in the exponent field, so subnormal results round once and
/// overflow gives `+inf`. `exp(-inf) = 0`, `exp(+inf) = +inf`, NaN stays NaN. The emitter,
/// `graphlift_codegen::vmath::exp::emit_f64`, documents each step.
pub const MAX_ULP_F64: f64 = 2.0;

/// `e^-746 < 2^-1075` rounds to `0`.
pub const LO_F64: f64 = -746.0;

/// `e^710` overflows (`ln(f64::MAX) ≈ 709.78`).
pub const HI_F64: f64 = 710.0;

/// 1.5·2^52: adding it rounds an `f64` of magnitude below 2^51 to an integer (ties to even),
/// which is then the low bits of the sum's bit pattern.
pub const MAGIC_F64: f64 = 6_755_399_441_055_744.0;

/// `ln 2` to 42 significant bits, so `n·LN2_HI_F64` is exact for `|n| < 2^11`.
pub const LN2_HI_F64: f64 = 0.693_147_180_559_890_3;

/// `ln 2 − LN2_HI_F64`, rounded.
pub const LN2_LO_F64: f64 = 5.497_923_018_708_371e-14;

/// `Q(r) ≈ (e^r − 1 − r)/r²` on `[-ln2/2, ln2/2]`, ascending: a degree-10 Chebyshev
/// interpolant (`scripts/vmath_f64_fit.py`, |error| < 2.6e-18 after rounding to `f64`).
pub const Q_F64: [f64; 11] = [
    0.5,
    0.1666666666666667,
    0.04166666666666667,
    0.008333333333326141,
    0.0013888888888883752,
    0.00019841269874800493,
    2.4801587325533363e-05,
    2.7557255425746435e-06,
    2.7557273661348637e-07,
    2.510520637395701e-08,
    2.0914679376583935e-09,
];
