//! The depthwise tiles for unit strides and dilations and windows 3 or 5 columns wide,
//! where a tap's run is the run of the tap to its left shifted by one column: each input
//! row is loaded once per block (plus the next block), and the `kW` shifted runs are made
//! in registers (`valignd`) instead of loaded unaligned, one per tap. A loaded row also
//! serves every output row of the tile whose window holds it. Sums run in window order,
//! one fused multiply-add per tap, as in `super::depthwise_tiles`. The rows are padded rows
//! or the input's own: masked loads read the columns outside a row as the zeros of its
//! padding, so no padded copy is needed.

#[cfg(target_arch = "x86_64")]
use super::lanes::lane_mask;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m512, __mmask16, _mm512_alignr_epi32, _mm512_castps_si512, _mm512_castsi512_ps,
    _mm512_fmadd_ps, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_set1_ps,
    _mm512_setzero_ps,
};

/// Columns of one block (a zmm register of `f32`).
const BLOCK: usize = 16;

/// The most blocks of one tile (accumulators per output row).
const MAX_BLOCKS: usize = 4;

/// Where a tile's input rows lie: row `i` from `rows + i · stride`, holding `width`
/// elements; column `c` of the padded row (what tap `kx` of output column `ox` reads at `c =
/// ox + kx`) is element `c − left` of the row, and a zero where that is outside `0..width`.
/// A padded plane is `left` 0 and `width` its padded row's length.
#[derive(Clone, Copy)]
pub(super) struct RowsAt {
    pub stride: usize,
    pub left: usize,
    pub width: usize,
}

/// Output rows `R` of `ow` columns into `out` (row stride `ow`) from `kh + R − 1` input rows
/// laid out as `at` says from `rows`, with the taps `[kh, KW]` at `taps`: tiles of up to
/// [`MAX_BLOCKS`] blocks along the row.
///
/// # Safety
/// AVX-512F; for each `i < kh + R − 1`, elements `i · at.stride..i · at.stride + at.width`
/// from `rows` are readable; `taps` for `kh · KW`, `out` writable for `R · ow` and not
/// otherwise borrowed.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn row_tiles<const R: usize, const KW: usize>(
    rows: *const f32,
    (at, kh): (RowsAt, usize),
    taps: *const f32,
    ow: usize,
    out: *mut f32,
) {
    // Tiles of equal blocks (a row of five blocks as three and two, not four and one: a
    // tile of one block has too few accumulators to cover the FMA latency).
    let total = ow.div_ceil(BLOCK);
    let per_tile = total.div_ceil(total.div_ceil(MAX_BLOCKS).max(1)).max(1);
    let mut x0 = 0;
    while x0 < ow {
        let blocks = (ow - x0).div_ceil(BLOCK).min(per_tile);
        let cols = (x0, ow);
        // SAFETY: columns `x0..` of the rows and outputs, as the caller guarantees.
        unsafe {
            match blocks {
                1 => tile::<R, 1, KW>(rows, (at, kh), taps, cols, out),
                2 => tile::<R, 2, KW>(rows, (at, kh), taps, cols, out),
                3 => tile::<R, 3, KW>(rows, (at, kh), taps, cols, out),
                _ => tile::<R, 4, KW>(rows, (at, kh), taps, cols, out),
            }
        }
        x0 += blocks * BLOCK;
    }
}

/// `v` shifted left by `k` lanes with the first `k` lanes of `next` coming in: the run that
/// starts `k` columns further on.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
fn shifted(v: __m512, next: __m512, k: usize) -> __m512 {
    let (lo, hi) = (_mm512_castps_si512(v), _mm512_castps_si512(next));
    _mm512_castsi512_ps(match k {
        0 => lo,
        1 => _mm512_alignr_epi32::<1>(hi, lo),
        2 => _mm512_alignr_epi32::<2>(hi, lo),
        3 => _mm512_alignr_epi32::<3>(hi, lo),
        _ => _mm512_alignr_epi32::<4>(hi, lo),
    })
}

/// Columns `x0..x0 + B · 16` (those below `ow`) of `R` output rows.
///
/// # Safety
/// As [`row_tiles`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tile<const R: usize, const B: usize, const KW: usize>(
    rows: *const f32,
    (at, kh): (RowsAt, usize),
    taps: *const f32,
    (x0, ow): (usize, usize),
    out: *mut f32,
) {
    // Loads stay inside the input row (padded columns `left..left + width`); stores inside
    // the output row.
    let loads: [__mmask16; MAX_BLOCKS + 1] = std::array::from_fn(|b| {
        lane_mask((at.left + at.width).saturating_sub(x0), b)
            & !lane_mask(at.left.saturating_sub(x0), b)
    });
    let stores: [__mmask16; B] = std::array::from_fn(|b| lane_mask(ow.saturating_sub(x0), b));
    let mut acc = [[_mm512_setzero_ps(); B]; R];
    for i in 0..kh + R - 1 {
        // Padded column `x0` of row `i`: before the row's start where `x0 < left`, but only
        // the lanes of columns inside it are read.
        let row = rows.wrapping_add(i * at.stride + x0).wrapping_sub(at.left);
        // SAFETY: enabled lanes are padded columns `left..left + width`, elements
        // `0..width` of input row `i` (caller); masked lanes are not accessed.
        let v: [__m512; MAX_BLOCKS + 1] = std::array::from_fn(|b| {
            if b > B {
                return _mm512_setzero_ps();
            }
            unsafe { _mm512_maskz_loadu_ps(loads[b], row.wrapping_add(b * BLOCK)) }
        });
        for kx in 0..KW {
            let runs: [__m512; B] = std::array::from_fn(|b| shifted(v[b], v[b + 1], kx));
            for (r, acc) in acc.iter_mut().enumerate() {
                // Output row `r` reads input row `i` as its window row `i − r`.
                let Some(ky) = i.checked_sub(r).filter(|&ky| ky < kh) else {
                    continue;
                };
                // SAFETY: `ky · KW + kx < kh · KW` taps (caller).
                let t = _mm512_set1_ps(unsafe { *taps.wrapping_add(ky * KW + kx) });
                for (a, &run) in acc.iter_mut().zip(&runs) {
                    *a = _mm512_fmadd_ps(t, run, *a);
                }
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        let dst = out.wrapping_add(r * ow + x0);
        for (b, &sum) in acc.iter().enumerate() {
            // SAFETY: enabled lanes are columns below `ow` of output row `r` (caller).
            unsafe { _mm512_mask_storeu_ps(dst.wrapping_add(b * BLOCK), stores[b], sum) };
        }
    }
}
