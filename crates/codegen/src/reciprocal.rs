//! `f32` division by a constant as a product and a fused multiply-add, where that gives the
//! correctly rounded quotient: a `vdivps` takes several cycles a vector against a fraction
//! of one for a product, and exporters divide by constants (HardSigmoid's `x / 6`, GELU's
//! `x / √2`, images' `x / 255`). The result is the division's, bit for bit, so no reference
//! changes.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use multiversion::multiversion;

/// `x / c` for a constant `c` as `fma(x, hi, x · lo)` (two roundings, one of them fused),
/// the method of Brisebarre, Muller and Raina ("Accelerating correctly rounded
/// floating-point division when the divisor is known in advance", IEEE Transactions on
/// Computers 53(8), 2004): `hi + lo` approximates `1 / c` to about 48 bits, and for most
/// divisors the result is `x / c` correctly rounded for every `x`. Which divisors, this
/// module does not derive from the paper's conditions: it checks every significand of one
/// binade of dividends ([`ExactReciprocal::of`]).
///
/// One binade stands for all of them because each operation scales exactly by a power of
/// two while its operands, its result and the product `x · lo` are normal. So the method is
/// exact for every `x` but those with `0 < |x| < tiny`, where `x · lo` or the quotient is
/// subnormal; [`ExactReciprocal::for_dividends`] gives the form only for dividends that
/// cannot lie there. The rest comes out as from the division: `±0`, infinities (`lo` has
/// `hi`'s sign, so `x · hi` and `x · lo` never cancel to NaN), NaN (propagated, quieted,
/// from `x`), and overflow (the unbounded-exponent results agree, so both overflow alike).
///
/// A power of two `c` whose reciprocal is a float needs no `lo` and no test: `x · (1/c)` is
/// `x / c` for every `x`, subnormals included (`lo = 0`, `tiny = 0`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExactReciprocal {
    /// `1 / c` rounded to `f32` (towards zero where the nearest would give `lo` the other
    /// sign).
    pub hi: f32,
    /// `1 / c − hi` rounded to `f32`: zero, or of `hi`'s sign.
    pub lo: f32,
    /// Dividends with `0 < |x| < tiny` need the division (`0` when none do).
    pub tiny: f32,
}

/// The smallest positive normal `f32`, `2^-126`.
const MIN_NORMAL: f64 = f32::MIN_POSITIVE as f64;
/// The largest `tiny` accepted: below it lie only values no data holds (`2^-60`), so the
/// division is never the common path.
const TINY_LIMIT: f64 = 1.0 / (1u64 << 60) as f64;

impl ExactReciprocal {
    /// The form of dividing by `c` that needs no division for any dividend that is zero,
    /// infinite, NaN or of magnitude at least `least` ([`crate::magnitude::least_magnitudes`]),
    /// or whose quotients below `absorbed` no use can tell apart
    /// ([`crate::magnitude::absorbed_below`]): a power of two's for any bounds; otherwise
    /// [`ExactReciprocal::of`]`(c)` if its `tiny` is at most `least`, or if every quotient
    /// of a dividend below `tiny`, exact or not, lies below `absorbed` (`c` is not checked
    /// when both bounds are 0).
    pub fn for_dividends(c: f32, least: f64, absorbed: f64) -> Option<ExactReciprocal> {
        if !power_of_two(c) && least <= 0.0 && absorbed <= 0.0 {
            return None;
        }
        ExactReciprocal::of(c)
            .filter(|r| r.lo == 0.0 || f64::from(r.tiny) <= least || r.tiny_quotients(c) < absorbed)
    }

    /// A bound on `|x / c|` and on the form's result for `0 < |x| < tiny`: the quotient is
    /// below `tiny / |c|`, and the form's two roundings (the second possibly subnormal) move
    /// it by less than that again plus the smallest subnormal.
    fn tiny_quotients(&self, c: f32) -> f64 {
        2.0 * f64::from(self.tiny) / f64::from(c).abs() + f64::from(f32::from_bits(1))
    }

    /// The exact product form of dividing by `c`, or `None` when `c` has none: zero,
    /// infinite, NaN or subnormal, a power of two whose reciprocal is not a float, or a
    /// divisor for which neither rounding of `1 / c` gives the correctly rounded quotient of
    /// every significand. Each `c` is checked once per process (2^23 dividends, a few
    /// milliseconds) and remembered.
    pub fn of(c: f32) -> Option<ExactReciprocal> {
        static KNOWN: OnceLock<Mutex<HashMap<u32, Option<ExactReciprocal>>>> = OnceLock::new();
        let known = KNOWN.get_or_init(|| Mutex::new(HashMap::new()));
        if let Some(&r) = known.lock().ok()?.get(&c.to_bits()) {
            return r;
        }
        let r = find(c);
        known.lock().ok()?.insert(c.to_bits(), r);
        r
    }
}

/// Whether the normal `c` is `±2^e` (no significand bits).
fn power_of_two(c: f32) -> bool {
    c.is_normal() && c.to_bits() & 0x007F_FFFF == 0
}

/// [`ExactReciprocal::of`], uncached.
fn find(c: f32) -> Option<ExactReciprocal> {
    if !c.is_normal() {
        return None;
    }
    let exact = 1.0 / f64::from(c);
    if power_of_two(c) {
        let hi = exact as f32;
        return (f64::from(hi) == exact).then_some(ExactReciprocal {
            hi,
            lo: 0.0,
            tiny: 0.0,
        });
    }
    let nearest = exact as f32;
    // Towards zero by one unit in the last place: `1 / c` is not a float here, so the
    // true value lies strictly between this and `nearest`, or `nearest` is below it.
    let smaller = f32::from_bits(nearest.to_bits() - 1);
    [nearest, smaller].into_iter().find_map(|hi| {
        let lo = (exact - f64::from(hi)) as f32;
        if lo == 0.0 || lo.is_sign_negative() != hi.is_sign_negative() || !hi.is_normal() {
            return None;
        }
        // `x · lo` and the quotient normal: |x| ≥ 2^-126 / |lo| and ≥ 2^-126 · |c|, with a
        // factor of two to spare.
        let tiny = 2.0 * (MIN_NORMAL / f64::from(lo.abs())).max(MIN_NORMAL * f64::from(c.abs()));
        if tiny > TINY_LIMIT || wrong_quotients(c, hi, lo) != 0 {
            return None;
        }
        Some(ExactReciprocal {
            hi,
            lo,
            tiny: tiny as f32,
        })
    })
}

/// How many `x` in `[1, 2)` have `fma(x, hi, x · lo) ≠ x / c` (bits compared).
#[multiversion(targets("x86_64+avx512f+avx512vl+fma", "x86_64+avx2+fma"))]
fn wrong_quotients(c: f32, hi: f32, lo: f32) -> u32 {
    let mut wrong = 0u32;
    for m in 0..1u32 << 23 {
        let x = f32::from_bits(0x3F80_0000 | m);
        let q = x.mul_add(hi, x * lo);
        wrong += u32::from(q.to_bits() != (x / c).to_bits());
    }
    wrong
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dividends across the range: every binade's edges and middles, subnormals, zeros,
    /// infinities, NaN, and a pseudo-random sample.
    fn dividends() -> Vec<f32> {
        let mut xs = graphlift_testkit::F32_SPECIALS.to_vec();
        xs.extend([3e-39, 7.0e-30, 1.0e-38]);
        for e in 1..255u32 {
            for m in [0, 1, 0x2A_AAAA, 0x55_5555, 0x7F_FFFF] {
                xs.push(f32::from_bits(e << 23 | m));
            }
        }
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            xs.push(f32::from_bits(s as u32));
        }
        let negated: Vec<f32> = xs.iter().map(|x| -x).collect();
        xs.extend(negated);
        xs
    }

    /// The quotient as the assembled code computes it: a product by a power of two's
    /// reciprocal, the form, and the division for `0 < |x| < tiny` (where
    /// [`ExactReciprocal::for_dividends`] keeps it).
    fn quotient(x: f32, r: &ExactReciprocal, c: f32) -> f32 {
        if r.lo == 0.0 {
            x * r.hi
        } else if x != 0.0 && x.abs() < r.tiny {
            x / c
        } else {
            x.mul_add(r.hi, x * r.lo)
        }
    }

    #[test]
    fn the_form_is_the_division_for_every_kind_of_dividend() {
        let divisors = [
            6.0f32,
            -6.0,
            3.0,
            255.0,
            std::f32::consts::SQRT_2,
            0.3,
            7.0,
            1e-30,
            0.125,
        ];
        let xs = dividends();
        for c in divisors {
            let r = ExactReciprocal::of(c).unwrap_or_else(|| panic!("{c} has no form"));
            for &x in &xs {
                let (got, want) = (quotient(x, &r, c), x / c);
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{x:e} / {c}: {got:e}, want {want:e}"
                );
            }
        }
    }

    #[test]
    fn the_test_for_small_dividends_stays_below_data() {
        for c in [6.0f32, 3.0, 255.0, std::f32::consts::SQRT_2] {
            let r = ExactReciprocal::of(c).unwrap_or_else(|| panic!("{c} has no form"));
            assert!(r.lo != 0.0 && r.tiny > 0.0 && f64::from(r.tiny) <= TINY_LIMIT);
        }
        // `x · lo` subnormal up to |x| of about 1: the division would be the common path.
        assert_eq!(ExactReciprocal::of(3e30), None);
    }

    #[test]
    fn powers_of_two_multiply_without_a_test() {
        let r = ExactReciprocal::of(-8.0).unwrap();
        assert_eq!((r.hi, r.lo, r.tiny), (-0.125, 0.0, 0.0));
        assert_eq!(
            ExactReciprocal::of(2f32.powi(127)).map(|r| r.hi),
            Some(2f32.powi(-127))
        );
        assert_eq!(
            ExactReciprocal::of(2f32.powi(-126)).map(|r| r.hi),
            Some(2f32.powi(126))
        );
    }

    #[test]
    fn dividends_below_tiny_keep_the_division() {
        let r = ExactReciprocal::of(6.0).unwrap();
        let least = f64::from(r.tiny);
        assert_eq!(ExactReciprocal::for_dividends(6.0, least, 0.0), Some(r));
        assert_eq!(ExactReciprocal::for_dividends(6.0, least * 0.5, 0.0), None);
        assert_eq!(ExactReciprocal::for_dividends(6.0, 0.0, 0.0), None);
        assert!(ExactReciprocal::for_dividends(0.25, 0.0, 0.0).is_some());
        // Quotients added to 0.5 (`x / 6 + 0.5`): those below 2^-26 leave 0.5.
        let absorbed = 2f64.powi(-26);
        assert_eq!(ExactReciprocal::for_dividends(6.0, 0.0, absorbed), Some(r));
        let just_under = r.tiny_quotients(6.0);
        assert_eq!(ExactReciprocal::for_dividends(6.0, 0.0, just_under), None);
    }

    /// Where the form is inexact (dividends below `tiny`), its results and the quotients
    /// stay below the bound `for_dividends` compares with what their uses absorb.
    #[test]
    fn inexact_quotients_stay_below_their_bound() {
        for c in [
            6.0f32,
            3.0,
            -7.0,
            std::f32::consts::SQRT_2,
            255.0,
            1e-20,
            3e25,
        ] {
            let Some(r) = ExactReciprocal::of(c) else {
                continue;
            };
            let bound = r.tiny_quotients(c);
            let below = (0..1 << 16).map(|i: u32| r.tiny * (i as f32 / 65536.0));
            let subnormals = (1..1 << 12).map(f32::from_bits);
            for x in below.chain(subnormals).filter(|x| x.abs() < r.tiny) {
                for x in [x, -x] {
                    let form = x.mul_add(r.hi, x * r.lo);
                    assert!(f64::from(form.abs()) < bound, "{x} / {c}: {form}");
                    assert!(f64::from((x / c).abs()) < bound, "{x} / {c}");
                }
            }
        }
    }

    #[test]
    fn degenerate_divisors_have_none() {
        for c in [
            0.0f32,
            -0.0,
            f32::INFINITY,
            f32::NAN,
            1e-40,
            f32::MIN_POSITIVE * 0.5,
        ] {
            assert_eq!(ExactReciprocal::of(c), None, "{c}");
        }
    }
}
