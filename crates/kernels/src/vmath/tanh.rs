//! `tanh(x)` for `f32` and `f64` lanes: the constants, method and error bounds of the inline
//! `tanh`, on `f32` a rational function of the half angle and the doubling identity, sized for
//! GELU-tanh speed.

/// Documented maximum error in ulp: **4 ulp**, in the vector, scalar and library loops (see
/// [`super::max_ulp`] for how it is checked; the measured maximum is in `BENCHMARKS.md`).
///
/// On `x_c = x` clamped to `[-CLAMP, CLAMP]` ([`CLAMP`]) and `t = x_c²`:
///
/// 1. the half angle as a fraction: `N/D ≈ tanh(x_c/2)` with `N = x_c·P(t)`, `D = Q(t)`
///    ([`P`] of degree 2, [`Q`] of degree 3);
/// 2. the doubling identity `tanh(x) = 2T/(1 + T²)` for `T = N/D`, with one division:
///    `(N·D + N·D) / fma(N, N, D·D)`.
///
/// Fourteen vector operations, one of them a division, as many on the multiply pipes as the
/// single rational of degree 4/4 this replaced (the doubling's `+` runs on the adders),
/// which was 5.6 ulp from `tanh`. The doubling step damps
/// the half angle's relative error by `1/cosh(x)`, so a rational of lower degree suffices and
/// its roundings stop mattering for large `x`, where the old one's Horner sums grew to 66
/// times the result. `P` and `Q` are scaled by 1.85 and 3.7 (`P(0) = 1.85`, `Q(0) = 3.7`),
/// which cancels in the quotient up to the exact factor 2 and puts `N`, `D` and their products near the top of their
/// binades, where a rounding is about half the relative error it is just above a power of
/// two; for small `x` those roundings are what is left of the error.
///
/// The fit (`scripts/tanh_rational_fit.py`): minimax of the relative error of `P/Q` against
/// `2·tanh(x/2)/x` weighted by `1/cosh(x)` on `[0, 9.0111084]`, `P(0) = Q(0) = 1` (Lawson's
/// iteration on the linearised problem, 40 digits; 0.12 ulp), scaled (`Q` also by 2, for
/// `tanh(x/2)`) and rounded to `f32`. Tiny `x` give `x` within an ulp (1.85 is not a power of
/// two), `tanh(±0) = ±0` (signed
/// products and quotients), NaN stays NaN (the clamps are compares and selects), and
/// `tanh(±inf) = ±1` (the clamp).
pub const MAX_ULP: f64 = 4.0;

/// `x` is clamped to `±` this (`0x4107eada`, 8.494837): the first `f32` from 7 on at which
/// the function, in `f32` arithmetic, is exactly `1.0`; no `f32` below it gives more than 1
/// (the first above 1 is 9.85; checked over every `f32` of `[7, 12)` by the fit script and
/// over every `f32` by the accuracy sweep's range guarantee), so no result needs a cap and
/// `tanh(±inf) = ±1`.
pub const CLAMP: f32 = f32::from_bits(0x4107_eada);

/// The half angle's numerator in `t = x_c²`, ascending (`N = x_c·P(t)`; `P(0) = 1.85`).
pub const P: [f32; 3] = [
    f32::from_bits(0x3fec_cccd),
    f32::from_bits(0x3d61_a4ef),
    f32::from_bits(0x395d_ce5c),
];

/// The half angle's denominator in `t = x_c²`, ascending (`D = Q(t)`; `Q(0) = 3.7`).
pub const Q: [f32; 4] = [
    f32::from_bits(0x406c_cccd),
    f32::from_bits(0x3ed6_4715),
    f32::from_bits(0x3b92_55b7),
    f32::from_bits(0x3698_cfe8),
];

// ---- f64 ----

/// Documented maximum error of the `f64` function (`F64X2` and scalar loops) in ulp of
/// `f64`: **2 ulp** against 256-bit references (see [`super::max_ulp`]).
///
/// On `a = |x|`, with `E = e^(2a) − 1` as an unevaluated sum `E + E_lo` from the inline
/// `f64` `expm1` (`2a` clamped to 40, [`CLAMP_2A_F64`], where `tanh` rounds to 1):
/// `D + D_lo = E + E_lo + 2` (Fast2Sum), then `tanh(a) = E/(E + 2)` below [`SMALL_F64`]
/// (relative accuracy for tiny and subnormal `x`) and `1 − 2/(E + 2)` above, each quotient
/// corrected once with its exact residual and the low parts. The sign of `x` is put back with
/// a bit operation, so `tanh(-0) = -0` and NaN stays NaN. Range: `[-1, 1]`.
pub const MAX_ULP_F64: f64 = 2.0;

/// Below this `|x|` the quotient `E/(E + 2)` is used, above it `1 − 2/(E + 2)`.
pub const SMALL_F64: f64 = 0.55;

/// Past this `|x|` (`2|x|` past 40) `tanh` rounds to `±1`; the argument of `expm1` is
/// clamped there.
pub const CLAMP_2A_F64: f64 = 40.0;
