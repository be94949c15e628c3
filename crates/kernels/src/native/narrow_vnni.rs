//! The narrowed integer product's rows on AVX-512 VNNI (`vpdpbusd`: sixteen columns, each
//! summing four `u8 × i8` products into `i32`, per instruction). `vpdpbusd` takes an unsigned
//! left operand, so a row whose values span at most 255 is taken less its least value
//! (`a' = a − lo`, in `0..=255`) and the result corrected by `lo` times each column's sum:
//! `Σ a·b = Σ a'·b + lo·Σ b`, an identity of integers that holds in wrapping `i32` too.

use std::ops::Range;

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m512i, __mmask16, _mm512_dpbusd_epi32, _mm512_mask_storeu_epi32, _mm512_maskz_loadu_epi32,
    _mm512_set1_epi32, _mm512_setzero_si512,
};

use super::int_avx2::IntegerPath;
#[cfg(target_arch = "x86_64")]
use super::lanes::lane_mask;

/// Columns of one accumulator (a zmm register of `i32`).
const LANES: usize = 16;

/// Whether [`row`] runs on this host (AVX-512F and AVX-512 VNNI: the integer kernels'
/// [`IntegerPath::Vnni`]).
pub(super) fn available() -> bool {
    IntegerPath::host() == IntegerPath::Vnni
}

/// `out[j − cols.start] = Σ_p a[p] · b[p, j]` for `j` in `cols`, in wrapping `i32`, `b`
/// given as its quads (`[⌈K/4⌉, n, 4]`, zeros past `K = a.len()`) and column sums (`[n]`).
/// `shifted` is scratch for `a − lo`. Returns `false`, writing nothing, when the host lacks
/// VNNI, `a` spans more than 255, or the slices do not hold these extents.
pub(super) fn row(
    a: &[i32],
    (quads, sums, n): (&[i8], &[i32], usize),
    cols: Range<usize>,
    out: &mut [i32],
    shifted: &mut Vec<u8>,
) -> bool {
    let k4 = a.len().div_ceil(4);
    let (Some(&lo), Some(&hi)) = (a.iter().min(), a.iter().max()) else {
        return false;
    };
    let fits = available()
        && i64::from(hi) - i64::from(lo) <= 255
        && quads.len() >= k4 * 4 * n
        && sums.len() >= n
        && cols.start <= cols.end
        && cols.end <= n
        && out.len() == cols.len();
    if !fits {
        return false;
    }
    shifted.clear();
    // In 0..=255 (checked above); zeros past K meet the quads' zero padding.
    shifted.extend(a.iter().map(|&v| (i64::from(v) - i64::from(lo)) as u8));
    shifted.resize(k4 * 4, 0);
    #[cfg(target_arch = "x86_64")]
    {
        let mut j = 0;
        while j < cols.len() {
            let left = cols.len() - j;
            let at = (cols.start + j, left.min(4 * LANES));
            // SAFETY: the host has AVX-512F and VNNI (checked above). A tile reads, for
            // `q < k4`, the 4-byte groups of columns `at.0 .. at.0 + at.1` (at most `n`) of
            // quad row `q`: bytes below `k4 · 4 · n ≤ quads.len()`; it reads `shifted`'s
            // `k4 · 4` bytes and writes `at.1 ≤ out.len() − j` elements of `out` from `j`.
            unsafe {
                let (q, o) = (quads.as_ptr(), out[j..].as_mut_ptr());
                match at.1.div_ceil(LANES) {
                    1 => tile::<1>(shifted, (q, n), at, o),
                    2 => tile::<2>(shifted, (q, n), at, o),
                    3 => tile::<3>(shifted, (q, n), at, o),
                    _ => tile::<4>(shifted, (q, n), at, o),
                }
            }
            j += 4 * LANES;
        }
    }
    for (o, &s) in out.iter_mut().zip(&sums[cols]) {
        *o = o.wrapping_add(lo.wrapping_mul(s));
    }
    true
}

/// `len` columns from `first` (`len ≤ B · 16`, the last block masked) of `Σ_q shifted[4q..]
/// · quads[q, j, ..]` into `out`.
///
/// # Safety
/// AVX-512F and VNNI; `quads` holds `shifted.len() / 4` quad rows of `n` columns and
/// `first + len ≤ n`; `out` is writable for `len` elements.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vnni")]
unsafe fn tile<const B: usize>(
    shifted: &[u8],
    (quads, n): (*const i8, usize),
    (first, len): (usize, usize),
    out: *mut i32,
) {
    let masks: [__mmask16; B] = std::array::from_fn(|v| lane_mask(len, v));
    let mut acc: [__m512i; B] = [_mm512_setzero_si512(); B];
    for (q, four) in shifted.chunks_exact(4).enumerate() {
        let a = _mm512_set1_epi32(i32::from_le_bytes([four[0], four[1], four[2], four[3]]));
        let row = quads.wrapping_add(q * 4 * n + 4 * first);
        for (v, acc) in acc.iter_mut().enumerate() {
            // SAFETY: enabled lanes are columns below `first + len ≤ n` of quad row `q`.
            let b = unsafe {
                _mm512_maskz_loadu_epi32(masks[v], row.wrapping_add(4 * LANES * v).cast())
            };
            *acc = _mm512_dpbusd_epi32(*acc, a, b);
        }
    }
    for (v, &sum) in acc.iter().enumerate() {
        // SAFETY: enabled lanes are elements below `len` of `out`.
        unsafe { _mm512_mask_storeu_epi32(out.wrapping_add(v * LANES).cast(), masks[v], sum) };
    }
}
