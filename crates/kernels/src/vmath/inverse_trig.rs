//! `atan`, `asin`, `acos` for `f32` lanes: the constants, method and error bounds of the
//! inline argument reductions and minimax polynomials (`scripts/trig_fit.py`). `f64` lanes
//! call the reference's scalar functions.

/// Documented maximum error of `atan` in ulp: **3 ulp** (see [`super::max_ulp`]; 2.24 ulp
/// measured on every 97th `f32`, near `tan(π/8)` where the `π/4` offset is added).
///
/// On `a = |x|`: `t = −1/a` with offset `π/2` for `a >` [`TAN_3PI_8`], `t = (a − 1)/(a + 1)`
/// with offset `π/4` for `a >` [`TAN_PI_8`], else `t = a`; then `|t| ≤ tan(π/8)` and
/// `atan(a) = offset + t + t³·A(t²)` ([`ATAN`], relative error 0.35·2^-24 before rounding),
/// the offsets added as a high part plus a low part; the sign of `x` is put back with a bit
/// operation. `atan(±inf) = ±π/2` (rounded), `atan(±0) = ±0`, NaN stays NaN.
pub const MAX_ULP_ATAN: f64 = 3.0;

/// Documented maximum error of `asin` in ulp: **3 ulp** (2.33 ulp measured on every 97th
/// `f32`, just above `1/2`, where `π/2 − 2·asin(s)` cancels a factor of 2).
///
/// On `a = |x|`: `asin(a) = a + a³·B(a²)` for `a ≤ 1/2` ([`ASIN`], relative error
/// 0.08·2^-24 before rounding); above, `asin(a) = π/2 − 2·asin(s)` with `s = √z`,
/// `z = (1 − a)/2` (exact), `asin(s) = s + s·z·B(z)`. The sign of `x` is put back with a bit
/// operation: `asin(±0) = ±0`; `|x| > 1` gives NaN (`√` of a negative), NaN stays NaN.
pub const MAX_ULP_ASIN: f64 = 3.0;

/// Documented maximum error of `acos` in ulp: **2 ulp** (1.12 measured): with `t` the polynomial of
/// [`MAX_ULP_ASIN`], `π/2 − asin(x)` for `|x| ≤ 1/2`, `2·asin(√((1 − x)/2))` above and
/// `π − 2·asin(√((1 + x)/2))` below `−1/2`, the constants `π/2` and `π` as a high part plus
/// a low part. `acos(1) = +0`; `|x| > 1` gives NaN; NaN stays NaN.
pub const MAX_ULP_ACOS: f64 = 2.0;

/// `tan(3π/8) = 1 + √2`, rounded to `f32`.
pub const TAN_3PI_8: f32 = f32::from_bits(0x401a_827a);

/// `tan(π/8) = √2 − 1`, rounded to `f32`.
pub const TAN_PI_8: f32 = f32::from_bits(0x3ed4_13cd);

/// `π/2` rounded to `f32` (the high part).
pub const PIO2_HI: f32 = f32::from_bits(0x3fc9_0fdb);

/// `π/2 − PIO2_HI`, rounded to `f32`.
pub const PIO2_LO: f32 = f32::from_bits(0xb33b_bd2e);

/// `π/4` rounded to `f32`.
pub const PIO4_HI: f32 = f32::from_bits(0x3f49_0fdb);

/// `π/4 − PIO4_HI`, rounded to `f32`.
pub const PIO4_LO: f32 = f32::from_bits(0xb2bb_bd2e);

/// `π` rounded to `f32`.
pub const PI_HI: f32 = f32::from_bits(0x4049_0fdb);

/// `π − PI_HI`, rounded to `f32`.
pub const PI_LO: f32 = f32::from_bits(0xb3bb_bd2e);

/// `A(z) ≈ (atan(t) − t)/t³`, `z = t²`, on `t ∈ [0, tan(π/8)]`, ascending.
pub const ATAN: [f32; 4] = [
    f32::from_bits(0xbeaa_aa2a),
    f32::from_bits(0x3e4c_925e),
    f32::from_bits(0xbe0e_1b81),
    f32::from_bits(0x3da4_f0b7),
];

/// `B(z) ≈ (asin(s) − s)/s³`, `z = s²`, on `s ∈ [0, 1/2]`, ascending.
pub const ASIN: [f32; 5] = [
    f32::from_bits(0x3e2a_aae4),
    f32::from_bits(0x3d99_80f2),
    f32::from_bits(0x3d3a_3f20),
    f32::from_bits(0x3cc6_144e),
    f32::from_bits(0x3d2c_b66e),
];
