//! The error function `erf(x)` for `f32` and `f64` lanes: the constants, method and error
//! bounds of the inline `erf` (two polynomial pieces on `f32`, no division or exponential).

use super::two_piece::TwoPiece;

/// Documented maximum error in ulp: **2 ulp** (see [`super::max_ulp`] for how it is
/// checked).
///
/// Two polynomial pieces on `a = min(|x|, clamp)` ([`FORM`]), no division and no
/// exponential:
/// - `a < 1.140625`: `erf(a) = a + a·R(a²)`, with [`R`] of degree 6 (`R(0) = 2/√π − 1`); one
///   fused multiply-add forms the result, so tiny and subnormal `x` keep full relative
///   accuracy;
/// - otherwise: `erf(a) = 1 − G(a − 2)⁴`, with [`G`] `≈ erfc(a)^(1/4)` of degree 7; the
///   fourth power keeps `G` smooth and well conditioned on `[1.14, 3.95]`, and `a − 2` is
///   exact.
///
/// `clamp = 3.94013071` is where the second piece gives exactly `1.0`; from `3.9192059` (the
/// smallest `f32` whose correctly rounded `erf` is `1`) the result is `1` or its predecessor.
/// The clamp is a compare and select, so NaN stays NaN and `erf(±inf) = ±1`. The sign of `x`
/// is put back with a bit operation: `erf(-0) = -0`. Range: `[-1, 1]`. The coefficients are
/// minimax fits in relative error made for graphlift (Remez-style, rounded to `f32` and
/// re-checked by an exhaustive sweep with true FMA).
pub const MAX_ULP: f64 = 2.0;

/// `(erf(a) − a)/a` as a polynomial in `a²` on `[0, 1.140625]`, ascending.
pub const R: [f32; 7] = [
    f32::from_bits(0x3e03_75d4),
    f32::from_bits(0xbec0_9393),
    f32::from_bits(0x3de7_142a),
    f32::from_bits(0xbcdb_d5cd),
    f32::from_bits(0x3ba8_e3c2),
    f32::from_bits(0xba4a_6221),
    f32::from_bits(0x3891_7d35),
];

/// `erfc(a)^(1/4)` as a polynomial in `a − 2` on `[1.140625, clamp]`, ascending.
pub const G: [f32; 8] = [
    f32::from_bits(0x3e85_e641),
    f32::from_bits(0xbe93_e5d7),
    f32::from_bits(0x3dcb_07a8),
    f32::from_bits(0x3be2_7a2e),
    f32::from_bits(0xbc48_2f76),
    f32::from_bits(0x3ac7_a932),
    f32::from_bits(0x3a3d_16e6),
    f32::from_bits(0xb93e_9e8c),
];

/// Where the pieces meet (`0x3f920000`), the centre of the second, and the clamp of `|x|`
/// (`0x407c2b1a`, where `1 − G⁴` is exactly `1.0`).
pub const FORM: TwoPiece = TwoPiece {
    clamp: f32::from_bits(0x407c_2b1a),
    split: 1.140_625,
    mid: 2.0,
    g: &G,
};

// ---- f64 ----

/// Documented maximum error of the `f64` function (`F64X2` and scalar loops) in ulp of
/// `f64`: **2 ulp** against 256-bit references (see [`super::max_ulp`]).
///
/// On `a = |x|`, `z = a²`: for `a < 1`, `erf(a) = a·c0_hi + a·(c0_lo + z·P(z))` (`c0 = 2/√π`
/// in two parts, [`P_F64`] of degree 12; relative accuracy near 0, subnormals included); for
/// `1 ≤ a ≤ 6`, `erf(a) = 1 − e^(−a² + q(a))` with `q ≈ ln(erfc(a)) + a²` a degree-16
/// polynomial on `[1, 2.5]` or on `[2.5, 6]` ([`Q1_F64`], [`Q2_F64`]: both evaluated, one
/// selected) and the inline `f64` `exp`; past 6, `1`. The sign is put back with a bit
/// operation: `erf(-0) = -0`, `erf(±inf) = ±1`, NaN stays NaN. Range: `[-1, 1]`.
pub const MAX_ULP_F64: f64 = 2.0;

/// `2/√π` rounded to `f64`, and the remainder.
pub const C0_HI_F64: f64 = std::f64::consts::FRAC_2_SQRT_PI;

/// `2/√π − C0_HI_F64`, rounded to `f64`.
pub const C0_LO_F64: f64 = 1.533545961316588e-17;

/// `(erf(a)/a − 2/√π)/a²` as a polynomial in `a²` on `[0, 1]`, ascending: a degree-12
/// Chebyshev interpolant (`scripts/vmath_f64_fit.py`).
pub const P_F64: [f64; 13] = [
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
pub const Q1_F64: [f64; 17] = [
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
pub const Q2_F64: [f64; 17] = [
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
pub const ONE_FROM_F64: f64 = 6.0;
