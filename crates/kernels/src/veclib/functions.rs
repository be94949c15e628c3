//! The library's functions, written once over [`F32x`]: for one lane (`f32`, the portable
//! code and every strip's tail) and for sixteen (AVX-512, `super::wide`). Each is split into
//! a head and a tail stage, so that the AVX-512 loop can run them as a software pipeline;
//! one lane runs `tail(head(x))`.

use super::simd::F32x;
use crate::vmath::exp::{HI, LN2_HI, LN2_LO, LO, LOG2E, MAGIC, Q};
use crate::vmath::{erf, tanh};

/// `c[0] + x·(c[1] + x·(…))` by fused multiply-adds, from the last coefficient down (as
/// the inline code's `Emit::horner`).
#[inline(always)]
fn horner<V: F32x>(x: V, c: &[f32]) -> V {
    let Some((&last, rest)) = c.split_last() else {
        return x.splat(0.0);
    };
    rest.iter()
        .rev()
        .fold(x.splat(last), |acc, &k| acc.mul_add(x, x.splat(k)))
}

/// Fast2Sum: `(s, err)` with `s + err = a + b` exactly when `|a| ≥ |b|`.
#[inline(always)]
fn fast_two_sum<V: F32x>(a: V, b: V) -> (V, V) {
    let s = a.add(b);
    let b_in_s = s.sub(a);
    (s, b.sub(b_in_s))
}

/// `e^x`'s head (with `NEG`, `e^-x`'s, the negation folded in): the argument clamped to
/// `[LO, HI]` and reduced, Cody–Waite, `x = n·ln2 + r`; returns `(t, n, r)` with
/// `t = n + MAGIC`. With `NEG` the clamps of `v = -x` become clamps of `x` to `[-HI, -LO]`
/// (the same selects, NaN included) and the two operations that read `v` fold its sign
/// (`−(x·log2e) + MAGIC`, `n·(−ln2_hi) − x`), exact rewrites of one rounding each.
#[inline(always)]
pub(super) fn exp_head<V: F32x, const NEG: bool>(x: V) -> (V, V, V) {
    let magic = x.splat(MAGIC);
    let log2e = x.splat(LOG2E);
    let neg_ln2_hi = x.splat(-LN2_HI);
    let (t, nf, r) = if NEG {
        let w = x.clamp_above(-LO).clamp_below(-HI);
        let t = w.neg_mul_add(log2e, magic);
        let nf = t.sub(magic);
        (t, nf, nf.mul_sub(neg_ln2_hi, w))
    } else {
        let x = x.clamp_below(LO).clamp_above(HI);
        let t = x.mul_add(log2e, magic);
        let nf = t.sub(magic);
        (t, nf, nf.mul_add(neg_ln2_hi, x))
    };
    (t, nf, nf.mul_add(x.splat(-LN2_LO), r))
}

/// `e^x`'s tail: `e^r = 1 + r + r²·Q(r)` as the unevaluated sum `p + p_lo` (Fast2Sum),
/// scaled by `2^n`: `e^x` as `hi + lo`, `hi` rounded once.
#[inline(always)]
pub(super) fn exp_tail<V: F32x>((t, nf, r): (V, V, V)) -> (V, V) {
    let y = r.mul(r).mul_add(horner(r, &Q), r);
    let (p, p_lo) = fast_two_sum(r.splat(1.0), y);
    (p.scale_pow2(t, nf), p_lo.scale_pow2(t, nf))
}

/// `sigmoid`'s head: `x` and the head of `e^-|x|`.
#[inline(always)]
pub(super) fn sigmoid_head<V: F32x>(x: V) -> (V, (V, V, V)) {
    (x, exp_head::<V, true>(x.abs()))
}

/// `1 / (1 + e^-x)` without overflow: with `E = e^-|x|` as `E_hi + E_lo`, `1 + E` as
/// `d + d_lo` exactly, and `num = 1` (`x ≥ 0`) or `E` (`x < 0`), the quotient `q = num/d`
/// corrected once with its exact residual, times `1/d` taken as `q` or `1 − q` rather than
/// divided by `d` (the inline code, [`crate::vmath::sigmoid`], divides: its second division
/// runs beside the assembled code's other instructions, where here it held the loop up).
/// The maximum error is the inline code's (`graphlift accuracy --library sigmoid`).
#[inline(always)]
pub(super) fn sigmoid_tail<V: F32x>((x, e): (V, (V, V, V))) -> V {
    let (eh, el) = exp_tail(e);
    let one = x.splat(1.0);
    let zero = x.splat(0.0);
    let (d, d_lo) = fast_two_sum(one, eh);
    let d_lo = d_lo.add(el);
    let num = x.select_ge(zero, one, eh);
    let num_lo = x.select_ge(zero, zero, el);
    let q = num.div(d);
    let residual = q.neg_mul_add(d, num);
    let extra = q.neg_mul_add(d_lo, num_lo);
    // `1/d`: `q` itself where `num = 1`, `1 − q` (`= 1/(1 + E)`) elsewhere, each within an
    // ulp, far below what the correction needs.
    let recip = x.select_ge(zero, q, one.sub(q));
    residual.add(extra).mul_add(recip, q)
}

/// `tanh`'s head: `x_c = x` clamped to `[-CLAMP, CLAMP]` (selects: NaN kept) and `x_c²`.
#[inline(always)]
pub(super) fn tanh_head<V: F32x>(x: V) -> (V, V) {
    let xc = x.clamp_above(tanh::CLAMP).clamp_below(-tanh::CLAMP);
    (xc, xc.mul(xc))
}

/// `tanh`'s tail: the half angle `N = x_c·P(x_c²)`, `D = Q(x_c²)`, then the doubling
/// identity `(N·D + N·D) / fma(N, N, D·D)`.
#[inline(always)]
pub(super) fn tanh_tail<V: F32x>((xc, t): (V, V)) -> V {
    let n = xc.mul(horner(t, &tanh::P));
    let d = horner(t, &tanh::Q);
    let nd = n.mul(d);
    nd.add(nd).div(n.mul_add(n, d.mul(d)))
}

/// `erf`'s head: `(x, a, a²)` for `a = min(|x|, clamp)` (a select: NaN kept).
#[inline(always)]
pub(super) fn erf_head<V: F32x>(x: V) -> (V, V, V) {
    let a = x.abs().clamp_above(erf::FORM.clamp);
    (x, a, a.mul(a))
}

/// `erf`'s tail, the two-piece form: `a + a·R(a²)` below the split, `1 − G(a − mid)⁴`
/// above it, with the sign of `x` put back.
#[inline(always)]
pub(super) fn erf_tail<V: F32x>((x, a, t): (V, V, V)) -> V {
    let small = a.mul_add(horner(t, &erf::R), a);
    let g = horner(a.sub(a.splat(erf::FORM.mid)), erf::FORM.g);
    let g2 = g.mul(g);
    let large = g2.neg_mul_add(g2, a.splat(1.0));
    a.select_lt(a.splat(erf::FORM.split), small, large)
        .copysign(x)
}

/// GELU-tanh's head: `(tanh's head of inner, x·c0)` for `inner = (x + x·x·x·c1)·c2`.
#[inline(always)]
pub(super) fn gelu_tanh_head<V: F32x>(x: V, c: &[V; 4]) -> ((V, V), V) {
    let cube = x.mul(x).mul(x);
    let inner = x.add(cube.mul(c[1])).mul(c[2]);
    (tanh_head(inner), x.mul(c[0]))
}

/// GELU-tanh's tail: `(x·c0)·(tanh(inner) + c3)`.
#[inline(always)]
pub(super) fn gelu_tanh_tail<V: F32x>((t, half): ((V, V), V), c: &[V; 4]) -> V {
    half.mul(tanh_tail(t).add(c[3]))
}

/// GELU-erf's head: `(x·c0, erf's head of x·c1)`.
#[inline(always)]
pub(super) fn gelu_erf_head<V: F32x>(x: V, c: &[V; 4]) -> (V, (V, V, V)) {
    (x.mul(c[0]), erf_head(x.mul(c[1])))
}

/// GELU-erf's tail: `(x·c0)·(erf(x·c1) + c2)`.
#[inline(always)]
pub(super) fn gelu_erf_tail<V: F32x>((half, e): (V, (V, V, V)), c: &[V; 4]) -> V {
    half.mul(erf_tail(e).add(c[2]))
}

/// GELU-erf with a division, head: `(x, erf's head of x / c0)`.
#[inline(always)]
pub(super) fn gelu_erf_divide_head<V: F32x>(x: V, c: &[V; 4]) -> (V, (V, V, V)) {
    (x, erf_head(x.div(c[0])))
}

/// GELU-erf with a division, tail: `(x·(erf(x / c0) + c1))·c2`.
#[inline(always)]
pub(super) fn gelu_erf_divide_tail<V: F32x>((x, e): (V, (V, V, V)), c: &[V; 4]) -> V {
    x.mul(erf_tail(e).add(c[1])).mul(c[2])
}

/// SiLU's tail: `x·sigmoid(x)` (the head is [`sigmoid_head`]).
#[inline(always)]
pub(super) fn silu_tail<V: F32x>(h: (V, (V, V, V))) -> V {
    h.0.mul(sigmoid_tail(h))
}

/// SiLU with `exp`, head: `(x, e^-x's head)`.
#[inline(always)]
pub(super) fn silu_exp_head<V: F32x>(x: V) -> (V, (V, V, V)) {
    (x, exp_head::<V, true>(x))
}

/// Swish with a slope, head: `(x, e^−(x·c1)'s head)` (its tail is [`silu_exp_tail`]).
#[inline(always)]
pub(super) fn swish_head<V: F32x>(x: V, c1: V) -> (V, (V, V, V)) {
    (x, exp_head::<V, true>(x.mul(c1)))
}

/// SiLU with `exp`, tail: `x / (e^-x + c0)`.
#[inline(always)]
pub(super) fn silu_exp_tail<V: F32x>((x, e): (V, (V, V, V)), c0: V) -> V {
    x.div(exp_tail(e).0.add(c0))
}

/// `e^x` on one lane ([`crate::vmath::exp`]).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    exp_tail(exp_head::<f32, false>(x)).0
}

/// `1 / (1 + e^-x)` on one lane ([`crate::vmath::sigmoid`]).
#[inline(always)]
pub fn sigmoid(x: f32) -> f32 {
    sigmoid_tail(sigmoid_head(x))
}

/// `tanh(x)` on one lane ([`crate::vmath::tanh`]).
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    tanh_tail(tanh_head(x))
}

/// `erf(x)` on one lane ([`crate::vmath::erf`]).
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    erf_tail(erf_head(x))
}
