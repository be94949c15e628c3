//! AVX-512 code for the library's functions built on `e^x` (`exp`, `sigmoid`, SiLU in both
//! forms), written with intrinsics because one step has no portable spelling that LLVM
//! vectorizes to a single instruction.
//!
//! The portable lane code ([`super::lane`]) scales `e^r` by `2^n` as `p·2^(n>>1)·2^(n−(n>>1))`:
//! two integer shifts, adds and multiplies, so that `n` down to `-150` (subnormal results)
//! and up to `128` (overflow) stay exact. `vscalefps` computes `p·2^n` with one rounding, and
//! `p·2^(n>>1)` is always exact (`p` in `[0.7, 1.5)`, `|n>>1| ≤ 75`), so the two give the
//! same bits for every `p` and `n`, including the rounding into the subnormals and the
//! overflow to `+inf` (the low part `p_lo·2^n` likewise: `p_lo·2^(n>>1)` stays normal). The
//! rest is the lane code's operation sequence, one intrinsic per operation, with each
//! compare-and-select clamp as the `vmaxps`/`vminps` whose NaN rule is the select's (the
//! second operand is returned when one is NaN). `e^-x` (SiLU, `sigmoid`) folds the negation
//! into the clamps and the two operations that read the argument (`x86::exp_parts`).
//! On this machine's Zen 5 SiLU gets about a fifth faster (the scaling was 7 of 26 vector
//! operations).
//!
//! Each function maps the whole sixteen-element vectors of a strip and returns how many
//! elements it did; the caller finishes the tail with the portable code. Without AVX-512 they
//! do nothing and return 0. The tests below check the bits against the portable lane code
//! (on a sample in every run; over every `f32` in an ignored test), and `tests/veclib.rs`
//! the library's against the inline code's.

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use crate::vmath::exp::{HI, LN2_HI, LN2_LO, LO, LOG2E, MAGIC, Q};

    /// `e^x` as `hi + lo` (the lane code's `exp_parts`); with `NEG`, `e^-x` (the lane code's
    /// `exp_parts(-x)`) without the negation: the clamps of `v = -x` to `[LO, HI]` become
    /// clamps of `x` to `[-HI, -LO]` (the same selects, NaN included), and the two operations
    /// that read `v` fold its sign (`fnmadd`, `fmsub`), exact rewrites of one rounding each.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn exp_parts<const NEG: bool>(x: __m512) -> (__m512, __m512) {
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
        let r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-LN2_LO), r);
        let mut q = _mm512_set1_ps(Q[Q.len() - 1]);
        for &c in Q[..Q.len() - 1].iter().rev() {
            q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(c));
        }
        let y = _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, r);
        let (p, p_lo) = fast_two_sum(_mm512_set1_ps(1.0), y);
        (_mm512_scalef_ps(p, nf), _mm512_scalef_ps(p_lo, nf))
    }

    /// Fast2Sum, as the lane code's.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn fast_two_sum(a: __m512, b: __m512) -> (__m512, __m512) {
        let s = _mm512_add_ps(a, b);
        let b_in_s = _mm512_sub_ps(s, a);
        (s, _mm512_sub_ps(b, b_in_s))
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

    /// `1 / (1 + e^-x)` (the lane code's `sigmoid`).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sigmoid(x: __m512) -> __m512 {
        let abs = _mm512_castsi512_ps(_mm512_and_si512(
            _mm512_castps_si512(x),
            _mm512_set1_epi32(i32::MAX),
        ));
        let (eh, el) = exp_parts::<true>(abs);
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

    /// Applies `f` to every whole vector of sixteen elements; returns how many it did.
    macro_rules! map16 {
        ($src:expr, $dst:expr, |$v:ident| $body:expr) => {{
            let n = $src.len().min($dst.len()) / 16 * 16;
            for (s, d) in $src[..n]
                .chunks_exact(16)
                .zip($dst[..n].chunks_exact_mut(16))
            {
                // SAFETY: `s` and `d` are sixteen `f32`s each, and the unaligned load and
                // store touch exactly those.
                let $v = unsafe { _mm512_loadu_ps(s.as_ptr()) };
                unsafe { _mm512_storeu_ps(d.as_mut_ptr(), $body) };
            }
            n
        }};
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn exp(src: &[f32], dst: &mut [f32]) -> usize {
        map16!(src, dst, |x| exp_parts::<false>(x).0)
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn sigmoid_map(src: &[f32], dst: &mut [f32]) -> usize {
        map16!(src, dst, |x| sigmoid(x))
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn silu(src: &[f32], dst: &mut [f32]) -> usize {
        map16!(src, dst, |x| _mm512_mul_ps(x, sigmoid(x)))
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn silu_exp(src: &[f32], dst: &mut [f32], c0: f32) -> usize {
        let c0 = _mm512_set1_ps(c0);
        map16!(src, dst, |x| _mm512_div_ps(
            x,
            _mm512_add_ps(exp_parts::<true>(x).0, c0)
        ))
    }
}

/// Whether the host runs this module's code.
fn host_has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
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

/// `dst[i] = e^src[i]` for the whole vectors; returns how many elements it did.
pub(super) fn exp(src: &[f32], dst: &mut [f32], _: [f32; super::MAX_PARAMS]) -> usize {
    on_avx512!(x86::exp(src, dst))
}

/// `dst[i] = sigmoid(src[i])` for the whole vectors; returns how many elements it did.
pub(super) fn sigmoid(src: &[f32], dst: &mut [f32], _: [f32; super::MAX_PARAMS]) -> usize {
    on_avx512!(x86::sigmoid_map(src, dst))
}

/// SiLU `x·sigmoid(x)` for the whole vectors; returns how many elements it did.
pub(super) fn silu(src: &[f32], dst: &mut [f32], _: [f32; super::MAX_PARAMS]) -> usize {
    on_avx512!(x86::silu(src, dst))
}

/// SiLU `x / (e^-x + c0)` for the whole vectors; returns how many elements it did.
pub(super) fn silu_exp(src: &[f32], dst: &mut [f32], c: [f32; super::MAX_PARAMS]) -> usize {
    on_avx512!(x86::silu_exp(src, dst, c[0]))
}

#[cfg(test)]
mod tests {
    use super::super::{forms, lane, MAX_PARAMS};

    /// The AVX-512 functions and the lane code they must match, with one form parameter.
    type Pair = (
        &'static str,
        fn(&[f32], &mut [f32], [f32; MAX_PARAMS]) -> usize,
        fn(f32, [f32; MAX_PARAMS]) -> f32,
    );
    const PAIRS: [Pair; 4] = [
        ("exp", super::exp, |x, _| lane::exp(x)),
        ("sigmoid", super::sigmoid, |x, _| lane::sigmoid(x)),
        ("silu", super::silu, forms::silu),
        ("silu_exp", super::silu_exp, forms::silu_exp),
    ];

    /// Checks `xs` through both; returns the number of elements the AVX-512 code did.
    fn check(xs: &[f32], out: &mut [f32]) -> usize {
        let c = [1.0, 0.0, 0.0, 0.0];
        let mut done = 0;
        for (name, wide, lane) in PAIRS {
            done = wide(xs, out, c);
            for (&x, &y) in xs[..done].iter().zip(&out[..done]) {
                let want = lane(x, c);
                assert!(
                    y.to_bits() == want.to_bits() || (y.is_nan() && want.is_nan()),
                    "{name}({x:e} = {:#x}): AVX-512 {y:e}, lane code {want:e}",
                    x.to_bits()
                );
            }
        }
        done
    }

    #[test]
    fn the_avx512_code_is_the_lane_codes_bit_for_bit_on_a_sample() {
        let mut xs: Vec<f32> = (0..=u32::MAX).step_by(4_099).map(f32::from_bits).collect();
        xs.extend(crate::tests::F32_SPECIALS);
        xs.extend([-104.0f32, 89.0, -87.33655, 88.72284].iter().flat_map(|t| {
            let b = t.to_bits();
            (b - 64..b + 64).map(f32::from_bits)
        }));
        let mut out = vec![0.0; xs.len()];
        let done = check(&xs, &mut out);
        assert_eq!(done > 0, super::host_has_avx512());
    }

    /// Every `f32` for the four functions (7.5 minutes in a release build on this machine):
    /// `cargo test --release -p graphlift-jit -- --ignored every_f32`.
    #[test]
    #[ignore]
    fn the_avx512_code_is_the_lane_codes_bit_for_bit_on_every_f32() {
        let mut out = vec![0.0; 1 << 20];
        for chunk in 0..(1u64 << 12) {
            let xs: Vec<f32> = (chunk << 20..(chunk + 1) << 20)
                .map(|b| f32::from_bits(b as u32))
                .collect();
            check(&xs, &mut out);
        }
    }
}
