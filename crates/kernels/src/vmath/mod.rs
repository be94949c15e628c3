//! Vector math: the one definition (constants, methods, error bounds) of `exp`, `expm1`,
//! `log`, `log1p`, `tanh`, `sigmoid`, `erf` and `pow` on `f32` and `f64`, which the JIT's inline
//! Cranelift code and the vector math library both follow.

use graphlift_ir::{ElementType, UnaryOp};
pub mod erf;
pub mod exp;
pub mod expm1;
pub mod hyperbolic;
pub mod inverse_trig;
pub mod log;
pub mod log1p;
pub mod pow;
pub mod sigmoid;
pub mod tanh;
pub mod trig;
pub mod two_piece;

/// The functions with an inline approximation (for `f32` and for `f64`), in table order.
///
/// Each is emitted inline as a polynomial approximation in Cranelift IR, written once per
/// element type against the lane view (`graphlift_codegen::lanes::Emit`: each file there
/// holds the `f32` function `emit` and the `f64` one `emit_f64`), and so emits either vector
/// code (`F32X4`, `F64X2`) or scalar code with the same operation sequence, lane for lane.
/// The `f64` polynomials are Chebyshev interpolants computed by `scripts/vmath_f64_fit.py`
/// (mpmath). `f64x2 ↔ i64x2` conversions, which x64 Cranelift 0.135 does not lower, are
/// replaced by the 1.5·2^52 magic add (round to integer) and integer adds into the exponent
/// field (`2^n`); the `I64X2` ops used are `iadd`, `isub`, `band`, `bor`, `ishl_imm`,
/// `ushr_imm` and `icmp sgt` (no `sshr`, `imul` or conversions). Fused multiply-adds are
/// used inside the polynomials and the error-free transformations, and only there: kernel
/// arithmetic is never contracted.
pub const FUNCTIONS: [UnaryOp; 7] = [
    UnaryOp::Exp,
    UnaryOp::Expm1,
    UnaryOp::Log,
    UnaryOp::Log1p,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Erf,
];

/// The trigonometric and hyperbolic functions with an inline approximation on `f32` only
/// ([`trig`], [`inverse_trig`], [`hyperbolic`]); on `f64` they call the reference's scalar
/// functions once per lane, exactly. Swept like [`FUNCTIONS`] on `f32`.
pub const F32_ONLY: [UnaryOp; 11] = UnaryOp::TRIG;

/// The documented maximum error of the inline lowering of `op` on element type `t`, in ulp
/// of `t` (`f32` or `f64`), or `None` if `op` is exact on `t` (or not a vector math
/// function, or `t` is not a float type).
///
/// The bounds are checked through the kernels' own code by `graphlift accuracy`
/// (`graphlift_harness::accuracy`):
///
/// - **`f32`**: the error is `|y − ref| / ulp(ref)` ([`ulp_error`]), where `ref` is the
///   reference interpreter's `f64` value (before rounding to `f32`) and `ulp(ref)` the
///   spacing of `f32` numbers at `|ref|` (`2^-149` in the subnormal range); a correctly
///   rounded result is within 0.5 ulp. `cargo run --release -p graphlift-cli -- accuracy`
///   sweeps every one of the 2^32 `f32` bit patterns (`--step K`: every K-th) in the vector
///   loop, and `--scalar` the scalar loop, which runs the same operation sequence and gives
///   the same bits; every range and special-value guarantee is checked too.
/// - **`f64`** (`accuracy --f64`, with `--per-binade N` and `--scalar`): the error is in ulp
///   of `f64` at the exact value ([`ulp_error_f64`]: `2^-1074` in the subnormal range, an
///   infinite result counting as `±2^1024`), against 256-bit reference values (pure-Rust
///   `astro-float`: `graphlift_harness::accuracy::reference`). The sample
///   (`graphlift_harness::accuracy::f64_sample`) takes `N` evenly spaced bit patterns in
///   every binade of both signs (2 × 2047 binades, the subnormals one of them; `N = 4096`
///   gives 16.8 million inputs per function), the special values, and the 64 neighbours on
///   each side of every threshold (overflow, underflow, method switches). At `±0`, `±inf`
///   and NaN every result must be the interpreter's bit for bit.
/// - **`Power`** ([`pow::MAX_ULP`], [`pow::MAX_ULP_F64`]): `accuracy --pow --step K` takes
///   every K-th positive `f32` base and its negation, each with 32 fixed exponents
///   (`graphlift_harness::accuracy::POW_EXPONENTS`: `±0`, `±inf`, NaN, small integers,
///   halves, `2^24`, large and tiny ones) and, from every base, the exponents `t/ln|x|`
///   (rounded to `f32`) and their nearest integers for 16 targets `t` (`POW_TARGETS_F32`)
///   on both sides of the overflow and underflow thresholds and across the subnormals
///   (`--scalar` and `--assembled` sweep the other loops). `accuracy --pow --f64` takes the bases of the
///   dense `f64` sample (64 per binade by default), each with 32 fixed exponents
///   (`POW_EXPONENTS_F64`: `±0`, `±inf`, NaN, integers of both parities, halves, `2^53 − 1`,
///   tiny and huge ones) and, from every base, the exponents `t/ln|x|` and their nearest
///   integers for 16 targets `t` of `y·ln|x|` (`POW_TARGETS`) that put the results across
///   the whole range, the subnormals and both sides of the overflow and underflow
///   thresholds. Every IEEE special case (`pow_special_operands`) must be the
///   interpreter's bit for bit.
///
/// The unit tests sweep every 97th `f32` bit pattern against the same bounds and check the
/// special values: NaN in gives NaN out; `exp(+inf) = +inf`, `exp(-inf) = 0`;
/// `log(±0) = -inf`, `log(x < 0) = NaN`, `log(+inf) = +inf`; `tanh` in `[-1, 1]`,
/// `sigmoid` in `[0, 1]`, `erf` in `[-1, 1]`; odd functions keep the sign of zero. On `f64`
/// they run the same method on a thinned sample (4 per binade) in both loops, and check
/// that the `F64X2` and scalar loops give the same bits.
pub fn max_ulp(op: UnaryOp, t: ElementType) -> Option<f64> {
    match t {
        ElementType::F32 => Some(match op {
            UnaryOp::Exp => exp::MAX_ULP,
            UnaryOp::Log => log::MAX_ULP,
            UnaryOp::Tanh => tanh::MAX_ULP,
            UnaryOp::Sigmoid => sigmoid::MAX_ULP,
            UnaryOp::Erf => erf::MAX_ULP,
            UnaryOp::Expm1 => expm1::MAX_ULP,
            UnaryOp::Log1p => log1p::MAX_ULP,
            UnaryOp::Sin => trig::MAX_ULP_SIN,
            UnaryOp::Cos => trig::MAX_ULP_COS,
            UnaryOp::Tan => trig::MAX_ULP_TAN,
            UnaryOp::Asin => inverse_trig::MAX_ULP_ASIN,
            UnaryOp::Acos => inverse_trig::MAX_ULP_ACOS,
            UnaryOp::Atan => inverse_trig::MAX_ULP_ATAN,
            UnaryOp::Sinh => hyperbolic::MAX_ULP_SINH,
            UnaryOp::Cosh => hyperbolic::MAX_ULP_COSH,
            UnaryOp::Asinh => hyperbolic::MAX_ULP_ASINH,
            UnaryOp::Acosh => hyperbolic::MAX_ULP_ACOSH,
            UnaryOp::Atanh => hyperbolic::MAX_ULP_ATANH,
            _ => return None,
        }),
        ElementType::F64 => Some(match op {
            UnaryOp::Exp => exp::MAX_ULP_F64,
            UnaryOp::Log => log::MAX_ULP_F64,
            UnaryOp::Tanh => tanh::MAX_ULP_F64,
            UnaryOp::Sigmoid => sigmoid::MAX_ULP_F64,
            UnaryOp::Erf => erf::MAX_ULP_F64,
            UnaryOp::Expm1 => expm1::MAX_ULP_F64,
            UnaryOp::Log1p => log1p::MAX_ULP_F64,
            _ => return None,
        }),
        _ => None,
    }
}

/// The error of the `f64` result `y` against the exact value `exact_hi + exact_lo` (an
/// unevaluated sum: `exact_hi` the exact value correctly rounded to `f64`, `exact_lo` the
/// rest, rounded), in ulp of `f64` at the exact value (`2^-1074` in the subnormal range).
/// Equal NaNs and equal infinities give 0; a NaN against a number gives `f64::INFINITY`. An
/// infinite `y` counts as `±2^1024` (where `f64` rounding puts it), and so does an infinite
/// `exact_hi` (an exact value that rounds to infinity; a finite `y` there is then measured
/// against `2^1024`, which overstates its error by at most half an ulp).
pub fn ulp_error_f64(y: f64, exact_hi: f64, exact_lo: f64) -> f64 {
    if y.is_nan() || exact_hi.is_nan() {
        return if y.is_nan() && exact_hi.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if y == exact_hi && (exact_lo == 0.0 || y.is_infinite()) {
        return 0.0;
    }
    if y.is_infinite() || exact_hi.is_infinite() {
        // Measured in ulp of the top binade (2^971), infinities at ±2^1024: scaled down by
        // 2^-971 so nothing overflows.
        let down = |v: f64| -> f64 {
            if v.is_infinite() {
                v.signum() * pow2(1024 - 971)
            } else {
                v * pow2(-971)
            }
        };
        let lo = if exact_hi.is_infinite() {
            0.0
        } else {
            exact_lo * pow2(-971)
        };
        return ((down(y) - down(exact_hi)) - lo).abs();
    }
    let ulp = ulp_at_f64(exact_hi.abs(), exact_lo, exact_hi.is_sign_negative());
    // y − exact_hi is exact when they are within a factor 2 (Sterbenz); else the error is
    // large anyway.
    ((y - exact_hi) - exact_lo).abs() / ulp
}

/// The spacing of `f64` numbers at the exact magnitude `m + lo·sign`: `2^(e − 52)` for the
/// binade of the exact value, `2^-1074` below `f64::MIN_POSITIVE`.
pub fn ulp_at_f64(m: f64, lo: f64, negative: bool) -> f64 {
    if m < f64::MIN_POSITIVE {
        return f64::from_bits(1);
    }
    let e = ((m.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    // m is a power of two and the exact value is just below it: the lower binade.
    let below = if negative { lo > 0.0 } else { lo < 0.0 };
    let e = if m.to_bits() & 0x000f_ffff_ffff_ffff == 0 && below {
        e - 1
    } else {
        e
    };
    pow2(e - 52)
}

/// `2^k` exactly, for `k` in `[-1074, 1023]`.
pub fn pow2(k: i32) -> f64 {
    if k >= -1022 {
        f64::from_bits(((k + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (k + 1074).max(0))
    }
}

/// The error of `y` against the exact value `exact`, in ulp of `f32` at `exact` (see
/// [`max_ulp`]). Equal values (two NaNs, two equal infinities) give 0; a NaN
/// against a number gives `f64::INFINITY`. An infinite `y` counts as `±2^128` (where `f32`
/// rounding puts it): exact for an exact value beyond `2^128`, and a large error for an
/// overflow that should not happen.
pub fn ulp_error(y: f32, exact: f64) -> f64 {
    if y.is_nan() || exact.is_nan() {
        return if y.is_nan() && exact.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let mut y = f64::from(y);
    if y == exact {
        return 0.0;
    }
    if exact.is_infinite() {
        return f64::INFINITY;
    }
    if y.is_infinite() {
        let limit = 2f64.powi(128);
        if y.signum() == exact.signum() && exact.abs() >= limit {
            return 0.0;
        }
        y = y.signum() * limit;
    }
    (y - exact).abs() / ulp_at(exact.abs().min(f64::from(f32::MAX)))
}

/// The spacing of `f32` numbers at magnitude `m` (an `f64`), `2^-149` for subnormals.
pub fn ulp_at(m: f64) -> f64 {
    if m < f64::from(f32::MIN_POSITIVE) {
        return 2f64.powi(-149);
    }
    // The exponent of m, from its bits (exact, unlike log2).
    let e = ((m.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    2f64.powi(e - 23)
}
