//! The AVX2 tile's operands laid out at run time from `i32` values (those of an integer
//! `MatMul`): rows narrowed to `i16`, and a right operand regrouped into [`super::Wide16`]
//! panels, in vector code that checks each value fits 16 bits as it narrows it.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use super::{available, COLUMNS};

/// `a` (rows of `k`) into `a16` (rows of `kp ≥ k`, every element written, zero past `k`)
/// as `i16`; `false` when the host lacks AVX2, the lengths disagree, or a value does not
/// fit 16 bits (`a16` then partly written).
pub(in crate::native) fn narrow_rows(a: &[i32], k: usize, a16: &mut [i16]) -> bool {
    let rows = a.len() / k.max(1);
    let kp = a16.len() / rows.max(1);
    if !available() || k == 0 || kp < k || a.len() != rows * k || a16.len() != rows * kp {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the host has AVX2 and the lengths agree (both checked above).
    return unsafe { x86::narrow_rows(a, (k, kp), a16) };
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `b` (`[k, n]`, row-major) as the [`super::Wide16`] panels of its whole blocks of eight
/// columns, `[⌊n/8⌋, ⌈k/4⌉, 8, 4]` with zeros past `k`, written into every element of
/// `out` (which must be that long); `false` when the host lacks AVX2, the lengths
/// disagree, or a value does not fit 16 bits (`out` then partly written).
pub(in crate::native) fn wide_panels(b: &[i32], (k, n): (usize, usize), out: &mut [i16]) -> bool {
    let kp = k.div_ceil(4) * 4;
    let full = n - n % COLUMNS;
    if !available() || out.len() != full * kp || b.len() < k * n {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the host has AVX2 and the lengths agree (both checked above).
    return unsafe { x86::wide_panels(b, (k, n), out) };
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;

    /// Whether every lane of `lo` and `hi` (the least and greatest values seen) fits 16 bits.
    #[target_feature(enable = "avx2")]
    fn fits(lo: __m256i, hi: __m256i) -> bool {
        let below = _mm256_cmpgt_epi32(_mm256_set1_epi32(i16::MIN.into()), lo);
        let above = _mm256_cmpgt_epi32(hi, _mm256_set1_epi32(i16::MAX.into()));
        _mm256_movemask_epi8(_mm256_or_si256(below, above)) == 0
    }

    /// [`super::narrow_rows`]: sixteen values at a time (`vpackssdw`, its lanes put in
    /// order), the least and greatest kept to check the range.
    ///
    /// # Safety
    /// AVX2; `a` is rows of `k`, `a16` as many rows of `kp ≥ k`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn narrow_rows(a: &[i32], (k, kp): (usize, usize), a16: &mut [i16]) -> bool {
        let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        let mut scalar_ok = true;
        let whole = k - k % 16;
        for (row, src) in a16.chunks_exact_mut(kp).zip(a.chunks_exact(k)) {
            for i in (0..whole).step_by(16) {
                // SAFETY: values `i..i + 16 <= k` of the row and of `src`.
                unsafe {
                    let x0 = _mm256_loadu_si256(src.as_ptr().add(i).cast());
                    let x1 = _mm256_loadu_si256(src.as_ptr().add(i + 8).cast());
                    lo = _mm256_min_epi32(lo, _mm256_min_epi32(x0, x1));
                    hi = _mm256_max_epi32(hi, _mm256_max_epi32(x0, x1));
                    let packed =
                        _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packs_epi32(x0, x1));
                    _mm256_storeu_si256(row.as_mut_ptr().add(i).cast(), packed);
                }
            }
            for (d, &v) in row[whole..k].iter_mut().zip(&src[whole..]) {
                *d = v as i16;
                scalar_ok &= i16::try_from(v).is_ok();
            }
            row[k..].fill(0);
        }
        scalar_ok && fits(lo, hi)
    }

    /// [`super::wide_panels`]: each group of four rows by eight columns narrowed
    /// (`vpackssdw`) and interleaved into eight quads by three rounds of unpacking.
    ///
    /// # Safety
    /// AVX2; `b` holds `k · n` values, `out` `⌊n/8⌋ · ⌈k/4⌉ · 32`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn wide_panels(b: &[i32], (k, n): (usize, usize), out: &mut [i16]) -> bool {
        let k4 = k.div_ceil(4);
        let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for (j, panel) in out.chunks_exact_mut(k4 * 4 * COLUMNS).enumerate() {
            for (g, group) in panel.chunks_exact_mut(4 * COLUMNS).enumerate() {
                let row = |t: usize| {
                    let p = 4 * g + t;
                    if p < k {
                        // SAFETY: columns `8j..8j + 8 <= n` of row `p < k` are within `b`.
                        unsafe { _mm256_loadu_si256(b.as_ptr().add(p * n + j * COLUMNS).cast()) }
                    } else {
                        _mm256_setzero_si256()
                    }
                };
                let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
                lo = _mm256_min_epi32(
                    lo,
                    _mm256_min_epi32(_mm256_min_epi32(r0, r1), _mm256_min_epi32(r2, r3)),
                );
                hi = _mm256_max_epi32(
                    hi,
                    _mm256_max_epi32(_mm256_max_epi32(r0, r1), _mm256_max_epi32(r2, r3)),
                );
                // Per 128-bit lane (columns 0-3, then 4-7): [r0 r0 r0 r0 r1 r1 r1 r1] and
                // [r2 .. r3 ..]; then [r0 r2] and [r1 r3] pairs per column; then each
                // column's quad [r0 r1 r2 r3]: columns 0, 1 (4, 5) and 2, 3 (6, 7).
                let (s01, s23) = (_mm256_packs_epi32(r0, r1), _mm256_packs_epi32(r2, r3));
                let (u, v) = (
                    _mm256_unpacklo_epi16(s01, s23),
                    _mm256_unpackhi_epi16(s01, s23),
                );
                let (w0, w1) = (_mm256_unpacklo_epi16(u, v), _mm256_unpackhi_epi16(u, v));
                // SAFETY: the group is 32 values.
                unsafe {
                    _mm256_storeu_si256(
                        group.as_mut_ptr().cast(),
                        _mm256_permute2x128_si256::<0x20>(w0, w1),
                    );
                    _mm256_storeu_si256(
                        group.as_mut_ptr().add(16).cast(),
                        _mm256_permute2x128_si256::<0x31>(w0, w1),
                    );
                }
            }
        }
        fits(lo, hi)
    }
}
