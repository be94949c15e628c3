//! Vector math: `exp`, `expm1`, `log`, `log1p`, `tanh`, `sigmoid`, `erf` and `pow` for `f32`
//! and `f64`, emitted inline as polynomial approximations in Cranelift IR.
//!
//! Each function is written once per element type against the crate's lane view
//! (`codegen::lanes::Emit`) and so emits either vector code (`F32X4`, `F64X2`) or scalar
//! code (scalar loops) with the same operation sequence, lane for lane (each file holds the
//! `f32` function `emit` and the `f64` one `emit_f64`). The `f64` polynomials are Chebyshev
//! interpolants computed by `scripts/vmath_f64_fit.py` (mpmath); `f64x2 ↔ i64x2`
//! conversions, which x64 Cranelift 0.135 does not lower, are replaced by the 1.5·2^52 magic
//! add (round to integer) and integer adds into the exponent field (`2^n`); the `I64X2` ops
//! used are `iadd`, `isub`, `band`, `bor`, `ishl_imm`, `ushr_imm` and `icmp sgt` (no
//! `sshr`, `imul` or conversions). Fused multiply-adds are used inside the polynomials and
//! the error-free transformations (and only there: kernel arithmetic is never contracted).
//!
//! # Accuracy
//!
//! ## `f32`
//!
//! Error is measured in ulp of the exact result: `|y − ref| / ulp(ref)`, where `ref` is the
//! reference interpreter's `f64` value (before rounding to `f32`) and `ulp(ref)` is the
//! spacing of `f32` numbers at `|ref|` (`2^-149` in the subnormal range). A correctly
//! rounded result is within 0.5 ulp. The bounds were measured over every one of the 2^32
//! `f32` bit patterns through the kernels' own code
//! (`graphlift_codegen::accuracy`) with
//!
//! ```text
//! cargo run --release -p graphlift-cli -- accuracy            # --step K for every K-th
//! ```
//!
//! | function | bound ([`max_ulp`]) | max error, every `f32` | where | max relative error (normal results) |
//! |---|---|---|---|---|
//! | [`exp`] | 1 ulp | 0.987 ulp | `x = -59.94443` | 8.22e-8 |
//! | [`expm1`] | 2 ulp | 1.439 ulp | `x = 17.001972` (`n = 25`, the first on the `e^x − 1` path) | 1.21e-7 |
//! | [`log`] | 1 ulp | 0.835 ulp | `x = 1.4054595` | 8.13e-8 |
//! | [`log1p`] | 2 ulp | 1.437 ulp | `x = -8.940697e-8` | 1.34e-7 |
//! | [`tanh`] | 6 ulp | 5.595 ulp | `x = 5.381278`, where the Horner sums of the rational are large (2026-11-26) | 3.33e-7 |
//! | [`sigmoid`] | 1 ulp | 0.987 ulp | `x = -59.94443` (where it is `e^x`) | 8.92e-8 |
//! | [`erf`] | 2 ulp | 1.312 ulp | `x = 1.1405755`, just below the second piece (2026-11-25) | 8.76e-8 |
//!
//! (`graphlift accuracy`, 2026-11-22: 25–60 s per function on two cores.)
//!
//! Measured on x86-64 (FMA available) in the vector loop; the scalar loop runs the same
//! operation sequence and gives the same bits (`accuracy --scalar` sweeps it). No input broke a range
//! or special-value guarantee.
//!
//! ## `f64`
//!
//! Error is measured in ulp of `f64` at the exact value, against 256-bit reference
//! values (pure-Rust `astro-float`: `accuracy::reference`; the figures quoted below were first
//! measured against MPFR),
//! `2^-1074` in the subnormal range; an infinite result counts as `±2^1024`. The sample
//! (`graphlift_codegen::accuracy::f64_sample`) takes `N` evenly spaced bit patterns in every binade of
//! both signs (2 × 2047 binades, the subnormals one of them), the special values, and the
//! 64 neighbours on each side of every threshold (overflow, underflow, method switches).
//! With `N = 4096` (16.8 million inputs per function):
//!
//! ```text
//! cargo run --release -p graphlift-cli -- accuracy --f64       # --per-binade N, --scalar
//! ```
//!
//! | function | bound ([`max_ulp`]) | max error, dense sample | where | max relative error (normal results) |
//! |---|---|---|---|---|
//! | [`exp`] | 2 ulp | 0.938 ulp | `x = -658.0982137039728` | 1.45e-16 |
//! | [`expm1`] | 2 ulp | 1.002 ulp | `x = 37.36630715162815` (`n = 54`, the first on the `e^x` path) | 1.60e-16 |
//! | [`log`] | 2 ulp | 0.783 ulp | `x = 1.4142135623730947` | 1.46e-16 |
//! | [`log1p`] | 2 ulp | 1.437 ulp | `x = -1.6655678028100125e-16` | 2.50e-16 |
//! | [`tanh`] | 2 ulp | 1.010 ulp | `x = 0.5573168608487957`, just past the `E/(E + 2)` path | 2.22e-16 |
//! | [`sigmoid`] | 2 ulp | 0.938 ulp | `x = -658.0982137039728` (where it is `e^x`) | 1.41e-16 |
//! | [`erf`] | 2 ulp | 1.195 ulp | `x = 0.9903002592862957`, the top of the small-argument polynomial | 1.58e-16 |
//!
//! (`graphlift accuracy --f64`, 2026-11-22, `F64X2` loop: 7–76 s per function on two
//! cores; the scalar loop, `--scalar --per-binade 1024`, gives at most the same errors; all range and special-value guarantees held, and at `±0`, `±inf` and NaN every
//! result is the interpreter's bit for bit.) The unit tests run the same method on a thinned
//! sample (4 per binade) in both loops, and check that the `F64X2` and scalar loops give the
//! same bits. The interpreter's own `f64` functions (Rust `std`/`libm`) measure up to 0.85
//! ulp, `tanh` and `sigmoid` 1.86 ulp, on the same sample.
//!
//! ## `f32` `pow`
//!
//! [`pow`] (the lowering of `Power` on `f32`) computes `e^(y·ln|x|)` in `f64` (the `f64`
//! methods at lower polynomial degrees) and rounds once to `f32`: **bound 1 ulp**
//! ([`pow::MAX_ULP`]) against the interpreter's `f64::powf` value before rounding. Measured
//! with
//!
//! ```text
//! cargo run --release -p graphlift-cli -- accuracy --pow --step 128   # --scalar
//! ```
//!
//! over every 128th positive `f32` base and its negation, each with 32 exponents
//! (`graphlift_codegen::accuracy::POW_EXPONENTS`: `±0`, `±inf`, NaN, small integers, halves, `2^24`,
//! large and tiny ones), 1.07 billion pairs: max error **0.511 ulp** (at `x = 1.3768768`,
//! `y = 149.5`, where `|y·ln x|` is large), and every IEEE special case
//! (`graphlift_codegen::accuracy::pow_special_operands`) bit for bit as the interpreter (24 s on two
//! cores). Results (nearly) halfway between two `f32` may round the other way than the
//! interpreter's, e.g. `pow(2^-100, 1.5) = 2^-150`. Speed (the example below, `F32X4` loop):
//! 7.6 ns per element, against 10.6 ns for the per-lane `f64::powf` helper it replaces
//! (1.39×).
//!
//! ## `f64` `pow`
//!
//! [`pow`] lowers `Power` on `f64` too: it computes `ln|x|` as a double-double
//! (about 2^-66 relative), `y·ln|x|` as an exact product, and `e^(w_hi + w_lo)` carrying the
//! low part into the reduced argument: **bound 2 ulp** ([`pow::MAX_ULP_F64`]) against
//! the 256-bit reference values. Measured with
//!
//! ```text
//! cargo run --release -p graphlift-cli -- accuracy --pow --f64     # --per-binade N, --scalar
//! ```
//!
//! over the bases of the dense `f64` sample at 64 per binade (both signs, special values,
//! threshold neighbourhoods), each with 32 fixed exponents
//! (`graphlift_codegen::accuracy::POW_EXPONENTS_F64`: `±0`, `±inf`, NaN, integers of both parities,
//! halves, `2^53 − 1`, tiny and huge ones) and, from every base, the exponents `t/ln|x|` and
//! their nearest integers for 16 targets `t` of `y·ln|x|` (`graphlift_codegen::accuracy::POW_TARGETS`)
//! that put the results across the whole range, the subnormals and both sides of the
//! overflow and underflow thresholds: 17.0 million pairs, max error **1.392 ulp** (at
//! `x = 1.4142135623730943`, `y = 2045.7415679805536`, a result near `f64::MAX`: `|w|` near
//! 709 multiplies the logarithm's relative error, largest where `s` is), the scalar loop the
//! same, and every IEEE special case bit for bit as the interpreter (17 s on two cores,
//! 2026-11-24). The sample's size moves the worst case: at 4 bases per binade
//! (`accuracy --pow --f64 --per-binade 4`) the worst pair is `x ≈ 0.707106781186548`,
//! `y = -2046` (the result near `f64::MAX` again) at **1.676 ulp**, so 1.676 is the largest
//! error seen; the 2-ulp bound holds on both samples.
//!
//! ## `f64` speed
//!
//! One-op kernels over 2^16 `f64` in the `F64X2` loop, one thread, best of 200 calls, in ns
//! per element, before (per-lane calls to the reference's `std`/`libm` code) and after
//! (inline), on the 2-vCPU Zen 5 VM (`cargo run --release --example f64_math_speed`):
//!
//! | function | helpers | inline | speed-up |
//! |---|---|---|---|
//! | `exp` | 4.19 | 1.96 | 2.1× |
//! | `expm1` | 6.39 | 4.04 | 1.6× |
//! | `log` | 3.97 | 2.58 | 1.5× |
//! | `log1p` | 4.92 | 3.12 | 1.6× |
//! | `tanh` | 9.84 | 6.38 | 1.5× |
//! | `sigmoid` | 5.22 | 4.28 | 1.2× |
//! | `erf` | 11.9 | 9.98 | 1.2× |
//! | `Power` on `f32` (`F32X4` loop, [`pow`]) | 10.6 | 7.6 | 1.4× |
//! | `Power` on `f64` (`F64X2` loop, [`pow`]) | (10.2) | 17.1 | 0.6× |
//!
//! (`erf` evaluates three polynomials and an exponential on every lane, `sigmoid` an
//! exponential and a division: the `F64X2` loop has only two lanes to share that work.)
//!
//! `f64` `Power` is the one inline function slower than the scalar code it replaced: the
//! figure in brackets is a plain Rust loop of `f64::powf` (glibc's table-driven `pow`, no
//! call through a JIT helper; measured 2026-11-24 on a VM where the `F32X4` `pow` took 11.1 ns
//! and that loop 10.4, so the older rows are not comparable with it one for one). The
//! double-double logarithm needs about twice the operations of the `f64` `log`, and without
//! a gather (Cranelift 0.135 has none on 128-bit vectors) a table-driven reduction like
//! glibc's would cost a scalar load per lane per table. It keeps `Power` kernels free of
//! per-lane host calls and within a stated bound.
//!
//! ## Tests
//!
//! The unit tests sweep every 97th bit pattern against the same bounds, and check the
//! special values: NaN in gives NaN out; `exp(+inf) = +inf`, `exp(-inf) = 0`;
//! `log(±0) = -inf`, `log(x < 0) = NaN`, `log(+inf) = +inf`; `tanh` in `[-1, 1]`,
//! `sigmoid` in `[0, 1]`, `erf` in `[-1, 1]`; odd functions keep the sign of zero.

use graphlift_ir::{ElementType, UnaryOp};
pub mod erf;
pub mod exp;
pub mod expm1;
pub mod log;
pub mod log1p;
pub mod pow;
pub mod sigmoid;
pub mod tanh;
pub mod two_piece;

/// The functions with an inline approximation (for `f32` and for `f64`), in table order.
pub const FUNCTIONS: [UnaryOp; 7] = [
    UnaryOp::Exp,
    UnaryOp::Expm1,
    UnaryOp::Log,
    UnaryOp::Log1p,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Erf,
];

/// The documented maximum error of the inline lowering of `op` on element type `t`, in ulp
/// of `t` (`f32` or `f64`), or `None` if `op` is exact on `t` (or not a vector math
/// function, or `t` is not a float type).
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

/// The error of `y` against the exact value `exact`, in ulp of `f32` at `exact` (see the
/// module documentation). Equal values (two NaNs, two equal infinities) give 0; a NaN
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
