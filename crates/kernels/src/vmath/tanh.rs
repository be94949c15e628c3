//! `tanh(x)` for `f32` and `f64` lanes: the constants, method and error bounds of the inline
//! `tanh`, on `f32` one rational function with a single division, sized for GELU-tanh speed.

/// Documented maximum error in ulp: **6 ulp**, in the vector, scalar and library loops (see
/// [`super::max_ulp`] for how it is checked).
///
/// One rational function: `tanh(x) = x_c·P(x_c²)/Q(x_c²)` on `x_c = x` clamped to
/// `[-clamp, clamp]` ([`CLAMP`]), with `P` and `Q` of degree 4 in `x_c²` (the kind of
/// approximation Eigen's fast `float` tanh uses, fitted here): thirteen vector operations,
/// one of them a division, no exponential, no second piece and no cap on the result. It
/// trades accuracy for speed, as `-ffast-math` libraries do: in the vector math library
/// GELU-tanh is bound by its number of vector operations.
///
/// The fit holds `P(0) = Q(0) = 1` and `P`'s leading coefficient at `2^-26`, and the shipped
/// coefficients are both polynomials divided by `2^-26`: [`P`] is monic, so its Horner
/// evaluation starts with an addition instead of a fused multiply-add (one operation fewer
/// on the multiply pipes, which bound GELU-tanh in the vector math library), and
/// `P(0) = Q(0) = 2^26` exactly, so tiny and subnormal `x` (below `2^-13`) give `x` exactly
/// and `tanh(-0) = -0`. Rounding to nearest is symmetric, so working on the signed value
/// gives `sign(x)·tanh(|x|)` exactly. The clamp keeps the result in `[-1, 1]` without a cap,
/// `tanh(±inf) = ±1`; the clamps are compares and selects, so NaN stays NaN.
///
/// The coefficients are a minimax fit in relative error on `[0, 9.0111084]` (Lawson's
/// iteration on the linearised problem, 40 digits; approximation error 0.83 ulp with the
/// leading coefficient fixed, 0.35 without: `scripts/tanh_rational_fit.py`), rounded to
/// `f32`. The rounding of the two Horner evaluations, where the partial sums grow to the
/// size of the result (`x_c² ≈ 66` at the clamp), is most of the error.
pub const MAX_ULP: f64 = 6.0;

/// `x` is clamped to `±` this (`0x41023eca`, 8.140329): the largest `f32` at which the
/// rational, in `f32` arithmetic, is exactly `1.0` with no larger value at or below it
/// (from 8.14042 on it would exceed 1 by up to 2 ulp), so no result needs a cap:
/// `tanh(±inf) = ±1`, and past the clamp the result is `±1`, at most 2.85 ulp from `tanh`.
/// Checked over every `f32` by the accuracy sweep's range guarantee.
pub const CLAMP: f32 = f32::from_bits(0x4102_3eca);

/// The numerator's polynomial in `t = x_c²`, ascending, **monic**: the coefficients below its
/// leading `1` (the fit's `P` divided by its leading coefficient `2^-26`; `P(0) = 2^26`).
pub const P: [f32; 4] = [
    f32::from_bits(0x4c80_0000),
    f32::from_bits(0x4b09_b119),
    f32::from_bits(0x486a_18e7),
    f32::from_bits(0x44b6_f48a),
];

/// The denominator's polynomial in `t = x_c²`, ascending, divided by the same `2^-26` as [`P`]
/// (`Q(0) = 2^26`).
pub const Q: [f32; 5] = [
    f32::from_bits(0x4c80_0000),
    f32::from_bits(0x4bef_833d),
    f32::from_bits(0x49d6_64ff),
    f32::from_bits(0x46b2_b103),
    f32::from_bits(0x4262_6bcc),
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
