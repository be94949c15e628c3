//! The blocked depthwise loop's `f32` tiles in AVX-512 intrinsics: `R` output rows by `B`
//! blocks of 16 columns summed in zmm registers over every tap, in window order (one fused
//! multiply-add per tap: half the instructions of a multiply and an add, one rounding fewer
//! than the reference per tap), tails by lane masks. Two output rows whose windows lie
//! wholly inside the input run together, so a row of four blocks keeps eight independent
//! chains of sums in flight. (LLVM, left to vectorize the portable loop
//! over several rows, vectorized across the taps with gathers instead: 13x slower.)

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m512, __mmask16, _mm512_fmadd_ps, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps,
    _mm512_set1_ps, _mm512_setzero_ps,
};

use std::ops::Range;

use graphlift_ir::Convolution;

use super::conv_geometry::Geometry;
use super::depthwise::{live_taps, padded_row, BLOCK};
use super::depthwise_shift;
#[cfg(target_arch = "x86_64")]
use super::lanes::lane_mask;
use super::packed::Element;
use crate::target::CpuFeatures;

/// The taps every output row reads inside the input, as (where the tap's run starts in the
/// padded rows, the tap's index in the window), in window order: the same for every channel
/// of a depthwise convolution, so made once per block of channels.
pub(super) struct RowTaps {
    entries: Vec<(usize, usize)>,
    /// Per output row: its entries, whether its window is whole (every window row inside
    /// the input), and the furthest of its runs' starts.
    rows: Vec<(Range<usize>, bool, usize)>,
}

impl RowTaps {
    /// The rows' taps of `conv` over geometry `g`, the runs of a filter row's taps starting
    /// at `starts` in a padded row.
    pub(super) fn of(g: &Geometry, conv: &Convolution, starts: &[usize]) -> RowTaps {
        let row_len = padded_row(g, conv).1;
        let indices: Vec<usize> = (0..g.kh * g.kw).collect();
        let (mut entries, mut rows, mut live) = (Vec::new(), Vec::new(), Vec::new());
        for oy in 0..g.oh {
            let whole = live_taps(oy, (g, conv), (&indices, starts, row_len), &mut live);
            let last = live.iter().map(|&(at, _)| at).max().unwrap_or(0);
            rows.push((entries.len()..entries.len() + live.len(), whole, last));
            entries.extend_from_slice(&live);
        }
        RowTaps { entries, rows }
    }
}

/// Whether [`rows`] runs for elements of type `T` on this host (`f32`, AVX-512F).
pub(super) fn available<T: Element>() -> bool {
    cfg!(target_arch = "x86_64") && T::as_f32(&[]).is_some() && CpuFeatures::host().avx512f
}

/// Every output row of one channel (`out`, `[oH, oW]`) from the padded phases of its input
/// rows (`padded`, as `super::depthwise` lays them out) and its taps (`taps`, `[kH, kW]`,
/// read where `row_taps` says). Returns `false` on a host without AVX-512F or when a slice
/// is shorter than the geometry says (having written some rows or none: the caller then
/// computes every row).
pub(super) fn rows(
    padded: &[f32],
    (g, conv): (&Geometry, &Convolution),
    (taps, row_taps): (&[f32], &RowTaps),
    out: &mut [f32],
) -> bool {
    if !cfg!(target_arch = "x86_64")
        || !CpuFeatures::host().avx512f
        || out.len() < g.oh * g.ow
        || taps.len() < g.kh * g.kw
        || row_taps.rows.len() < g.oh
    {
        return false;
    }
    let step = conv.window.strides[0] * padded_row(g, conv).1;
    let w = &conv.window;
    let unit = w.strides.iter().chain(&w.dilations).all(|&v| v == 1);
    let mut oy = 0;
    while oy < g.oh {
        let (span, whole, last) = row_taps.rows[oy].clone();
        let live = &row_taps.entries[span];
        // Two rows with whole windows read the same taps `step` elements apart.
        let pair = whole && oy + 1 < g.oh && row_taps.rows[oy + 1].1;
        let rows = 1 + usize::from(pair);
        if live.is_empty() {
            out[oy * g.ow..(oy + 1) * g.ow].fill(0.0);
            oy += 1;
            continue;
        }
        // A row outside the slice leaves the whole plane to the portable loop.
        if last + (rows - 1) * step + g.ow > padded.len() {
            return false;
        }
        let dst = &mut out[oy * g.ow..(oy + rows) * g.ow];
        // Unit strides and dilations, windows 3 or 5 wide: the rows' runs shifted in
        // registers (`super::depthwise_shift`). The window rows inside the input are
        // consecutive, `kh` of them from `ky0` (all of them for a pair), read from the
        // first live tap's row on.
        let row_len = padded_row(g, conv).1;
        let (first, ky0) = (live[0].0, live[0].1 / g.kw.max(1));
        let kh = live.len() / g.kw.max(1);
        let shift = unit
            && matches!(g.kw, 3 | 5)
            && first + (kh + rows - 1) * row_len <= padded.len()
            && (ky0 + kh) * g.kw <= taps.len();
        #[cfg(target_arch = "x86_64")]
        if shift {
            let (p, o, t) = (
                padded[first..].as_ptr(),
                dst.as_mut_ptr(),
                taps[ky0 * g.kw..].as_ptr(),
            );
            let at = (row_len, kh);
            // SAFETY: the host has AVX-512F (checked above); the `kh + rows − 1` rows of
            // `row_len` from `first` lie inside `padded` and window rows `ky0..ky0 + kh`
            // inside `taps` (checked just above); `row_len = oW + kW − 1` (unit strides and
            // dilations); `dst` holds `rows` output rows.
            unsafe {
                match (rows, g.kw) {
                    (2, 3) => depthwise_shift::row_tiles::<2, 3>(p, at, t, g.ow, o),
                    (2, _) => depthwise_shift::row_tiles::<2, 5>(p, at, t, g.ow, o),
                    (_, 3) => depthwise_shift::row_tiles::<1, 3>(p, at, t, g.ow, o),
                    _ => depthwise_shift::row_tiles::<1, 5>(p, at, t, g.ow, o),
                }
            }
            oy += rows;
            continue;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the host has AVX-512F (checked above). Every tap run read is `padded + at
        // + r · step + x` for `x < oW`, `r < rows` and the row's taps `live` (for two rows
        // with whole windows, the second row's taps are exactly the first's `step` further
        // on), so it lies at or before `padded + last + (rows − 1) · step + oW − 1`,
        // checked inside `padded` just above; each tap index is below `kH · kW ≤
        // taps.len()` (checked above); every output written is a column `< oW` of the
        // `rows` rows of `dst`.
        unsafe {
            if rows == 2 {
                row_tiles::<2>(padded.as_ptr(), (live, taps), step, g.ow, dst.as_mut_ptr());
            } else {
                row_tiles::<1>(padded.as_ptr(), (live, taps), step, g.ow, dst.as_mut_ptr());
            }
        }
        oy += rows;
    }
    true
}

/// `R` output rows of `ow` columns at `out` (row stride `ow`): blocks of four while more than
/// six blocks are left, then the rest in one tile (its last block masked), so a row of up to
/// six blocks is one tile of `R` times as many chains of additions.
///
/// # Safety
/// AVX-512F; for every `(at, tap)` of `live`, `tap` indexes the taps and, for `r < R` and
/// `x < ow`, `padded + at + r · step + x` is readable; `out + r · ow + x` is writable and not
/// otherwise borrowed.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn row_tiles<const R: usize>(
    padded: *const f32,
    live: (&[(usize, usize)], &[f32]),
    step: usize,
    ow: usize,
    out: *mut f32,
) {
    let mut x0 = 0;
    // SAFETY (each call): columns `x0..x0 + blocks · 16`, masked to `< ow`, as the caller
    // guarantees.
    while (ow - x0).div_ceil(BLOCK) > 6 {
        unsafe { tile::<R, 4>(padded, live, step, (x0, ow), out, [__mmask16::MAX; 4]) };
        x0 += 4 * BLOCK;
    }
    let left = ow - x0;
    let last = lane_mask(left, left.div_ceil(BLOCK).max(1) - 1);
    let at = (x0, ow);
    let m = __mmask16::MAX;
    unsafe {
        match left.div_ceil(BLOCK) {
            0 => {}
            1 => tile::<R, 1>(padded, live, step, at, out, [last]),
            2 => tile::<R, 2>(padded, live, step, at, out, [m, last]),
            3 => tile::<R, 3>(padded, live, step, at, out, [m, m, last]),
            4 => tile::<R, 4>(padded, live, step, at, out, [m, m, m, last]),
            5 => tile::<R, 5>(padded, live, step, at, out, [m, m, m, m, last]),
            _ => tile::<R, 6>(padded, live, step, at, out, [m, m, m, m, m, last]),
        }
    }
}

/// Columns `x0..x0 + B · 16` (lanes enabled by `masks`, one per block) of `R` rows.
///
/// # Safety
/// As [`row_tiles`], for the enabled lanes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tile<const R: usize, const B: usize>(
    padded: *const f32,
    (live, taps): (&[(usize, usize)], &[f32]),
    step: usize,
    (x0, ow): (usize, usize),
    out: *mut f32,
    masks: [__mmask16; B],
) {
    let mut acc: [[__m512; B]; R] = [[_mm512_setzero_ps(); B]; R];
    for &(at, tap) in live {
        let tv = _mm512_set1_ps(taps[tap]);
        for (r, acc) in acc.iter_mut().enumerate() {
            let run = padded.wrapping_add(at + r * step + x0);
            for (b, acc) in acc.iter_mut().enumerate() {
                // SAFETY: enabled lanes are columns `< ow` of a tap run (caller).
                let v = unsafe { _mm512_maskz_loadu_ps(masks[b], run.wrapping_add(b * BLOCK)) };
                *acc = _mm512_fmadd_ps(tv, v, *acc);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        let row = out.wrapping_add(r * ow + x0);
        for (b, &sum) in acc.iter().enumerate() {
            // SAFETY: enabled lanes are columns `< ow` of output row `r` (caller).
            unsafe { _mm512_mask_storeu_ps(row.wrapping_add(b * BLOCK), masks[b], sum) };
        }
    }
}
