//! Softmax rows on sixteen lanes, several rows at a time: whole rows into another buffer
//! (`Softmax`), and attention's numerators in place with the mask added on the way, the
//! normalisation left to the product that reads them. Both take `exp` from the library's
//! one source, [`f::exp_head`] and [`f::exp_tail`].

use std::arch::x86_64::*;

use super::super::super::functions as f;
use super::super::super::simd::F32x;
use super::Zmm;

/// The lanes of the vector at element `i < n` of a row of `n`: those below `n`.
#[inline(always)]
fn row_mask(n: usize, i: usize) -> __mmask16 {
    let live = (n - i).min(16);
    ((1u32 << live) - 1) as __mmask16
}

/// Softmax of each row of `n` elements of `src` into the same place in `dst`, `R` rows
/// at a time (four, then one by one): three passes, sixteen lanes wide, the tail
/// masked, each pass over the rows in turn, so that their chains of dependent
/// operations (an `exp`, a row's reductions) overlap. Per row: the maximum (NaNs
/// skipped), `e = exp(x − max)` with the library's `exp` (as [`super::exp`] gives it)
/// stored and summed in `f64`, then `e · (1 / sum)`, the reciprocal rounded to `f32` once.
/// Returns the elements done (all of `src`'s whole rows, or none when `dst` is
/// shorter).
#[target_feature(enable = "avx512f")]
pub(in super::super) fn softmax_rows(src: &[f32], dst: &mut [f32], n: usize) -> usize {
    let rows = src.len().checked_div(n).unwrap_or(0);
    if dst.len() < rows * n {
        return 0;
    }
    let (s, d) = (src.as_ptr(), dst.as_mut_ptr());
    let mut r = 0;
    while r + 4 <= rows {
        // SAFETY: rows `r..r + 4` of `n` elements lie within both slices.
        unsafe { softmax_group::<4>(s.add(r * n), d.add(r * n), n) };
        r += 4;
    }
    while r < rows {
        // SAFETY: row `r` lies within both slices.
        unsafe { softmax_group::<1>(s.add(r * n), d.add(r * n), n) };
        r += 1;
    }
    rows * n
}

/// [`softmax_rows`] of the `R` rows of `n` elements from `s` into `d`.
///
/// # Safety
/// `R · n` elements are readable from `s` and writable from `d`; the host has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn softmax_group<const R: usize>(s: *const f32, d: *mut f32, n: usize) {
    // SAFETY (every load and store below): the lanes of `row_mask(n, i)` are elements
    // `i..min(i + 16, n)` of row `r < R`, within both buffers (caller); masked-off
    // lanes are not accessed.
    let neg_inf = _mm512_set1_ps(f32::NEG_INFINITY);
    let mut top = [neg_inf; R];
    for i in (0..n).step_by(16) {
        let k = row_mask(n, i);
        for (r, top) in top.iter_mut().enumerate() {
            let x = unsafe { _mm512_mask_loadu_ps(neg_inf, k, s.add(r * n + i)) };
            // `vmaxps` returns its second operand where either is NaN: NaNs are skipped.
            *top = _mm512_max_ps(x, *top);
        }
    }
    let max = top.map(|t| Zmm(_mm512_set1_ps(_mm512_reduce_max_ps(t))));
    let (mut low, mut high) = ([_mm512_setzero_pd(); R], [_mm512_setzero_pd(); R]);
    for i in (0..n).step_by(16) {
        let k = row_mask(n, i);
        for r in 0..R {
            let x = Zmm(unsafe { _mm512_maskz_loadu_ps(k, s.add(r * n + i)) });
            let (e, _) = f::exp_tail(f::exp_head::<Zmm, false>(x.sub(max[r])));
            let e = _mm512_maskz_mov_ps(k, e.0);
            unsafe { _mm512_mask_storeu_ps(d.add(r * n + i), k, e) };
            add_wide(&mut low[r], &mut high[r], e);
        }
    }
    let scale: [__m512; R] = std::array::from_fn(|r| {
        let sum = _mm512_reduce_add_pd(_mm512_add_pd(low[r], high[r]));
        _mm512_set1_ps((1.0 / sum) as f32)
    });
    for i in (0..n).step_by(16) {
        let k = row_mask(n, i);
        for (r, &scale) in scale.iter().enumerate() {
            unsafe {
                let at = d.add(r * n + i);
                let e = _mm512_maskz_loadu_ps(k, at);
                _mm512_mask_storeu_ps(at, k, _mm512_mul_ps(e, scale));
            }
        }
    }
}

/// Adds the sixteen lanes of `v`, widened to `f64`, to the partial sums `low` (lanes 0..8)
/// and `high` (lanes 8..16).
#[inline(always)]
fn add_wide(low: &mut __m512d, high: &mut __m512d, v: __m512) {
    // SAFETY: AVX-512F intrinsics on registers, in the callers' AVX-512F functions.
    unsafe {
        let upper = _mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v));
        *low = _mm512_add_pd(*low, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        *high = _mm512_add_pd(*high, _mm512_cvtps_pd(_mm256_castpd_ps(upper)));
    }
}

/// Vectors of a row summed in `f32` before their sum is widened (by pairs: `(e0 + e2) +
/// (e1 + e3)`, two roundings deep).
const GROUP: usize = 4;

/// Attention's softmax numerators in place: for each row `r` of `n` elements of `s`, `x =
/// s_r + mask_r` (`mask_r` the `n` values from `mask + r · step`, when `mask` is not null),
/// `e = exp(x − max x)` (NaNs skipped by the maximum, as in [`softmax_rows`]; a row with a
/// NaN or `+inf` gives NaNs, `-inf` entries 0) stored over `s_r`, and `sums[r]` their sum:
/// in `f32` by pairs within each group of [`GROUP`] vectors (relative error at most 2^-23),
/// in `f64` across the groups. `R` rows at a time (four, then one by one), their chains
/// interleaved as [`softmax_rows`] interleaves them. Returns the rows done: all of `s`'s
/// whole rows.
///
/// # Safety
/// The host has AVX-512F. `sums` holds a value for each row; when `mask` is not null, the
/// `n` values from `mask + r · step` are readable for every row `r`.
#[target_feature(enable = "avx512f")]
pub(in super::super) unsafe fn softmax_numerators(
    s: &mut [f32],
    n: usize,
    (mask, step): (*const f32, usize),
    sums: &mut [f64],
) -> usize {
    let rows = s.len().checked_div(n).unwrap_or(0).min(sums.len());
    let p = s.as_mut_ptr();
    let mut r = 0;
    while r < rows {
        let group = if r + 4 <= rows { 4 } else { 1 };
        // SAFETY: rows `r..r + group` of `n` elements lie in `s`, and their masks are
        // readable (caller); `sums` holds their values.
        unsafe {
            let (rows_at, sums) = (p.add(r * n), &mut sums[r..r + group]);
            let mask_at = if mask.is_null() {
                mask
            } else {
                mask.wrapping_add(r * step)
            };
            match (group, mask.is_null()) {
                (4, true) => numerators::<4, false>(rows_at, n, (mask_at, step), sums),
                (4, false) => numerators::<4, true>(rows_at, n, (mask_at, step), sums),
                (_, true) => numerators::<1, false>(rows_at, n, (mask_at, step), sums),
                (_, false) => numerators::<1, true>(rows_at, n, (mask_at, step), sums),
            }
        }
        r += group;
    }
    rows
}

/// [`softmax_numerators`] of the `R` rows of `n` elements at `s`, adding the mask rows at
/// `mask + r · step` when `MASKED`.
///
/// # Safety
/// As [`softmax_numerators`] for these `R` rows; `sums` holds `R` values.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn numerators<const R: usize, const MASKED: bool>(
    s: *mut f32,
    n: usize,
    (mask, step): (*const f32, usize),
    sums: &mut [f64],
) {
    // SAFETY (every load and store below): the lanes of `row_mask(n, i)` are elements `i..
    // min(i + 16, n)` of row `r < R` and of its mask row, readable and (the scores)
    // writable (caller); masked-off lanes are not accessed.
    let x_at = |r: usize, i: usize, k: __mmask16, fill: __m512| -> __m512 {
        let x = unsafe { _mm512_mask_loadu_ps(fill, k, s.add(r * n + i)) };
        if MASKED {
            let m = unsafe { _mm512_maskz_loadu_ps(k, mask.wrapping_add(r * step + i)) };
            _mm512_add_ps(x, m)
        } else {
            x
        }
    };
    let neg_inf = _mm512_set1_ps(f32::NEG_INFINITY);
    let mut top = [neg_inf; R];
    for i in (0..n).step_by(16) {
        let k = row_mask(n, i);
        for (r, top) in top.iter_mut().enumerate() {
            // `vmaxps` returns its second operand where either is NaN: NaNs are skipped.
            *top = _mm512_max_ps(x_at(r, i, k, neg_inf), *top);
        }
    }
    let max = top.map(|t| Zmm(_mm512_set1_ps(_mm512_reduce_max_ps(t))));
    let (mut low, mut high) = ([_mm512_setzero_pd(); R], [_mm512_setzero_pd(); R]);
    let zero = _mm512_setzero_ps();
    for g in (0..n).step_by(16 * GROUP) {
        // Vectors 0 and 2 of the group summed in `even`, 1 and 3 in `odd`.
        let (mut even, mut odd) = ([zero; R], [zero; R]);
        for v in 0..GROUP {
            let i = g + 16 * v;
            if i >= n {
                break;
            }
            let k = row_mask(n, i);
            for r in 0..R {
                let x = Zmm(x_at(r, i, k, zero)).sub(max[r]);
                let (y, _) = f::exp_tail(f::exp_head::<Zmm, false>(x));
                let e = _mm512_maskz_mov_ps(k, y.0);
                unsafe { _mm512_mask_storeu_ps(s.add(r * n + i), k, e) };
                let sum = if v % 2 == 0 {
                    &mut even[r]
                } else {
                    &mut odd[r]
                };
                *sum = if v < 2 { e } else { _mm512_add_ps(*sum, e) };
            }
        }
        for r in 0..R {
            add_wide(&mut low[r], &mut high[r], _mm512_add_ps(even[r], odd[r]));
        }
    }
    for (r, sum) in sums.iter_mut().enumerate().take(R) {
        *sum = _mm512_reduce_add_pd(_mm512_add_pd(low[r], high[r]));
    }
}
