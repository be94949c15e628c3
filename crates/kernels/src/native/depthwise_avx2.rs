//! The blocked depthwise loop's `f32` tiles in AVX2 and FMA intrinsics, for hosts without
//! AVX-512: `R` output rows by `B` blocks of 8 columns summed in ymm registers over every
//! tap, in window order (one fused multiply-add per tap). The row's last block, when short,
//! is loaded and stored under a lane mask (`vmaskmovps`: disabled lanes never touch
//! memory); the other blocks use plain unaligned loads and stores.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m256, __m256i, _mm256_cmpgt_epi32, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_maskload_ps,
    _mm256_maskstore_ps, _mm256_set1_epi32, _mm256_set1_ps, _mm256_setr_epi32, _mm256_setzero_ps,
    _mm256_storeu_ps,
};

/// Columns of one block (a ymm register of `f32`).
#[cfg(target_arch = "x86_64")]
const BLOCK: usize = 8;

/// `R` output rows of `ow` columns at `out` (row stride `ow`): tiles of `8 / R` blocks
/// (eight independent chains of fused multiply-adds, which cover their latency of four
/// cycles at two a cycle) while more than `12 / R` blocks are left, then the rest in one tile
/// of up to `12 / R` (12 accumulators beside the tap and a load, within the 16 ymm
/// registers), its last block masked when the row ends inside it. (One row in tiles of four
/// blocks kept half the multiply-adds waiting: PP-OCR's 5x5 windows over two-row planes ran
/// at half the speed of these.)
///
/// # Safety
/// AVX2 and FMA; for every `(at, tap)` of `live`, `tap` indexes the taps and, for `r < R`
/// and `x < ow`, `padded + at + r · step + x` is readable; `out + r · ow + x` is writable
/// and not otherwise borrowed.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn row_tiles<const R: usize>(
    padded: *const f32,
    live: (&[(usize, usize)], &[f32]),
    step: usize,
    ow: usize,
    out: *mut f32,
) {
    let mut x0 = 0;
    // SAFETY (each call): columns `x0..x0 + B · 8`, the last block cut at `ow`, as the
    // caller guarantees.
    while (ow - x0).div_ceil(BLOCK) > 12 / R {
        unsafe {
            match R {
                1 => tile::<R, 8, false>(padded, live, step, (x0, ow), out, 0),
                _ => tile::<R, 4, false>(padded, live, step, (x0, ow), out, 0),
            }
        }
        x0 += 8 / R * BLOCK;
    }
    let left = ow - x0;
    let tail = left % BLOCK;
    let at = (x0, ow);
    unsafe {
        match (R, left.div_ceil(BLOCK)) {
            (_, 0) => {}
            (_, 1) => rest::<R, 1>(padded, live, step, at, out, tail),
            (_, 2) => rest::<R, 2>(padded, live, step, at, out, tail),
            (_, 3) => rest::<R, 3>(padded, live, step, at, out, tail),
            (_, 4) => rest::<R, 4>(padded, live, step, at, out, tail),
            (_, 5) => rest::<R, 5>(padded, live, step, at, out, tail),
            (1, 7) => rest::<1, 7>(padded, live, step, at, out, tail),
            (1, 8) => rest::<1, 8>(padded, live, step, at, out, tail),
            (1, 9) => rest::<1, 9>(padded, live, step, at, out, tail),
            (1, 10) => rest::<1, 10>(padded, live, step, at, out, tail),
            (1, 11) => rest::<1, 11>(padded, live, step, at, out, tail),
            (1, 12) => rest::<1, 12>(padded, live, step, at, out, tail),
            // Six blocks (or more for two rows: never, by the loop above).
            _ => rest::<R, 6>(padded, live, step, at, out, tail),
        }
    }
}

/// The row's last `B` blocks from `x0`: the last one masked to its first `tail` lanes when
/// `tail > 0`.
///
/// # Safety
/// As [`row_tiles`], for columns `x0..ow`, `ow − x0` being `B · 8` (`tail == 0`) or
/// `(B − 1) · 8 + tail`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rest<const R: usize, const B: usize>(
    padded: *const f32,
    live: (&[(usize, usize)], &[f32]),
    step: usize,
    at: (usize, usize),
    out: *mut f32,
    tail: usize,
) {
    // SAFETY: as the caller guarantees.
    unsafe {
        if tail == 0 {
            tile::<R, B, false>(padded, live, step, at, out, 0);
        } else {
            tile::<R, B, true>(padded, live, step, at, out, tail);
        }
    }
}

/// Columns `x0..x0 + B · 8` of `R` rows; with `MASKED`, only the first `tail` lanes of the
/// last block are read and written.
///
/// # Safety
/// As [`row_tiles`], for the columns read and written.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile<const R: usize, const B: usize, const MASKED: bool>(
    padded: *const f32,
    (live, taps): (&[(usize, usize)], &[f32]),
    step: usize,
    (x0, ow): (usize, usize),
    out: *mut f32,
    tail: usize,
) {
    let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    // Lanes below `tail` all ones (`tail ≤ 7`, so the cast is exact).
    let mask: __m256i = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail as i32), lanes);
    let mut acc: [[__m256; B]; R] = [[_mm256_setzero_ps(); B]; R];
    for &(at, tap) in live {
        let tv = _mm256_set1_ps(taps[tap]);
        for (r, acc) in acc.iter_mut().enumerate() {
            let run = padded.wrapping_add(at + r * step + x0);
            for (b, acc) in acc.iter_mut().enumerate() {
                let p = run.wrapping_add(b * BLOCK);
                // SAFETY: a whole block's columns, or the masked block's first `tail`,
                // are columns `< ow` of a tap run (caller).
                let v = unsafe {
                    if MASKED && b + 1 == B {
                        _mm256_maskload_ps(p, mask)
                    } else {
                        _mm256_loadu_ps(p)
                    }
                };
                *acc = _mm256_fmadd_ps(tv, v, *acc);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        let row = out.wrapping_add(r * ow + x0);
        for (b, &sum) in acc.iter().enumerate() {
            let p = row.wrapping_add(b * BLOCK);
            // SAFETY: as for the loads, in output row `r` (caller).
            unsafe {
                if MASKED && b + 1 == B {
                    _mm256_maskstore_ps(p, mask, sum);
                } else {
                    _mm256_storeu_ps(p, sum);
                }
            }
        }
    }
}
