//! High-precision references for the `f64` accuracy method: each function at [`PRECISION`]
//! bits with the pure-Rust `astro-float`, so an `f64` result's error is taken against a value
//! whose own error is far below any `f64` ulp.

use std::cell::RefCell;

use astro_float::{BigFloat, Consts, RoundingMode};
use graphlift_ir::UnaryOp;

/// Working precision of a reference value, in bits.
pub const PRECISION: usize = 256;

const RM: RoundingMode = RoundingMode::ToEven;

/// Below this magnitude `expm1` and `log1p` take their two-term series: the third term is
/// under `2^-256` of the result.
const TINY: f64 = f64::from_bits(0x37f0_0000_0000_0000); // 2^-128

/// Extra bits for `expm1` and `log1p` above [`TINY`], where `e^x − 1` and `1 + x` cancel at
/// most 128 bits.
const CANCELLATION_BITS: usize = 160;

/// Beyond this magnitude `erf(x)` is `±1` to more than [`PRECISION`] bits
/// (`erfc(16) < 2^-370`).
const ERF_SATURATED: f64 = 16.0;

thread_local! {
    // The library's cache of constants (π, ln 2) for the calls on this thread. Creating it
    // fails only when memory cannot be allocated.
    static CONSTS: RefCell<Consts> =
        RefCell::new(Consts::new().expect("allocating astro-float's constant cache"));
}

fn with_consts<T>(f: impl FnOnce(&mut Consts) -> T) -> T {
    CONSTS.with(|c| f(&mut c.borrow_mut()))
}

/// `x` exactly, at precision `p`.
fn big(x: f64, p: usize) -> BigFloat {
    if x != 0.0 && x.abs() < f64::MIN_POSITIVE {
        // astro-float 0.9.6 reads an f64 subnormal as half its value: scale it into the
        // normal range first, then back.
        let mut b = BigFloat::from_f64(x * 2f64.powi(64), p);
        if let Some(e) = b.exponent() {
            b.set_exponent(e - 64);
        }
        return b;
    }
    BigFloat::from_f64(x, p)
}

fn nan() -> BigFloat {
    BigFloat::nan(None)
}

/// `2^e` exactly.
fn pow2(e: i32) -> BigFloat {
    // astro-float keeps a mantissa m in [0.5, 1): 1.0 is 0.5 · 2^1.
    let mut one = big(1.0, 64);
    one.set_exponent(e + 1);
    one
}

/// `op(x)` at [`PRECISION`] bits (`sigmoid` as `1/(1 + e^-x)`); ops other than the vector
/// math functions (`Exp`, `Expm1`, `Log`, `Log1p`, `Tanh`, `Erf`, `Sigmoid`) give NaN.
/// Special operands (NaN, infinities, zeros, out-of-domain) are given exactly, by IEEE 754
/// and C99 Annex F.
pub fn exact(op: UnaryOp, x: f64) -> BigFloat {
    if x.is_nan() {
        return nan();
    }
    let p = PRECISION;
    with_consts(|cc| match op {
        UnaryOp::Exp => match x {
            f64::INFINITY => big(x, p),
            f64::NEG_INFINITY => big(0.0, p),
            _ => big(x, p).exp(p, RM, cc),
        },
        UnaryOp::Expm1 => match x {
            f64::INFINITY => big(x, p),
            f64::NEG_INFINITY => big(-1.0, p),
            _ if x.abs() < TINY => {
                let v = big(x, p);
                v.add(&v.mul(&v, p, RM).div(&big(2.0, p), p, RM), p, RM)
            }
            _ => {
                let wp = p + CANCELLATION_BITS;
                big(x, wp).exp(wp, RM, cc).sub(&big(1.0, wp), p, RM)
            }
        },
        UnaryOp::Log => match x {
            _ if x < 0.0 => nan(),
            0.0 => big(f64::NEG_INFINITY, p),
            f64::INFINITY => big(x, p),
            _ => big(x, p).ln(p, RM, cc),
        },
        UnaryOp::Log1p => match x {
            _ if x < -1.0 => nan(),
            -1.0 => big(f64::NEG_INFINITY, p),
            f64::INFINITY => big(x, p),
            _ if x.abs() < TINY => {
                let v = big(x, p);
                v.sub(&v.mul(&v, p, RM).div(&big(2.0, p), p, RM), p, RM)
            }
            _ => {
                let wp = p + CANCELLATION_BITS;
                big(x, wp).add(&big(1.0, wp), wp, RM).ln(p, RM, cc)
            }
        },
        UnaryOp::Tanh => match x {
            f64::INFINITY => big(1.0, p),
            f64::NEG_INFINITY => big(-1.0, p),
            _ => big(x, p).tanh(p, RM, cc),
        },
        UnaryOp::Erf => erf(x, cc),
        UnaryOp::Sigmoid => match x {
            f64::INFINITY => big(1.0, p),
            f64::NEG_INFINITY => big(0.0, p),
            _ => {
                let e = big(-x, p).exp(p, RM, cc);
                big(1.0, p).div(&e.add(&big(1.0, p), p, RM), p, RM)
            }
        },
        _ => nan(),
    })
}

/// `erf(x)` at [`PRECISION`] bits: the Maclaurin series
/// `erf(x) = 2/√π · Σ (−1)^n x^(2n+1) / (n! (2n+1))` (Abramowitz & Stegun 7.1.5), summed with
/// `log2(e) · x²` guard bits for its alternating terms of up to `e^(x²)`; `±1` past
/// [`ERF_SATURATED`].
fn erf(x: f64, cc: &mut Consts) -> BigFloat {
    if x.abs() >= ERF_SATURATED {
        return big(x.signum(), PRECISION);
    }
    if x == 0.0 {
        return big(x, PRECISION);
    }
    let guard = (x * x * std::f64::consts::LOG2_E).ceil() as usize + 64;
    let wp = PRECISION + guard;
    let v = big(x, wp);
    let x2 = v.mul(&v, wp, RM);
    let mut term = v.clone(); // x^(2n+1) / n!
    let mut sum = v;
    // Stop past the terms' peak (n ≈ x²) once a term is below 2^-wp of x; the sum's
    // cancellation down to erf(x) costs at most the guard bits.
    let stop = x.abs().log2() as i32 - wp as i32;
    for n in 1usize.. {
        term = term.mul(&x2, wp, RM).div(&big(n as f64, wp), wp, RM);
        let t = term.div(&big((2 * n + 1) as f64, wp), wp, RM);
        sum = if n % 2 == 1 {
            sum.sub(&t, wp, RM)
        } else {
            sum.add(&t, wp, RM)
        };
        if (n as f64) > x * x && t.exponent().is_none_or(|e| e < stop) {
            break;
        }
    }
    let two_over_sqrt_pi = big(2.0, wp).div(&cc.pi(wp, RM).sqrt(wp, RM), wp, RM);
    sum.mul(&two_over_sqrt_pi, PRECISION, RM)
}

/// `x^y` at [`PRECISION`] bits, with the special cases of C99 Annex F and IEEE 754 (those of
/// Rust's `f64::powf`) taken from `powf` itself: wherever either operand is NaN, infinite or
/// zero, or `x` is negative, or `x = 1`. Elsewhere `e^(y·ln x)` for `x > 0`.
pub fn exact_pow(x: f64, y: f64) -> BigFloat {
    let special = !x.is_finite() || !y.is_finite() || x == 0.0 || y == 0.0 || x == 1.0;
    if special {
        return big(x.powf(y), PRECISION);
    }
    if x < 0.0 {
        // A negative base: defined only for an integer exponent, with its sign.
        if y.fract() != 0.0 {
            return nan();
        }
        let odd = y.abs() < 2f64.powi(53) && (y % 2.0).abs() == 1.0;
        let m = exact_pow(-x, y);
        return if odd { m.neg() } else { m };
    }
    // An absolute error of y·ln x is a relative error of the result: ln x needs log2|y| bits
    // beyond the result's precision, and a margin.
    with_consts(|cc| {
        let wp = PRECISION + 64 + (y.abs().log2().max(0.0) as usize) + 12;
        let l = big(x, wp).ln(wp, RM, cc);
        l.mul(&big(y, wp), wp, RM).exp(PRECISION, RM, cc)
    })
}

/// The operands of the IEEE `pow` special cases (for `f32` operands too, converted
/// exactly): a non-finite or zero operand, `x = ±1`, or a negative `x` with a non-integer
/// `y` (results there are exact values: `1`, `±0`, `±inf`, NaN, or `±|x|^y`'s sign rule).
/// Elsewhere `pow` is an ordinary rounded value, where a result exactly halfway between two
/// representable numbers (e.g. `f32` `2^-150`, or `4097^2`) may round the other way than the
/// interpreter's (within the ulp bound).
pub fn pow_special_operands(x: f64, y: f64) -> bool {
    !x.is_finite()
        || !y.is_finite()
        || x == 0.0
        || y == 0.0
        || x.abs() == 1.0
        || (x < 0.0 && y.round() != y)
}

/// A finite, nonzero `BigFloat` rounded toward zero to `f64` (64 bits of its mantissa, then
/// `ldexp`): enough for an error measure. Zero gives 0, infinities `±∞`, NaN NaN.
fn to_f64(v: &BigFloat) -> f64 {
    if v.is_nan() {
        return f64::NAN;
    }
    if v.is_inf() {
        return if v.is_negative() {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
    }
    let Some((words, _, _, e, _)) = v.as_raw_parts() else {
        return f64::NAN;
    };
    let Some(&top) = words.last() else {
        return 0.0;
    };
    if top == 0 {
        return 0.0;
    }
    let m = top as f64 / 2f64.powi(64); // in [0.5, 1)
    let r = libm::ldexp(m, e.clamp(-2000, 2000));
    if v.is_negative() {
        -r
    } else {
        r
    }
}

/// `|y − exact|` in ulp of `f64` at `exact`: the spacing of `f64` numbers in the binade
/// of `exact` (`2^-1074` below `f64::MIN_POSITIVE`, `2^971` from `f64::MAX` up), with an
/// infinite `y` taken as `±2^1024` (so exact when `|exact| ≥ 2^1024`). NaN against NaN and
/// equal infinities give 0; NaN against a number gives `f64::INFINITY`.
pub fn ulp_error(y: f64, exact: &BigFloat) -> f64 {
    if y.is_nan() || exact.is_nan() {
        return if y.is_nan() && exact.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if exact.is_inf() {
        return if y.is_infinite() && y.is_sign_negative() == exact.is_negative() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    // exact = m·2^e with m in [0.5, 1): its binade is 2^(e − 1); |exact| ≥ 2^1024 ⇔ e ≥ 1025.
    let e = (!exact.is_zero()).then(|| exact.exponent()).flatten();
    if y.is_infinite()
        && y.is_sign_negative() == exact.is_negative()
        && e.is_some_and(|e| e >= 1025)
    {
        // Beyond 2^1024 the correctly rounded result is the infinity.
        return 0.0;
    }
    let p = PRECISION + 64;
    let yv = if y.is_infinite() {
        let mut v = pow2(1024);
        if y < 0.0 {
            v.inv_sign();
        }
        v
    } else {
        big(y, p)
    };
    let diff = yv.sub(exact, p, RM).abs();
    let ulp_exp = match e {
        None => -1074,
        Some(e) => (e - 1 - 52).clamp(-1074, 971),
    };
    to_f64(&diff.div(&pow2(ulp_exp), p, RM))
}

/// `|y − exact| / |exact|` when `exact` is a normal `f64` magnitude
/// (`f64::MIN_POSITIVE ≤ |exact| ≤ f64::MAX`) and `y` is finite, else `None`.
pub fn relative_error(y: f64, exact: &BigFloat) -> Option<f64> {
    if exact.is_nan() || exact.is_inf() || exact.is_zero() || !y.is_finite() {
        return None;
    }
    let p = PRECISION + 64;
    let a = exact.abs();
    let normal = a.cmp(&big(f64::MIN_POSITIVE, p)).is_some_and(|c| c >= 0)
        && a.cmp(&big(f64::MAX, p)).is_some_and(|c| c <= 0);
    if !normal {
        return None;
    }
    let diff = big(y, p).sub(exact, p, RM).abs();
    Some(to_f64(&diff.div(&a, p, RM)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The references agree with Rust's (correctly rounded or nearly) `f64` functions to
    /// within an ulp on ordinary arguments, and are exact on the special operands.
    #[test]
    fn references_match_libm_within_an_ulp() {
        let xs = [
            -700.5, -20.0, -3.25, -1.0, -0.3, -1e-10, 1e-300, 2e-5, 0.5, 1.0, 2.75, 9.0, 300.0,
        ];
        type Libm = fn(f64) -> f64;
        let cases: [(UnaryOp, Libm); 7] = [
            (UnaryOp::Exp, f64::exp),
            (UnaryOp::Expm1, f64::exp_m1),
            (UnaryOp::Log, f64::ln),
            (UnaryOp::Log1p, f64::ln_1p),
            (UnaryOp::Tanh, f64::tanh),
            (UnaryOp::Erf, libm::erf),
            (UnaryOp::Sigmoid, |x| 1.0 / (1.0 + (-x).exp())),
        ];
        for (op, f) in cases {
            for x in xs {
                let want = f(x);
                let err = ulp_error(want, &exact(op, x));
                let bound = if op == UnaryOp::Sigmoid { 3.0 } else { 1.0 };
                assert!(err <= bound, "{}({x:e}) = {want:e}: {err} ulp", op.name());
            }
        }
        assert_eq!(ulp_error(f64::INFINITY, &exact(UnaryOp::Exp, 710.0)), 0.0);
        assert_eq!(ulp_error(0.0, &exact(UnaryOp::Exp, -1e300)), 0.0);
        assert_eq!(ulp_error(f64::NEG_INFINITY, &exact(UnaryOp::Log, 0.0)), 0.0);
        assert_eq!(ulp_error(f64::NAN, &exact(UnaryOp::Log, -1.0)), 0.0);
        assert_eq!(ulp_error(-1.0, &exact(UnaryOp::Erf, -30.0)), 0.0);
        assert_eq!(ulp_error(5e-324, &exact(UnaryOp::Expm1, 5e-324)), 0.0);
        assert_eq!(ulp_error(1.0, &exact(UnaryOp::Exp, 0.0)), 0.0);
        // One ulp off is one ulp, in a normal binade and among subnormals.
        let one_up = f64::from_bits(1.0f64.to_bits() + 1);
        assert_eq!(ulp_error(one_up, &exact(UnaryOp::Exp, 0.0)), 1.0);
        assert_eq!(
            ulp_error(1e-310 + 5e-324, &exact(UnaryOp::Log1p, 1e-310)),
            1.0
        );
        assert_eq!(relative_error(1.0, &exact(UnaryOp::Exp, 0.0)), Some(0.0));
    }

    #[test]
    fn pow_references_match_powf() {
        for (x, y) in [
            (2.0, 10.0),
            (1.5, -3.0),
            (-2.0, 3.0),
            (-2.0, 4.0),
            (10.0, 308.0),
            (0.5, 1074.0),
            (7.0, 0.5),
        ] {
            let want = f64::powf(x, y);
            let err = ulp_error(want, &exact_pow(x, y));
            assert!(err <= 1.0, "pow({x:e}, {y:e}) = {want:e}: {err} ulp");
        }
        assert!(exact_pow(-2.0, 0.5).is_nan());
        assert_eq!(ulp_error(f64::INFINITY, &exact_pow(10.0, 400.0)), 0.0);
        // 1e-400 is 2e-77 of the smallest subnormal from 0.
        assert!(ulp_error(0.0, &exact_pow(10.0, -400.0)) < 1e-76);
    }
}
