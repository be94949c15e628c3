//! The blocked depthwise loop's `f32` tiles in AVX-512 intrinsics: `R` output rows by `B`
//! blocks of 16 columns summed in zmm registers over every tap, in window order (a multiply,
//! then an add, rounded as the reference rounds), tails by lane masks. Two output rows whose
//! windows lie wholly inside the input run together, so a row of four blocks keeps eight
//! independent chains of additions in flight. (LLVM, left to vectorize the portable loop
//! over several rows, vectorized across the taps with gathers instead: 13x slower.)

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m512, __mmask16, _mm512_add_ps, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps, _mm512_mul_ps,
    _mm512_set1_ps, _mm512_setzero_ps,
};

use graphlift_ir::Convolution;

use super::conv_geometry::Geometry;
use super::depthwise::{live_taps, padded_row, BLOCK};
use crate::target::CpuFeatures;

/// Every output row of one channel (`out`, `[oH, oW]`) from the padded phases of its input
/// rows (`padded`, as `super::depthwise` lays them out) and the taps (`taps`, `[kH, kW]`,
/// their runs starting at `starts` in a padded row). Returns `false` on a host without
/// AVX-512F or when a slice is shorter than the geometry says (having written some rows or
/// none: the caller then computes every row).
pub(super) fn rows(
    padded: &[f32],
    (g, conv): (&Geometry, &Convolution),
    (taps, starts): (&[f32], &[usize]),
    out: &mut [f32],
) -> bool {
    if !cfg!(target_arch = "x86_64")
        || !CpuFeatures::host().avx512f
        || out.len() < g.oh * g.ow
        || taps.len() < g.kh * g.kw
        || starts.len() < g.kw
    {
        return false;
    }
    let win = &conv.window;
    let (sh, dh, ph) = (win.strides[0], win.dilations[0], win.pads_begin[0]);
    let row_len = padded_row(g, conv).1;
    let step = sh * row_len;
    let taps = (taps, starts, row_len);
    // Whether output row `oy`'s window rows all lie inside the input.
    let whole = |oy: usize| {
        (oy * sh)
            .checked_sub(ph)
            .is_some_and(|top| top + g.kh.saturating_sub(1) * dh < g.h)
    };
    // The taps of the first row with a whole window (`first`): a later such row's are
    // the same, `(oy − first) · step` further on.
    let mut first: Option<FirstWhole> = None;
    let mut edge = Vec::with_capacity(g.kh * g.kw);
    let mut oy = 0;
    while oy < g.oh {
        // The row's taps, how far on they are read, the rows summed together, and the
        // furthest tap run (which every other lies before).
        let (live, shift, rows, last) = if whole(oy) {
            let (oy0, live, last) = first.get_or_insert_with(|| {
                let mut live = Vec::with_capacity(g.kh * g.kw);
                live_taps(oy, (g, conv), taps, &mut live);
                let last = live.iter().map(|&(at, _)| at).max().unwrap_or(0);
                (oy, live, last)
            });
            let pair = oy + 1 < g.oh && whole(oy + 1);
            let rows = 1 + usize::from(pair);
            ((*live).as_slice(), (oy - *oy0) * step, rows, *last)
        } else {
            live_taps(oy, (g, conv), taps, &mut edge);
            let last = edge.iter().map(|&(at, _)| at).max().unwrap_or(0);
            (edge.as_slice(), 0, 1, last)
        };
        if live.is_empty() {
            out[oy * g.ow..(oy + 1) * g.ow].fill(0.0);
            oy += 1;
            continue;
        }
        // A row outside the slice leaves the whole plane to the portable loop.
        if last + shift + (rows - 1) * step + g.ow > padded.len() {
            return false;
        }
        let dst = &mut out[oy * g.ow..(oy + rows) * g.ow];
        let from = padded[shift..].as_ptr();
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the host has AVX-512F (checked above). Every tap run read is `from + at +
        // r · step + x` for `x < oW`, `r < rows` and the row's taps `live` (for two rows
        // with whole windows, the second row's taps are exactly the first's `step` further
        // on), so it lies at or before `padded + shift + last + (rows − 1) · step + oW − 1`,
        // checked inside `padded` just above; every output written is a column `< oW` of
        // the `rows` rows of `dst`.
        unsafe {
            if rows == 2 {
                row_tiles::<2>(from, live, step, g.ow, dst.as_mut_ptr());
            } else {
                row_tiles::<1>(from, live, step, g.ow, dst.as_mut_ptr());
            }
        }
        oy += rows;
    }
    true
}

/// The first output row with a whole window, its taps (as [`live_taps`] gives them) and the
/// furthest of their runs.
type FirstWhole = (usize, Vec<(usize, f32)>, usize);

/// `R` output rows of `ow` columns at `out` (row stride `ow`): blocks of four while more than
/// six blocks are left, then the rest in one tile (its last block masked), so a row of up to
/// six blocks is one tile of `R` times as many chains of additions.
///
/// # Safety
/// AVX-512F; for every `(at, _)` of `live`, `r < R` and `x < ow`, `padded + at + r · step +
/// x` is readable; `out + r · ow + x` is writable and not otherwise borrowed.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn row_tiles<const R: usize>(
    padded: *const f32,
    live: &[(usize, f32)],
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
    let last = ((1u32 << (left - (left.div_ceil(BLOCK).max(1) - 1) * BLOCK)) - 1) as __mmask16;
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
    live: &[(usize, f32)],
    step: usize,
    (x0, ow): (usize, usize),
    out: *mut f32,
    masks: [__mmask16; B],
) {
    let mut acc: [[__m512; B]; R] = [[_mm512_setzero_ps(); B]; R];
    for &(at, t) in live {
        let tv = _mm512_set1_ps(t);
        for (r, acc) in acc.iter_mut().enumerate() {
            let run = padded.wrapping_add(at + r * step + x0);
            for (b, acc) in acc.iter_mut().enumerate() {
                // SAFETY: enabled lanes are columns `< ow` of a tap run (caller).
                let v = unsafe { _mm512_maskz_loadu_ps(masks[b], run.wrapping_add(b * BLOCK)) };
                *acc = _mm512_add_ps(*acc, _mm512_mul_ps(tv, v));
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
