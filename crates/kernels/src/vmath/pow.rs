//! `x^y` for `f32` lanes (through a double-`f32` logarithm) and `f64` lanes (through a
//! double-double one): the method, constants and error bounds of the inline lowering of
//! `Power` on both float types, which keeps `Power` kernels free of per-lane host calls and,
//! on `f32`, at the full width of the vector (no promotion to `f64`).

/// Documented maximum error of the `f32` function, in ulp of `f32` against the `f64`
/// reference `f64::powf` (before rounding): **2 ulp** (see [`super::max_ulp`] for how it is
/// checked; the measured figure is in `BENCHMARKS.md`).
///
/// `|x|^y = e^w`, `w = y·ln|x|`, all in `f32` arithmetic, the same method as the `f64`
/// function ([`MAX_ULP_F64`]) one precision down. `e^w` turns an absolute error `δ` of `w`
/// into a relative error `δ` of the result, and `|w|` reaches 104 for finite non-zero
/// results, so `ln|x|` must be known to about 2^-32 relative, eight bits past `f32`:
///
/// 1. `|x| = 2^k·(1 + f)`, `1 + f ∈ [√½, √2)` (the reduction of [`super::log`], subnormal
///    `x` scaled by `2^23` first);
/// 2. `ln(1 + f) = 2s + (2/3)s³ + s⁵·R(s²)`, `s = f/(2 + f)`, with `s` (one division, the
///    quotient's remainder by fma), `s³` and `(2/3)s³` ([`C3_HI_F32`], [`C3_LO_F32`]) as
///    double-`f32` values, the `s⁵` tail ([`R5_F32`], at most 1.7e-4 of the sum) in plain
///    `f32`, and `k·ln2` as `k·ln2_hi` (exact) `+ k·ln2_lo`, summed by Fast2Sum into
///    `L_hi + L_lo` (about 2^-37 relative);
/// 3. `w = y·L` as `w_hi + w_lo` by an exact product (fma); `w_hi` clamped to the range of
///    [`super::exp`] (`[-104, 89]`, past which the result is `0` or `inf`; `w_lo` is then
///    dropped);
/// 4. `e^w` by `exp`'s Cody–Waite reduction of `w_hi` with `w_lo` carried into the reduced
///    argument (one rounding), its polynomial and its two-step scaling by `2^n`, so
///    subnormal results round once.
///
/// Every step is sixteen-lane `f32` (or `i32`) work in the AVX-512 kernels and four-lane in
/// Cranelift's, with one division, where a method through `f64` computes two halves of
/// half the width (two `f64` divisions, and the conversions).
///
/// IEEE 754 `pow` special cases, on both types, as the interpreter's `f64::powf` gives them
/// (and so its `f32` `Power`, computed in `f64`), bit for bit: `pow(x, ±0) = 1` and
/// `pow(1, y) = 1` for every `x`, `y` (NaN included); `pow(-1, ±inf) = 1`; a negative
/// finite `x` with a non-integer finite `y` gives NaN; a negative `x` (`-0` and `-inf`
/// included) with an odd integer `y` gives a negative result, with an even integer `y` or an
/// infinite one a positive one; `±0` and `±inf` bases and infinite exponents follow from
/// `e^(±inf) ∈ {0, inf}` (`pow(0, y < 0) = inf`, `pow(|x| < 1, -inf) = inf`, ...); any other
/// NaN operand gives NaN.
pub const MAX_ULP: f64 = 2.0;

/// `2/3` rounded to `f32`: the high part of the `s³` coefficient of the `f32` logarithm.
pub const C3_HI_F32: f32 = 2.0 / 3.0;

/// `2/3 − C3_HI_F32`, rounded to `f32`.
pub const C3_LO_F32: f32 = (2.0 / 3.0 - C3_HI_F32 as f64) as f32;

/// `R(z) = Σ 2z^j/(2j + 5)`, `j = 0..=3` ([`R5`]'s first terms): with `z = s² ≤ 0.0295`
/// the first term left out is below 2^-21 of `R`, and the tail `s⁵·R` is at most 1.7e-4 of
/// the logarithm.
pub const R5_F32: [f32; 4] = [2.0 / 5.0, 2.0 / 7.0, 2.0 / 9.0, 2.0 / 11.0];

// ---- f64 ----

/// Documented maximum error of `Power` on `f64`, in ulp of `f64` against the exact value
/// (256-bit references, `graphlift_harness::accuracy::sweep_pow_f64`): **2 ulp** (see
/// [`super::max_ulp`]).
///
/// `e^w` amplifies an absolute error `δ` of `w = y·ln|x|` into a relative error `δ` of the
/// result, and `|w|` reaches 745 for finite non-zero results, so `ln|x|` must be known to
/// about 2^-63 relative, ten bits past `f64`. It is computed as an unevaluated sum
/// `L_hi + L_lo` (the `atanh` series of `log`, with `s = f/(2 + f)` and the `s³` term as
/// double-doubles: [`C3_HI`], [`C3_LO`], [`R5`]), to about 2^-66 relative; `w = y·L` as
/// `w_hi + w_lo` by an exact product; and `e^(w_hi + w_lo)` with the `exp` reduction
/// carrying `w_lo` into the reduced argument. The special cases are those of [`MAX_ULP`].
///
/// The double-double logarithm needs about twice the operations of the `f64` `log`, and
/// without a gather (Cranelift 0.135 has none on 128-bit vectors) a table-driven reduction
/// like glibc's would cost a scalar load per lane per table; this method keeps `Power`
/// kernels free of per-lane host calls and within a stated bound.
pub const MAX_ULP_F64: f64 = 2.0;

/// `2/3` as `C3_HI + C3_LO` (`C3_LO = 2^-53/3`).
pub const C3_HI: f64 = 2.0 / 3.0;

/// `2/3 − C3_HI`, rounded to `f64`.
pub const C3_LO: f64 = f64::EPSILON / 6.0;

/// `R(z) = Σ 2z^j/(2j + 5)`, `j = 0..=10`: the `atanh` series past its `s³` term, divided
/// by `s⁵` (`ln(1 + f) = 2s + (2/3)s³ + s⁵·R(s²)`). With `z = s² ≤ 0.0295` the first term left
/// out is below 2^-54 of `R`.
pub const R5: [f64; 11] = [
    2.0 / 5.0,
    2.0 / 7.0,
    2.0 / 9.0,
    2.0 / 11.0,
    2.0 / 13.0,
    2.0 / 15.0,
    2.0 / 17.0,
    2.0 / 19.0,
    2.0 / 21.0,
    2.0 / 23.0,
    2.0 / 25.0,
];
