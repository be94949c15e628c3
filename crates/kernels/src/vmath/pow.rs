//! `x^y` for `f32` lanes (through `f64`) and `f64` lanes (through a double-double logarithm):
//! the method, constants and error bounds of the inline lowering of `Power` on both float
//! types, which keeps `Power` kernels free of per-lane host calls.

/// Documented maximum error of the `f32` function, in ulp of `f32` against the `f64`
/// reference `f64::powf` (before rounding): **1 ulp** (see [`super::max_ulp`] for how it is
/// checked).
///
/// Each pair is promoted to `f64` (exact), `|x|^y = e^(y·ln|x|)` is computed in `f64` with
/// the methods of the inline `f64` [`super::log`] and [`super::exp`] at lower polynomial
/// degrees ([`RP`], [`QP`]), and the result is demoted to `f32` once. The `f64`
/// intermediate is accurate to about 1e-9 relative wherever the `f32` result is finite and
/// non-zero (`|y·ln|x|| < 104` there), so the only error of note is the final rounding.
/// Results (nearly) halfway between two `f32` may round the other way than the
/// interpreter's, e.g. `pow(2^-100, 1.5) = 2^-150`. In a vector loop the `F32X4` operands are
/// split into two `F64X2` halves (`fvpromote_low` of the low lanes and of the high lanes
/// moved down by a byte shuffle), computed, demoted with `fvdemote` and put back together
/// with one shuffle.
///
/// IEEE 754 `pow` special cases, on both types, as the interpreter's `f64::powf` gives them
/// (and so its `f32` `Power`, computed in `f64`), bit for bit: `pow(x, ±0) = 1` and
/// `pow(1, y) = 1` for every `x`, `y` (NaN included); `pow(-1, ±inf) = 1`; a negative
/// finite `x` with a non-integer finite `y` gives NaN; a negative `x` (`-0` and `-inf`
/// included) with an odd integer `y` gives a negative result, with an even integer `y` or an
/// infinite one a positive one; `±0` and `±inf` bases and infinite exponents follow from
/// `e^(±inf) ∈ {0, inf}` (`pow(0, y < 0) = inf`, `pow(|x| < 1, -inf) = inf`, ...); any other
/// NaN operand gives NaN.
pub const MAX_ULP: f64 = 1.0;

/// `(e^r − 1 − r)/r²` on `[-ln2/2, ln2/2]`, degree 6 (`scripts/vmath_f64_fit.py`,
/// |error| < 2.7e-11: ample for one rounding to `f32`).
pub const QP: [f64; 7] = [
    0.5,
    0.16666666718997508,
    0.041666666718980845,
    0.008333298483754886,
    0.001388885404961482,
    0.0001989927395864936,
    2.4859578222625295e-05,
];

/// `R(z)/z` of [`super::log`]'s `f64` method, degree 3 (|error| < 1.2e-9, entering the
/// logarithm multiplied by `s·z < 0.0051`).
pub const RP: [f64; 4] = [
    0.6666666655449663,
    0.4000012184017775,
    0.285508207738004,
    0.23330468363519238,
];

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
