//! The packed `f32` product's microkernel in AVX2 and FMA, for hosts without AVX-512: the
//! driver's tile (up to three groups of `MR` rows by `NR` columns, over the same packed
//! panels as the AVX-512 microkernel) as sub-tiles of up to [`SUB_ROWS`] rows by
//! [`SUB_COLUMNS`] columns, a sub-tile's rows crossing from one group to the next. Its 12
//! accumulators, two loaded vectors and one broadcast take 15 of the 16 ymm registers.
//! Columns past the tile's end are masked (`vmaskmovps`: masked lanes never touch memory),
//! so tails in `n` are exact.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m256, __m256i, _mm256_add_ps, _mm256_broadcast_ss, _mm256_cmpgt_epi32, _mm256_fmadd_ps,
    _mm256_loadu_ps, _mm256_maskload_ps, _mm256_maskstore_ps, _mm256_set1_epi32, _mm256_setr_epi32,
    _mm256_setzero_ps, _mm256_storeu_ps, _mm_prefetch, _MM_HINT_T0,
};

use super::microkernel::{Tile, MR};

/// Eight `f32` lanes in a ymm register.
const LANES: usize = 8;
/// Rows of a sub-tile.
const SUB_ROWS: usize = 6;
/// Columns of a sub-tile: two vectors, a third of a right panel.
const SUB_COLUMNS: usize = 2 * LANES;

/// Runs `t` on the AVX2 sub-tiles.
///
/// # Safety
/// The host has AVX2 and FMA, and every address [`Tile`] names for `t`'s `rows`, `cols`
/// and `k` is inside an allocation: readable for `a` and `b`, writable (and not read by
/// anyone else during the call) for `c`.
#[cfg(target_arch = "x86_64")]
pub(super) unsafe fn run(t: &Tile) {
    debug_assert!(
        t.vectors.is_none(),
        "the AVX2 tiles read one run of columns"
    );
    for j0 in (0..t.cols).step_by(SUB_COLUMNS) {
        let full = t.cols - j0 >= SUB_COLUMNS;
        let mut i0 = 0;
        while i0 < t.rows {
            let rows = sub_rows(t.rows - i0);
            // SAFETY: rows `i0..i0 + rows` and columns `j0..min(j0 + 16, cols)` of the
            // tile, whose addresses the caller guarantees; `rows` is the arm's `R`.
            unsafe {
                match (rows, full) {
                    (1, true) => sub::<1, true>(t, i0, j0),
                    (2, true) => sub::<2, true>(t, i0, j0),
                    (3, true) => sub::<3, true>(t, i0, j0),
                    (4, true) => sub::<4, true>(t, i0, j0),
                    (5, true) => sub::<5, true>(t, i0, j0),
                    (_, true) => sub::<6, true>(t, i0, j0),
                    (1, false) => sub::<1, false>(t, i0, j0),
                    (2, false) => sub::<2, false>(t, i0, j0),
                    (3, false) => sub::<3, false>(t, i0, j0),
                    (4, false) => sub::<4, false>(t, i0, j0),
                    (5, false) => sub::<5, false>(t, i0, j0),
                    (_, false) => sub::<6, false>(t, i0, j0),
                }
            }
            i0 += rows;
        }
    }
}

/// The rows of the next sub-tile when `left` rows of the tile remain: [`SUB_ROWS`], but the
/// last seven or eight as four and three or four. A sub-tile of one or two rows has two or
/// four accumulators, too few to cover the FMA latency of two pipes (eight), so it runs at
/// half speed or less; four rows have eight. (A 128-row product's last tile, eight rows,
/// took ten FMA cycles a step of `k` as six and two, and takes eight as four and four.)
fn sub_rows(left: usize) -> usize {
    match left {
        7 | 8 => 4,
        _ => left.min(SUB_ROWS),
    }
}

/// The sub-tile of rows `i0..i0 + R` and columns from `j0`: sixteen of them when `FULL`,
/// else the `t.cols − j0 < 16` left, under lane masks.
///
/// # Safety
/// As [`run`], with `i0 + R ≤ t.rows`, `j0 < t.cols`, and `FULL` only when `j0 + 16 ≤
/// t.cols`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sub<const R: usize, const FULL: bool>(t: &Tile, i0: usize, j0: usize) {
    let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    // Lanes inside the tile's columns (`cols − j0 < 16` when not `FULL`, so the casts are
    // exact).
    let live = t.cols - j0;
    let masks: [__m256i; 2] = [
        _mm256_cmpgt_epi32(_mm256_set1_epi32(live as i32), lanes),
        _mm256_cmpgt_epi32(_mm256_set1_epi32(live as i32 - LANES as i32), lanes),
    ];
    // The sub-tile's rows of `c`, fetched into L1 while the sums run.
    for i in 0..R {
        // SAFETY: `i0 + i < i0 + R ≤ rows`.
        let c = unsafe { t.c_row(i0 + i) }.wrapping_add(j0);
        _mm_prefetch::<_MM_HINT_T0>(c.cast());
        _mm_prefetch::<_MM_HINT_T0>(c.wrapping_add(2 * LANES - 1).cast());
    }
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
    // Row pointers of `a`, advanced by `a_ks` per step of `p`; `wrapping_add` throughout,
    // as a pointer one step past the last `p` is never dereferenced.
    let mut rows = [t.a; R];
    for (i, r) in rows.iter_mut().enumerate() {
        let row = i0 + i;
        *r =
            t.a.wrapping_add((row / MR) * t.a_panel + (row % MR) * t.a_rs);
    }
    let mut b = t.b.wrapping_add(j0);
    for p in 0..t.k {
        if !t.b_rows.is_null() {
            // SAFETY: `b_rows` holds `k` offsets (caller), `p < k`.
            b = t.b.wrapping_add(unsafe { t.b_rows.add(p).read() } + j0);
        }
        // SAFETY: enabled lanes are columns `< cols` of row `p` of `b` (caller).
        let bv = unsafe {
            [
                load::<FULL>(b, masks[0]),
                load::<FULL>(b.wrapping_add(LANES), masks[1]),
            ]
        };
        for (row, acc) in rows.iter_mut().zip(acc.iter_mut()) {
            // SAFETY: `a(i, p)` for `i < rows`, `p < k`: readable (caller).
            let av = _mm256_broadcast_ss(unsafe { &**row });
            acc[0] = _mm256_fmadd_ps(av, bv[0], acc[0]);
            acc[1] = _mm256_fmadd_ps(av, bv[1], acc[1]);
            *row = row.wrapping_add(t.a_ks);
        }
        if t.b_rows.is_null() {
            b = b.wrapping_add(t.b_ks);
        }
    }
    for (i, acc) in acc.iter().enumerate() {
        // SAFETY: `i0 + i < i0 + R ≤ rows`.
        let c = unsafe { t.c_row(i0 + i) }.wrapping_add(j0);
        for (v, &sum) in acc.iter().enumerate() {
            let at = c.wrapping_add(v * LANES);
            // SAFETY: enabled lanes are columns `< cols` of row `i0 + i < rows` of `c`,
            // readable and writable by this call alone (caller).
            unsafe {
                let sum = if t.accumulate {
                    _mm256_add_ps(load::<FULL>(at, masks[v]), sum)
                } else {
                    sum
                };
                if FULL {
                    _mm256_storeu_ps(at, sum);
                } else {
                    _mm256_maskstore_ps(at, masks[v], sum);
                }
            }
        }
    }
}

/// The vector at `at`: all eight lanes when `FULL`, else the lanes `mask` enables (the
/// others zero, their memory not accessed).
///
/// # Safety
/// AVX2; the enabled lanes' addresses are readable.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
unsafe fn load<const FULL: bool>(at: *const f32, mask: __m256i) -> __m256 {
    // SAFETY: as the caller guarantees.
    unsafe {
        if FULL {
            _mm256_loadu_ps(at)
        } else {
            _mm256_maskload_ps(at, mask)
        }
    }
}
