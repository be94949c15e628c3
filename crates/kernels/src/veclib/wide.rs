//! The library's AVX-512 functions (`exp`, `sigmoid`, `tanh`, `erf`, SiLU and GELU), written
//! with intrinsics for what portable code does not get from LLVM: `vscalefps` for the scaling
//! by `2^n`, a software-pipelined loop, and non-temporal stores.

/// The AVX-512 functions. Each is the lane code's ([`super::lane`]) operation sequence, one
/// intrinsic per operation, with each compare-and-select clamp as the `vmaxps`/`vminps`
/// whose NaN rule is the select's (the second operand is returned when one is NaN), so
/// results are the lane code's bit for bit. The tests check the bits against the portable
/// lane code (on a sample and at every length in every run; over every `f32` in an ignored
/// test), and `tests/veclib.rs` the library's against the inline code's.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use crate::vmath::exp::{HI, LN2_HI, LN2_LO, LO, LOG2E, MAGIC, Q};
    use crate::vmath::{erf, tanh};

    /// `e^x`'s first stage (the lane code's `exp_parts` up to its polynomial; with `NEG`,
    /// `e^-x`'s, without the negation): the argument clamped and reduced, `(n, r)` with
    /// `x = n·ln2 + r` (`n` as a float). With `NEG` the clamps of `v = -x` to `[LO, HI]`
    /// become clamps of `x` to `[-HI, -LO]` (the same selects, NaN included), and the two
    /// operations that read `v` fold its sign (`fnmadd`, `fmsub`), exact rewrites of one
    /// rounding each.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn exp_reduce<const NEG: bool>(x: __m512) -> (__m512, __m512) {
        let magic = _mm512_set1_ps(MAGIC);
        let log2e = _mm512_set1_ps(LOG2E);
        let neg_ln2_hi = _mm512_set1_ps(-LN2_HI);
        let (nf, r) = if NEG {
            // w = -v: v < LO is w > -LO, v > HI is w < -HI.
            let w = _mm512_min_ps(_mm512_set1_ps(-LO), x);
            let w = _mm512_max_ps(_mm512_set1_ps(-HI), w);
            let t = _mm512_fnmadd_ps(w, log2e, magic);
            let nf = _mm512_sub_ps(t, magic);
            (nf, _mm512_fmsub_ps(nf, neg_ln2_hi, w))
        } else {
            let x = _mm512_max_ps(_mm512_set1_ps(LO), x);
            let x = _mm512_min_ps(_mm512_set1_ps(HI), x);
            let t = _mm512_fmadd_ps(x, log2e, magic);
            let nf = _mm512_sub_ps(t, magic);
            (nf, _mm512_fmadd_ps(nf, neg_ln2_hi, x))
        };
        (nf, _mm512_fmadd_ps(nf, _mm512_set1_ps(-LN2_LO), r))
    }

    /// `e^x`'s second stage: `e^r` as `p + p_lo` scaled by `2^n`, i.e. `e^x` as `hi + lo`.
    ///
    /// The portable lane code scales `e^r` by `2^n` as `p·2^(n>>1)·2^(n−(n>>1))`: two integer
    /// shifts, adds and multiplies, so that `n` down to `-150` (subnormal results) and up to
    /// `128` (overflow) stay exact. `vscalefps` computes `p·2^n` with one rounding, and
    /// `p·2^(n>>1)` is always exact (`p` in `[0.7, 1.5)`, `|n>>1| ≤ 75`), so the two give the
    /// same bits for every `p` and `n`, including the rounding into the subnormals and the
    /// overflow to `+inf` (the low part `p_lo·2^n` likewise: `p_lo·2^(n>>1)` stays normal).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn exp_finish(nf: __m512, r: __m512) -> (__m512, __m512) {
        let y = _mm512_fmadd_ps(_mm512_mul_ps(r, r), horner(r, &Q), r);
        let (p, p_lo) = fast_two_sum(_mm512_set1_ps(1.0), y);
        (_mm512_scalef_ps(p, nf), _mm512_scalef_ps(p_lo, nf))
    }

    /// `c[0] + x·(c[1] + x·(…))` by fused multiply-adds, from the last coefficient down (the
    /// lane code's `horner`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn horner(x: __m512, c: &[f32]) -> __m512 {
        let Some((&last, rest)) = c.split_last() else {
            return _mm512_setzero_ps();
        };
        let mut acc = _mm512_set1_ps(last);
        for &k in rest.iter().rev() {
            acc = _mm512_fmadd_ps(acc, x, _mm512_set1_ps(k));
        }
        acc
    }

    /// The monic `x^n + c[n-1]·x^(n-1) + … + c[0]` (`n = c.len()`): an addition, then fused
    /// multiply-adds (the lane code's `horner_monic`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn horner_monic(x: __m512, c: &[f32]) -> __m512 {
        let Some((&last, rest)) = c.split_last() else {
            return _mm512_set1_ps(1.0);
        };
        let mut acc = _mm512_add_ps(x, _mm512_set1_ps(last));
        for &k in rest.iter().rev() {
            acc = _mm512_fmadd_ps(acc, x, _mm512_set1_ps(k));
        }
        acc
    }

    /// Fast2Sum, as the lane code's.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn fast_two_sum(a: __m512, b: __m512) -> (__m512, __m512) {
        let s = _mm512_add_ps(a, b);
        let b_in_s = _mm512_sub_ps(s, a);
        (s, _mm512_sub_ps(b, b_in_s))
    }

    /// `|x|` (the sign bit cleared, as Rust's `abs`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn abs(x: __m512) -> __m512 {
        _mm512_castsi512_ps(_mm512_and_si512(
            _mm512_castps_si512(x),
            _mm512_set1_epi32(i32::MAX),
        ))
    }

    /// `-x` (a sign flip, as Rust's `-x`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn neg(x: __m512) -> __m512 {
        _mm512_castsi512_ps(_mm512_xor_si512(
            _mm512_castps_si512(x),
            _mm512_set1_epi32(i32::MIN),
        ))
    }

    /// `sigmoid`'s first stage: `(x, n, r)`, the reduction of `e^-|x|` ([`exp_reduce`]).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sigmoid_head(x: __m512) -> (__m512, (__m512, __m512)) {
        (x, exp_reduce::<true>(abs(x)))
    }

    /// `1 / (1 + e^-x)` (the lane code's `sigmoid`) from [`sigmoid_head`]'s state.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sigmoid_tail((x, (nf, r)): (__m512, (__m512, __m512))) -> __m512 {
        let (eh, el) = exp_finish(nf, r);
        let one = _mm512_set1_ps(1.0);
        let (d, d_lo) = fast_two_sum(one, eh);
        let d_lo = _mm512_add_ps(d_lo, el);
        let non_negative = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, _mm512_setzero_ps());
        let num = _mm512_mask_blend_ps(non_negative, eh, one);
        let num_lo = _mm512_mask_blend_ps(non_negative, el, _mm512_setzero_ps());
        let q = _mm512_div_ps(num, d);
        let residual = _mm512_fmadd_ps(neg(q), d, num);
        let extra = _mm512_fmadd_ps(neg(q), d_lo, num_lo);
        _mm512_add_ps(q, _mm512_div_ps(_mm512_add_ps(residual, extra), d))
    }

    /// `tanh`'s first stage (the lane code's `tanh` up to its polynomials): `x` clamped to
    /// `[-clamp, clamp]` (the selects as `vminps`/`vmaxps`, NaN kept) and its square.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn tanh_head(x: __m512) -> (__m512, __m512) {
        let xc = _mm512_min_ps(_mm512_set1_ps(tanh::CLAMP), x);
        let xc = _mm512_max_ps(_mm512_set1_ps(-tanh::CLAMP), xc);
        (xc, _mm512_mul_ps(xc, xc))
    }

    /// `tanh`'s second stage: `x_c·P(t)/Q(t)` from [`tanh_head`]'s `(x_c, t)` (`P` monic).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn tanh_tail(xc: __m512, t: __m512) -> __m512 {
        let p = horner_monic(t, &tanh::P);
        _mm512_div_ps(_mm512_mul_ps(xc, p), horner(t, &tanh::Q))
    }

    /// GELU-tanh's first stage (the form's operations up to `tanh`'s polynomials):
    /// `(x_c, t, x·c0)` for `inner = (x + x·x·x·c1)·c2`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn gelu_tanh_head(x: __m512, c: &[__m512; 4]) -> (__m512, __m512, __m512) {
        let cube = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
        let inner = _mm512_mul_ps(_mm512_add_ps(x, _mm512_mul_ps(cube, c[1])), c[2]);
        let (xc, t) = tanh_head(inner);
        (xc, t, _mm512_mul_ps(x, c[0]))
    }

    /// GELU-tanh's second stage: `(x·c0)·(tanh(inner) + c3)`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn gelu_tanh_tail((xc, t, half): (__m512, __m512, __m512), c: &[__m512; 4]) -> __m512 {
        _mm512_mul_ps(half, _mm512_add_ps(tanh_tail(xc, t), c[3]))
    }

    /// `erf`'s first stage (the lane code's `two_piece` up to its polynomials): `(x, a, a²)`
    /// for `a = min(|x|, clamp)` (the select as `vminps`, NaN kept).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn erf_head(x: __m512) -> (__m512, __m512, __m512) {
        let a = _mm512_min_ps(_mm512_set1_ps(erf::FORM.clamp), abs(x));
        (x, a, _mm512_mul_ps(a, a))
    }

    /// `erf`'s second stage: `a + a·R(a²)` below the split, `1 − G(a − mid)⁴` above it, with
    /// the sign of `x` (`vpternlogd` as a bit select: `x`'s sign bit, the rest of `y`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn erf_tail((x, a, t): (__m512, __m512, __m512)) -> __m512 {
        let small = _mm512_fmadd_ps(a, horner(t, &erf::R), a);
        let g = horner(_mm512_sub_ps(a, _mm512_set1_ps(erf::FORM.mid)), erf::FORM.g);
        let g2 = _mm512_mul_ps(g, g);
        let large = _mm512_fnmadd_ps(g2, g2, _mm512_set1_ps(1.0));
        let below = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, _mm512_set1_ps(erf::FORM.split));
        let y = _mm512_mask_blend_ps(below, large, small);
        _mm512_castsi512_ps(_mm512_ternarylogic_epi32::<0xCA>(
            _mm512_set1_epi32(i32::MIN),
            _mm512_castps_si512(x),
            _mm512_castps_si512(y),
        ))
    }

    /// Vectors per block of [`map16_pipelined!`]'s pipeline (4 keeps a strip of 128 elements
    /// at two blocks).
    const W: usize = 4;

    /// Maps every whole vector of sixteen elements through `head` then `tail`, as a
    /// two-stage software pipeline over blocks of [`W`] vectors: vector by vector, each trip
    /// loads the next block's vector and runs its first stage, then finishes the current
    /// block's vector with the second stage and stores it (with `NT`, non-temporally: then
    /// `dst` must start on a 64-byte line, or nothing is done). So the operations an
    /// out-of-order core sees together are independent and its scheduler is not filled with
    /// one vector's long chain of dependent operations (GELU-tanh: a division and two Horner
    /// chains). The vectors after the last whole block go through both stages one at a time.
    /// Returns how many elements it did.
    ///
    /// The stages: for `e^x`, the reduction, then the polynomial and the scaling; for `tanh`,
    /// the clamp and square, then the rational; for `erf`, the clamp and square, then both
    /// pieces, the select and the sign.
    macro_rules! map16_pipelined {
        ($src:expr, $dst:expr, |$x:ident| $head:expr, |$h:ident| $tail:expr) => {{
            let (src, dst): (&[f32], &mut [f32]) = ($src, $dst);
            let n = src.len().min(dst.len()) / 16 * 16;
            let blocks = n / (16 * W);
            let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
            // SAFETY (every load and store below): element offsets `i..i + 16` with
            // `i + 16 <= n`, within both slices; the accesses are unaligned ones.
            macro_rules! head_of {
                ($i:expr) => {{
                    let $x = unsafe { _mm512_loadu_ps(s.add($i)) };
                    $head
                }};
            }
            macro_rules! finish {
                ($i:expr, $state:expr) => {{
                    let $h = $state;
                    let y = $tail;
                    if NT {
                        // `d` is 64-byte aligned (checked below) and `i` a multiple of 16.
                        unsafe { _mm512_stream_ps(d.add($i), y) };
                    } else {
                        unsafe { _mm512_storeu_ps(d.add($i), y) };
                    }
                }};
            }
            if NT && !(d as usize).is_multiple_of(64) {
                return 0;
            }
            if blocks > 0 {
                let mut cur: [_; W] = std::array::from_fn(|j| head_of!(16 * j));
                for b in 1..blocks {
                    let i = 16 * W * b;
                    for (j, state) in cur.iter_mut().enumerate() {
                        let next = head_of!(i + 16 * j);
                        finish!(i - 16 * W + 16 * j, *state);
                        *state = next;
                    }
                }
                for (j, state) in cur.into_iter().enumerate() {
                    finish!(16 * W * (blocks - 1) + 16 * j, state);
                }
            }
            for i in (16 * W * blocks..n).step_by(16) {
                finish!(i, head_of!(i));
            }
            n
        }};
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn exp<const NT: bool>(src: &[f32], dst: &mut [f32]) -> usize {
        map16_pipelined!(src, dst, |x| exp_reduce::<false>(x), |h| exp_finish(
            h.0, h.1
        )
        .0)
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn sigmoid_map<const NT: bool>(src: &[f32], dst: &mut [f32]) -> usize {
        map16_pipelined!(src, dst, |x| sigmoid_head(x), |h| sigmoid_tail(h))
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn silu<const NT: bool>(src: &[f32], dst: &mut [f32]) -> usize {
        map16_pipelined!(src, dst, |x| sigmoid_head(x), |h| _mm512_mul_ps(
            h.0,
            sigmoid_tail(h)
        ))
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn tanh<const NT: bool>(src: &[f32], dst: &mut [f32]) -> usize {
        map16_pipelined!(src, dst, |x| tanh_head(x), |h| tanh_tail(h.0, h.1))
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn gelu_tanh<const NT: bool>(src: &[f32], dst: &mut [f32], c: &[f32; 4]) -> usize {
        let c = c.map(|c| _mm512_set1_ps(c));
        map16_pipelined!(src, dst, |x| gelu_tanh_head(x, &c), |h| gelu_tanh_tail(
            h, &c
        ))
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn erf<const NT: bool>(src: &[f32], dst: &mut [f32]) -> usize {
        map16_pipelined!(src, dst, |x| erf_head(x), |h| erf_tail(h))
    }

    /// GELU, `erf` form: `(x·c0)·(erf(x·c1) + c2)`; the first stage keeps `x·c0`.
    #[target_feature(enable = "avx512f")]
    pub(super) fn gelu_erf<const NT: bool>(src: &[f32], dst: &mut [f32], c: &[f32; 4]) -> usize {
        let c = c.map(|c| _mm512_set1_ps(c));
        map16_pipelined!(
            src,
            dst,
            |x| (_mm512_mul_ps(x, c[0]), erf_head(_mm512_mul_ps(x, c[1]))),
            |h| _mm512_mul_ps(h.0, _mm512_add_ps(erf_tail(h.1), c[2]))
        )
    }

    /// GELU, `erf` form with a division: `(x·(erf(x / c0) + c1))·c2`.
    #[target_feature(enable = "avx512f")]
    pub(super) fn gelu_erf_divide<const NT: bool>(
        src: &[f32],
        dst: &mut [f32],
        c: &[f32; 4],
    ) -> usize {
        let c = c.map(|c| _mm512_set1_ps(c));
        map16_pipelined!(src, dst, |x| (x, erf_head(_mm512_div_ps(x, c[0]))), |h| {
            _mm512_mul_ps(_mm512_mul_ps(h.0, _mm512_add_ps(erf_tail(h.1), c[1])), c[2])
        })
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn silu_exp<const NT: bool>(src: &[f32], dst: &mut [f32], c0: f32) -> usize {
        let c0 = _mm512_set1_ps(c0);
        map16_pipelined!(src, dst, |x| (x, exp_reduce::<true>(x)), |h| {
            let (x, (nf, r)) = h;
            _mm512_div_ps(x, _mm512_add_ps(exp_finish(nf, r).0, c0))
        })
    }
}

/// Whether the host runs this module's code.
pub(super) fn host_has_avx512() -> bool {
    crate::target::CpuFeatures::host().has_avx512_library()
}

/// Runs `f` on a host with AVX-512, or returns 0.
macro_rules! on_avx512 {
    ($call:expr) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if host_has_avx512() {
                // SAFETY: the host has AVX-512F, the only feature the function enables.
                unsafe { $call }
            } else {
                0
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            0
        }
    }};
}

/// Defines `$name::<NT>(src, dst, c)`, the library's entry to an AVX-512 function: `$call`
/// (the function of [`x86`], with the form's parameters `c` as it takes them) on a host with
/// AVX-512, nothing elsewhere; returns how many elements it did (the whole sixteen-element
/// vectors of the strip, 0 without AVX-512), and the caller finishes the tail with the
/// portable code.
///
/// With `NT` the function writes with `vmovntps` (whole 64-byte lines, no read of the line
/// first: [`crate::stream`]); its caller starts it at a line boundary of the output and
/// fences. A kernel whose output is far larger than the cache calls these entries for a call
/// that writes an output (`codegen::strip`): GELU-tanh at 2^24 elements on one thread then
/// moves 8 bytes per element instead of 12.
macro_rules! avx512_entry {
    ($(#[$doc:meta])* $name:ident, |$src:ident, $dst:ident, $c:pat_param| $call:expr) => {
        $(#[$doc])*
        pub(super) fn $name<const NT: bool>(
            $src: &[f32],
            $dst: &mut [f32],
            $c: &[f32; super::MAX_PARAMS],
        ) -> usize {
            on_avx512!($call)
        }
    };
}

avx512_entry!(
    /// `dst[i] = e^src[i]`.
    exp, |src, dst, _| x86::exp::<NT>(src, dst)
);
avx512_entry!(
    /// `dst[i] = sigmoid(src[i])`.
    sigmoid, |src, dst, _| x86::sigmoid_map::<NT>(src, dst)
);
avx512_entry!(
    /// `dst[i] = tanh(src[i])`.
    tanh, |src, dst, _| x86::tanh::<NT>(src, dst)
);
avx512_entry!(
    /// `dst[i] = erf(src[i])`.
    erf, |src, dst, _| x86::erf::<NT>(src, dst)
);
avx512_entry!(
    /// GELU-tanh `(x·c0)·(tanh((x + x·x·x·c1)·c2) + c3)`.
    gelu_tanh, |src, dst, c| x86::gelu_tanh::<NT>(src, dst, c)
);
avx512_entry!(
    /// GELU-erf `(x·c0)·(erf(x·c1) + c2)`.
    gelu_erf, |src, dst, c| x86::gelu_erf::<NT>(src, dst, c)
);
avx512_entry!(
    /// GELU-erf with a division `(x·(erf(x / c0) + c1))·c2`.
    gelu_erf_divide, |src, dst, c| x86::gelu_erf_divide::<NT>(src, dst, c)
);
avx512_entry!(
    /// SiLU `x·sigmoid(x)`.
    silu, |src, dst, _| x86::silu::<NT>(src, dst)
);
avx512_entry!(
    /// SiLU `x / (e^-x + c0)`.
    silu_exp, |src, dst, c| x86::silu_exp::<NT>(src, dst, c[0])
);

#[cfg(test)]
mod tests;
