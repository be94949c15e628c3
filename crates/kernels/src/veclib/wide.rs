//! The library's functions (`exp`, `sigmoid`, `tanh`, `erf`, SiLU and GELU) on sixteen AVX-512
//! lanes: the one source of `functions` instantiated with intrinsics, for what LLVM does not
//! do for portable code (`vscalefps`, a software-pipelined loop, non-temporal stores); and
//! softmax rows, whose passes use the same `exp`.

/// The AVX-512 side of the library: [`F32x`](super::simd::F32x) on sixteen lanes, and
/// each function of [`super::functions`] mapped over slices as a software pipeline.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::super::functions as f;
    use super::super::simd::F32x;

    /// Sixteen `f32` lanes in a `zmm` register. Only this module's
    /// `#[target_feature(enable = "avx512f")]` functions make one (they run only where the
    /// host has AVX-512F, `on_avx512!`), so a value proves that the instructions its methods
    /// run are there.
    #[derive(Clone, Copy)]
    struct Zmm(__m512);

    /// Each method is one AVX-512F instruction (two for the bit operations), with the lane
    /// code's rounding and NaN rule: a compare-and-select clamp is the `vmaxps`/`vminps`
    /// that returns its second operand when one is NaN, as the select does.
    impl F32x for Zmm {
        #[inline(always)]
        fn splat(self, k: f32) -> Zmm {
            // SAFETY (every `unsafe` block of this impl): a `Zmm` exists only on a host with
            // AVX-512F (the type's documentation), the one feature these intrinsics need.
            Zmm(unsafe { _mm512_set1_ps(k) })
        }
        #[inline(always)]
        fn add(self, b: Zmm) -> Zmm {
            Zmm(unsafe { _mm512_add_ps(self.0, b.0) })
        }
        #[inline(always)]
        fn sub(self, b: Zmm) -> Zmm {
            Zmm(unsafe { _mm512_sub_ps(self.0, b.0) })
        }
        #[inline(always)]
        fn mul(self, b: Zmm) -> Zmm {
            Zmm(unsafe { _mm512_mul_ps(self.0, b.0) })
        }
        #[inline(always)]
        fn div(self, b: Zmm) -> Zmm {
            Zmm(unsafe { _mm512_div_ps(self.0, b.0) })
        }
        #[inline(always)]
        fn mul_add(self, b: Zmm, c: Zmm) -> Zmm {
            Zmm(unsafe { _mm512_fmadd_ps(self.0, b.0, c.0) })
        }
        #[inline(always)]
        fn neg_mul_add(self, b: Zmm, c: Zmm) -> Zmm {
            Zmm(unsafe { _mm512_fnmadd_ps(self.0, b.0, c.0) })
        }
        #[inline(always)]
        fn mul_sub(self, b: Zmm, c: Zmm) -> Zmm {
            Zmm(unsafe { _mm512_fmsub_ps(self.0, b.0, c.0) })
        }
        #[inline(always)]
        fn abs(self) -> Zmm {
            Zmm(unsafe {
                _mm512_castsi512_ps(_mm512_and_si512(
                    _mm512_castps_si512(self.0),
                    _mm512_set1_epi32(i32::MAX),
                ))
            })
        }
        #[inline(always)]
        fn clamp_above(self, hi: f32) -> Zmm {
            Zmm(unsafe { _mm512_min_ps(_mm512_set1_ps(hi), self.0) })
        }
        #[inline(always)]
        fn clamp_below(self, lo: f32) -> Zmm {
            Zmm(unsafe { _mm512_max_ps(_mm512_set1_ps(lo), self.0) })
        }
        #[inline(always)]
        fn select_lt(self, b: Zmm, if_lt: Zmm, otherwise: Zmm) -> Zmm {
            Zmm(unsafe {
                let m = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(self.0, b.0);
                _mm512_mask_blend_ps(m, otherwise.0, if_lt.0)
            })
        }
        #[inline(always)]
        fn select_ge(self, b: Zmm, if_ge: Zmm, otherwise: Zmm) -> Zmm {
            Zmm(unsafe {
                let m = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(self.0, b.0);
                _mm512_mask_blend_ps(m, otherwise.0, if_ge.0)
            })
        }
        /// `vpternlogd` as a bit select: `sign`'s sign bit, the rest of `self`.
        #[inline(always)]
        fn copysign(self, sign: Zmm) -> Zmm {
            Zmm(unsafe {
                _mm512_castsi512_ps(_mm512_ternarylogic_epi32::<0xCA>(
                    _mm512_set1_epi32(i32::MIN),
                    _mm512_castps_si512(sign.0),
                    _mm512_castps_si512(self.0),
                ))
            })
        }
        /// One `vscalefps`: `self·2^n` rounded once. The one-lane code's two exact steps
        /// give the same bits for every `self` and `n` the functions pass (`|self| < 2`,
        /// `|n>>1| ≤ 75`: `self·2^(n>>1)` is exact), the rounding into the subnormals and
        /// the overflow to `+inf` included.
        #[inline(always)]
        fn scale_pow2(self, _t: Zmm, nf: Zmm) -> Zmm {
            Zmm(unsafe { _mm512_scalef_ps(self.0, nf.0) })
        }
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
                    let $x = Zmm(unsafe { _mm512_loadu_ps(s.add($i)) });
                    $head
                }};
            }
            macro_rules! finish {
                ($i:expr, $state:expr) => {{
                    let $h = $state;
                    let y: Zmm = $tail;
                    if NT {
                        // `d` is 64-byte aligned (checked below) and `i` a multiple of 16.
                        unsafe { _mm512_stream_ps(d.add($i), y.0) };
                    } else {
                        unsafe { _mm512_storeu_ps(d.add($i), y.0) };
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

    /// The form's parameters in every lane.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn params(c: &[f32; 4]) -> [Zmm; 4] {
        c.map(|c| Zmm(_mm512_set1_ps(c)))
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn exp<const NT: bool>(src: &[f32], dst: &mut [f32]) -> usize {
        map16_pipelined!(src, dst, |x| f::exp_head::<Zmm, false>(x), |h| f::exp_tail(
            h
        )
        .0)
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn sigmoid<const NT: bool>(src: &[f32], dst: &mut [f32]) -> usize {
        map16_pipelined!(src, dst, |x| f::sigmoid_head(x), |h| f::sigmoid_tail(h))
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn silu<const NT: bool>(src: &[f32], dst: &mut [f32]) -> usize {
        map16_pipelined!(src, dst, |x| f::sigmoid_head(x), |h| f::silu_tail(h))
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn tanh<const NT: bool>(src: &[f32], dst: &mut [f32]) -> usize {
        map16_pipelined!(src, dst, |x| f::tanh_head(x), |h| f::tanh_tail(h))
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn erf<const NT: bool>(src: &[f32], dst: &mut [f32]) -> usize {
        map16_pipelined!(src, dst, |x| f::erf_head(x), |h| f::erf_tail(h))
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn gelu_tanh<const NT: bool>(src: &[f32], dst: &mut [f32], c: &[f32; 4]) -> usize {
        let c = params(c);
        map16_pipelined!(src, dst, |x| f::gelu_tanh_head(x, &c), |h| {
            f::gelu_tanh_tail(h, &c)
        })
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn gelu_erf<const NT: bool>(src: &[f32], dst: &mut [f32], c: &[f32; 4]) -> usize {
        let c = params(c);
        map16_pipelined!(src, dst, |x| f::gelu_erf_head(x, &c), |h| {
            f::gelu_erf_tail(h, &c)
        })
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn gelu_erf_divide<const NT: bool>(
        src: &[f32],
        dst: &mut [f32],
        c: &[f32; 4],
    ) -> usize {
        let c = params(c);
        map16_pipelined!(src, dst, |x| f::gelu_erf_divide_head(x, &c), |h| {
            f::gelu_erf_divide_tail(h, &c)
        })
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn silu_exp<const NT: bool>(src: &[f32], dst: &mut [f32], c0: f32) -> usize {
        let c0 = Zmm(_mm512_set1_ps(c0));
        map16_pipelined!(src, dst, |x| f::silu_exp_head(x), |h| f::silu_exp_tail(
            h, c0
        ))
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn swish<const NT: bool>(src: &[f32], dst: &mut [f32], c: &[f32; 4]) -> usize {
        let (c0, c1) = (Zmm(_mm512_set1_ps(c[0])), Zmm(_mm512_set1_ps(c[1])));
        map16_pipelined!(src, dst, |x| f::swish_head(x, c1), |h| f::silu_exp_tail(
            h, c0
        ))
    }

    mod softmax;
    pub(super) use softmax::{softmax_numerators, softmax_rows};
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
    sigmoid, |src, dst, _| x86::sigmoid::<NT>(src, dst)
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
avx512_entry!(
    /// Swish `x / (e^-(x·c1) + c0)`.
    swish, |src, dst, c| x86::swish::<NT>(src, dst, c)
);

/// Softmax of each row of `len` elements of `src` (its length a multiple of `len`) into the
/// same place in `dst`, on sixteen lanes and several rows at a time: the maximum (NaNs
/// skipped), `exp(x − max)` with the library's `exp`, their sum in `f64`, then each times
/// the reciprocal of the sum rounded to `f32` once (the arithmetic of
/// `native::normalize::softmax`). Returns `false`, writing nothing, on a host without
/// AVX-512, for a `len` of 0 or one that does not divide `src`'s length, or for a `dst`
/// shorter than `src` (the caller runs its portable code).
pub(crate) fn softmax_rows(src: &[f32], dst: &mut [f32], len: usize) -> bool {
    let whole = len > 0 && src.len().is_multiple_of(len);
    src.is_empty() || (whole && on_avx512!(x86::softmax_rows(src, dst, len)) == src.len())
}

/// Attention's softmax numerators, in place: for each row `r` of `len` elements of
/// `scores`, `x = scores_r + mask_r` (with `mask` = `(values, step)`, `mask_r` the `len`
/// values from `r · step`; `step` 0 for one row of values shared by every row), then `e =
/// exp(x − max x)` with the library's `exp` (NaNs skipped by the maximum: a row with a NaN
/// or `+inf` gives NaNs, `-inf` entries 0) stored over the row, and `sums[r] = Σ e`, summed
/// in `f32` by pairs within groups of four vectors (relative error at most 2^-23) and in
/// `f64` across them. The caller divides by the sums (attention scales its context rows by
/// `1 / sum`). Returns `false`, writing nothing, on a host without AVX-512, for a `len` of 0
/// or one that does not divide `scores`' length, for fewer `sums` than rows, or for a mask
/// that does not hold every row's values (the caller runs `softmax_rows`).
pub(crate) fn softmax_numerators(
    scores: &mut [f32],
    len: usize,
    mask: Option<(&[f32], usize)>,
    sums: &mut [f64],
) -> bool {
    let Some(rows) = scores.len().checked_div(len) else {
        return false;
    };
    let mask_fits = mask.is_none_or(|(m, step)| {
        rows == 0
            || (rows - 1)
                .checked_mul(step)
                .and_then(|at| at.checked_add(len))
                .is_some_and(|end| end <= m.len())
    });
    let fits = scores.len().is_multiple_of(len) && sums.len() >= rows && mask_fits;
    let mask = mask.map_or((std::ptr::null(), 0), |(m, step)| (m.as_ptr(), step));
    // SAFETY (inside `on_avx512!`, with the host's AVX-512F): `sums` holds a value per row
    // and the mask each row's `len` values (checked above).
    fits && (rows == 0 || on_avx512!(x86::softmax_numerators(scores, len, mask, sums)) == rows)
}

#[cfg(test)]
mod tests;
