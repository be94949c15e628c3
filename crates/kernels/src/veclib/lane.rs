//! The `f32` functions of [`crate::vmath`] one element at a time, performing the inline
//! Cranelift code's IEEE operations in the same order, so results match it bit for bit and a
//! loop over a slice vectorizes to the width of its compile target.

use crate::vmath::erf;
use crate::vmath::exp::{HI, LN2_HI, LN2_LO, LO, LOG2E, MAGIC, Q};
use crate::vmath::tanh;
use crate::vmath::two_piece::TwoPiece;

/// `c ? a : b` (a select, not a branch, once vectorized).
#[inline(always)]
fn select(c: bool, a: f32, b: f32) -> f32 {
    if c {
        a
    } else {
        b
    }
}

/// `c[0] + x·(c[1] + x·(…))` by fused multiply-adds, from the last coefficient down (as
/// `Emit::horner`).
#[inline(always)]
fn horner(x: f32, c: &[f32]) -> f32 {
    let Some((&last, rest)) = c.split_last() else {
        return 0.0;
    };
    rest.iter().rev().fold(last, |acc, &k| acc.mul_add(x, k))
}

/// A monic polynomial by Horner's rule, as `graphlift_codegen::lanes`'s `horner_monic`.
#[inline(always)]
fn horner_monic(x: f32, c: &[f32]) -> f32 {
    let Some((&last, rest)) = c.split_last() else {
        return 1.0;
    };
    rest.iter()
        .rev()
        .fold(x + last, |acc, &k| acc.mul_add(x, k))
}

/// Fast2Sum: `(s, err)` with `s + err = a + b` exactly when `|a| ≥ |b|`.
#[inline(always)]
fn fast_two_sum(a: f32, b: f32) -> (f32, f32) {
    let s = a + b;
    let b_in_s = s - a;
    (s, b - b_in_s)
}

/// `2^n` for `n` in `[-126, 127]`, from exponent bits.
#[inline(always)]
fn pow2(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32) << 23)
}

/// `e^x` as `hi + lo` ([`crate::vmath::exp`]'s `emit_parts`).
#[inline(always)]
fn exp_parts(x: f32) -> (f32, f32) {
    let x = select(x < LO, LO, x);
    let x = select(x > HI, HI, x);
    // Cody–Waite reduction: x = n·ln2 + r.
    let t = x.mul_add(LOG2E, MAGIC);
    let nf = t - MAGIC;
    let n = (t.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    let r = nf.mul_add(-LN2_HI, x);
    let r = nf.mul_add(-LN2_LO, r);
    // e^r − 1 = r + r²·Q(r).
    let q = horner(r, &Q);
    let y = (r * r).mul_add(q, r);
    let (p, p_lo) = fast_two_sum(1.0, y);
    let n1 = n >> 1;
    let n2 = n.wrapping_sub(n1);
    let (s1, s2) = (pow2(n1), pow2(n2));
    (p * s1 * s2, p_lo * s1 * s2)
}

/// `e^x` ([`crate::vmath::exp`]).
///
/// Like every function here, it performs the same IEEE operations, in the same order and
/// with the same constants, as the inline Cranelift code: a fused multiply-add where that
/// emits `fma` (`f32::mul_add`), a plain operation where it emits one (Rust never contracts
/// `a * b + c`), a compare and select where it emits `fcmp` and `bitselect`, and the same
/// integer arithmetic on bit patterns (wrapping, as Cranelift's is). So each result is the
/// inline code's, bit for bit, and the accuracy bounds of [`crate::vmath`] hold unchanged;
/// `tests/veclib.rs` checks the bits against the JIT's inline code. The functions are
/// branch-free (both sides of each select are computed), so a loop that maps one of them
/// over a slice vectorizes to the width of the target it is compiled for (see [`super`]).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    exp_parts(x).0
}

/// `1 / (1 + e^-x)` ([`crate::vmath::sigmoid`]).
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    let (eh, el) = exp_parts(-x.abs());
    let (d, d_lo) = fast_two_sum(1.0, eh);
    let d_lo = d_lo + el;
    let non_negative = x >= 0.0;
    let num = select(non_negative, 1.0, eh);
    let num_lo = select(non_negative, 0.0, el);
    let q = num / d;
    let residual = (-q).mul_add(d, num);
    let extra = (-q).mul_add(d_lo, num_lo);
    q + (residual + extra) / d
}

/// The two-piece form of [`crate::vmath::two_piece`]: `small(a, a²)` below the split,
/// `1 − G(a − mid)⁴` above it, on `a = min(|x|, clamp)`, with the sign of `x` put back.
#[inline(always)]
fn two_piece(form: &TwoPiece, x: f32, small: impl FnOnce(f32, f32) -> f32) -> f32 {
    let a = x.abs();
    let a = select(a > form.clamp, form.clamp, a);
    let t = a * a;
    let small = small(a, t);
    let g = horner(a - form.mid, form.g);
    let g2 = g * g;
    let large = (-g2).mul_add(g2, 1.0);
    let y = select(a < form.split, small, large);
    copysign(y, x)
}

/// `|mag|` with the sign bit of `sign` (as `Emit::copysign`).
#[inline(always)]
fn copysign(mag: f32, sign: f32) -> f32 {
    f32::from_bits((mag.to_bits() & 0x7fff_ffff) | (sign.to_bits() & 0x8000_0000))
}

/// `tanh(x)` ([`crate::vmath::tanh`]): `x_c·P(x_c²)/Q(x_c²)` on `x_c = x` clamped to
/// `[-clamp, clamp]` (the same operations as the inline code).
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let xc = select(x > tanh::CLAMP, tanh::CLAMP, x);
    let xc = select(xc < -tanh::CLAMP, -tanh::CLAMP, xc);
    let t = xc * xc;
    (xc * horner_monic(t, &tanh::P)) / horner(t, &tanh::Q)
}

/// `erf(x)` ([`crate::vmath::erf`]).
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    two_piece(&erf::FORM, x, |a, t| {
        let r = horner(t, &erf::R);
        a.mul_add(r, a)
    })
}
