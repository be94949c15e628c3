//! The blocked depthwise loop's `f32` tiles in AVX-512 intrinsics: `R` output rows by `B`
//! blocks of 16 columns summed in zmm registers over every tap, in window order (one fused
//! multiply-add per tap), tails by lane masks. (LLVM, left to vectorize the portable loop
//! over several rows, vectorized across the taps with gathers instead: 13x slower.)

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m512, __mmask16, _mm512_fmadd_ps, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps,
    _mm512_set1_ps, _mm512_setzero_ps,
};

#[cfg(target_arch = "x86_64")]
use super::lanes::lane_mask;

/// Columns of one block (a zmm register of `f32`).
#[cfg(target_arch = "x86_64")]
const BLOCK: usize = 16;

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
pub(super) unsafe fn row_tiles<const R: usize>(
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
