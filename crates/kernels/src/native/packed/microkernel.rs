//! The AVX-512 register-blocked microkernel of the packed `f32` product: one tile of up to
//! [`MR`] rows by [`NR`] columns of `c`, its accumulators held in 3 · rows zmm registers
//! over a block of `k` (BLIS's microkernel shape: broadcast one operand's column, load
//! the other's row, one FMA per accumulator). A tile's three vectors of columns are one run
//! of `NR` columns or, for runs narrower than that, placed one by one ([`Vectors`]).

use crate::native::lanes::lane_mask;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m512, _mm512_add_ps, _mm512_fmadd_ps, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps,
    _mm512_set1_ps, _mm512_setzero_ps, _mm_prefetch, _MM_HINT_T0,
};

/// A mask of sixteen lanes (`__mmask16`).
type Mask = u16;

/// Rows of a full tile: the broadcast operand's rows per packed panel.
pub(super) const MR: usize = 8;
/// Sixteen `f32` lanes in a zmm register.
const LANES: usize = 16;
/// Vectors per row of a tile.
const VECTORS: usize = 3;
/// Columns of a full tile: the loaded operand's columns per packed panel (3 vectors, so a
/// full tile holds 24 independent FMA chains, enough to cover the FMA latency of two
/// pipes).
pub(super) const NR: usize = VECTORS * LANES;

/// One tile's operands, as element addresses: `a(i, p)` at `a + (i / MR) · a_panel + (i mod
/// MR) · a_rs + p · a_ks` (`a + i · a_rs + p · a_ks` within a group of `MR` rows, all this
/// microkernel's tile holds; the AVX2 one's holds several),
/// `b(p, j)` at `b + p · b_ks + j` (or at `b + b_rows[p] + j` when `b_rows` is not null),
/// `c(i, j)` at `c_rows[i] + c_col + j`, for `i < rows`, `j < cols`, `p < k`. The caller
/// ([`super::driver`]) checks that every one of these addresses lies in its operand's slice
/// before making a `Tile`.
pub(super) struct Tile {
    pub a: *const f32,
    pub a_rs: usize,
    pub a_ks: usize,
    /// The distance from one group of `MR` rows of `a` to the next (`MR · a_rs` for a
    /// strided operand, a whole panel for a packed one).
    pub a_panel: usize,
    pub b: *const f32,
    pub b_ks: usize,
    /// Null, or `k` offsets: where each row of `b` starts after `b` (an implicit-GEMM
    /// operand whose rows are shifted windows of one buffer, as a convolution's unrolled
    /// fields are of its padded image).
    pub b_rows: *const usize,
    /// `rows` pointers: where each row of `c` starts (before `c_col`). Rows of one matrix
    /// and rows in slices of their own (the output channels of a band of a convolution's
    /// rows, each in its own plane) are addressed alike.
    pub c_rows: *const *mut f32,
    /// The tile's first column in each row of `c`.
    pub c_col: usize,
    /// `1..=MR` (`1..=3 · MR` for the AVX2 microkernel).
    pub rows: usize,
    /// `1..=NR` (not read when `vectors` is set).
    pub cols: usize,
    pub k: usize,
    /// `c += a · b` when set, else `c = a · b`.
    pub accumulate: bool,
    /// `None` for one run of `cols` columns from `b` and `c_col`; else where each of the
    /// tile's vectors of columns lies ([`Vectors`]; AVX-512 only).
    pub vectors: Option<Vectors>,
}

/// Where each of an AVX-512 tile's [`VECTORS`] vectors of columns lies, when they are not
/// one run: the narrow runs of a band of a convolution's output rows (sixteen columns, or
/// sixty-four) fill a tile's three vectors from several runs instead of leaving two of
/// them masked off. Vector `v` reads `b(p, j)` at `b + b_cols[v] + j` (after row `p`'s
/// offset when `b_rows` is not null) and writes `c(i, j)` at `c_rows[i] + c_col +
/// c_cols[v] + j`, for `j < 16` in `masks[v]`; a vector with no lanes reads and writes
/// nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Vectors {
    pub b_cols: [usize; VECTORS],
    pub c_cols: [usize; VECTORS],
    /// [`lane_mask`] bits of each vector.
    pub masks: [u16; VECTORS],
}

impl Vectors {
    /// Every vector of columns of `runs` runs of `width` columns, run `r` from column `r ·
    /// b_stride` of `b` and `r · c_stride` of `c`, three to a tile.
    pub(super) fn of_runs(
        runs: usize,
        width: usize,
        (b_stride, c_stride): (usize, usize),
    ) -> Vec<Vectors> {
        let per_run = width.div_ceil(LANES);
        let all = (0..runs).flat_map(|r| {
            (0..per_run).map(move |v| {
                let mask: Mask = lane_mask(width, v);
                (r * b_stride + v * LANES, r * c_stride + v * LANES, mask)
            })
        });
        let mut tiles = Vec::with_capacity((runs * per_run).div_ceil(VECTORS));
        let mut next = Vectors {
            b_cols: [0; VECTORS],
            c_cols: [0; VECTORS],
            masks: [0; VECTORS],
        };
        for (i, (b, c, mask)) in all.enumerate() {
            let v = i % VECTORS;
            (next.b_cols[v], next.c_cols[v], next.masks[v]) = (b, c, mask);
            if v == VECTORS - 1 {
                tiles.push(next);
                next.masks = [0; VECTORS];
            }
        }
        if next.masks[0] != 0 {
            tiles.push(next);
        }
        tiles
    }
}

impl Tile {
    /// The address of `c(i, 0)`.
    ///
    /// # Safety
    /// `i < self.rows` (`c_rows` holds `rows` pointers).
    #[inline(always)]
    pub(super) unsafe fn c_row(&self, i: usize) -> *mut f32 {
        // SAFETY: pointer `i < rows` is readable (caller).
        unsafe { self.c_rows.add(i).read() }.wrapping_add(self.c_col)
    }
}

/// Runs `t` on the AVX-512 microkernel.
///
/// # Safety
/// The host has AVX-512F, and every address [`Tile`] names for `t`'s `rows`, `cols` and `k`
/// is inside an allocation: readable for `a` and `b`, writable (and not read by anyone
/// else during the call) for `c`.
#[cfg(target_arch = "x86_64")]
pub(super) unsafe fn run(t: &Tile) {
    // SAFETY: as the caller guarantees; each arm's flags match `t`.
    unsafe {
        match (t.b_rows.is_null(), t.vectors.is_some()) {
            (true, false) => live::<false, false>(t),
            (false, false) => live::<true, false>(t),
            (true, true) => live::<false, true>(t),
            (false, true) => live::<true, true>(t),
        }
    }
}

/// The vectors of columns `t` computes: up to the last with lanes (a tile of 32 columns, or
/// 16, leaves the others out of its loop rather than multiplying masked-off zeros).
fn live_vectors(t: &Tile) -> usize {
    match t.vectors {
        Some(v) => v.masks.iter().rposition(|&m| m != 0).map_or(0, |i| i + 1),
        None => t.cols.div_ceil(LANES).min(VECTORS),
    }
}

/// [`run`] with `OFFSETS` and `PLACED` known: the tile's number of live vectors.
///
/// # Safety
/// As [`run`], with `OFFSETS` telling whether `t.b_rows` is not null and `PLACED` whether
/// `t.vectors` is set.
#[cfg(target_arch = "x86_64")]
unsafe fn live<const OFFSETS: bool, const PLACED: bool>(t: &Tile) {
    // SAFETY: as the caller guarantees; each arm's vector count is `live_vectors(t)`.
    unsafe {
        match live_vectors(t) {
            0 => {}
            1 => rows::<1, OFFSETS, PLACED>(t),
            2 => rows::<2, OFFSETS, PLACED>(t),
            _ => rows::<VECTORS, OFFSETS, PLACED>(t),
        }
    }
}

/// [`run`] for `b` addressed by row offsets (`OFFSETS`) or by its `k` stride, its columns
/// one run or placed by [`Vectors`] (`PLACED`), `V` of them live.
///
/// # Safety
/// As [`live`], with `V == live_vectors(t)`.
#[cfg(target_arch = "x86_64")]
unsafe fn rows<const V: usize, const OFFSETS: bool, const PLACED: bool>(t: &Tile) {
    // SAFETY: as the caller guarantees; each arm's row count equals `t.rows`.
    unsafe {
        match t.rows {
            1 => tile::<1, V, OFFSETS, PLACED>(t),
            2 => tile::<2, V, OFFSETS, PLACED>(t),
            3 => tile::<3, V, OFFSETS, PLACED>(t),
            4 => tile::<4, V, OFFSETS, PLACED>(t),
            5 => tile::<5, V, OFFSETS, PLACED>(t),
            6 => tile::<6, V, OFFSETS, PLACED>(t),
            7 => tile::<7, V, OFFSETS, PLACED>(t),
            _ => tile::<MR, V, OFFSETS, PLACED>(t),
        }
    }
}

/// The tile of `R` rows and its first `V` vectors of columns. Columns past `t.cols` (or
/// outside each vector's mask) are masked off in every load and store (AVX-512 masked
/// accesses do not touch masked lanes), so tails in `n` are exact; vectors from `V` on have
/// no lanes.
///
/// # Safety
/// As [`rows`], with `R == t.rows`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tile<const R: usize, const V: usize, const OFFSETS: bool, const PLACED: bool>(t: &Tile) {
    // Each vector's columns in `b` and `c` and its lanes: constants for one run.
    let (b_cols, c_cols, masks) = match t.vectors {
        Some(v) if PLACED => (v.b_cols, v.c_cols, v.masks),
        _ => {
            let cols: [usize; VECTORS] = std::array::from_fn(|v| v * LANES);
            (cols, cols, std::array::from_fn(|v| lane_mask(t.cols, v)))
        }
    };
    // The tile's rows of `c`, fetched into L1 while the sums run: they are read, or owned
    // for writing, once the sums are done, and they are often in L3 by then.
    for i in 0..R {
        // SAFETY: `i < R == rows`.
        let c = unsafe { t.c_row(i) };
        for (&col, &mask) in c_cols[..V].iter().zip(&masks) {
            if mask != 0 {
                _mm_prefetch::<_MM_HINT_T0>(c.wrapping_add(col).cast());
            }
        }
    }
    let mut acc = [[_mm512_setzero_ps(); V]; R];
    // Row pointers of `a`; advanced by `a_ks` per step of `p`. `wrapping_add` throughout:
    // a pointer to a masked-off lane or one step past the last `p` is never dereferenced.
    let mut rows = [t.a; R];
    for (i, r) in rows.iter_mut().enumerate() {
        *r = t.a.wrapping_add(i * t.a_rs);
    }
    let mut b = t.b;
    for p in 0..t.k {
        if OFFSETS {
            // SAFETY: `b_rows` holds `k` offsets (caller), `p < k`.
            b = t.b.wrapping_add(unsafe { t.b_rows.add(p).read() });
        }
        // SAFETY: lanes enabled by `masks` are columns of row `p` of `b` the tile reads,
        // which the caller guarantees readable; disabled lanes are not accessed.
        let bv: [__m512; V] = std::array::from_fn(|v| unsafe {
            _mm512_maskz_loadu_ps(masks[v], b.wrapping_add(b_cols[v]))
        });
        for (row, acc) in rows.iter_mut().zip(acc.iter_mut()) {
            // SAFETY: `a(i, p)` for `i < R == rows`, `p < k`: readable (caller).
            let av = _mm512_set1_ps(unsafe { row.read() });
            for (acc, bv) in acc.iter_mut().zip(bv) {
                *acc = _mm512_fmadd_ps(av, bv, *acc);
            }
            *row = row.wrapping_add(t.a_ks);
        }
        b = b.wrapping_add(t.b_ks);
    }
    for (i, acc) in acc.iter().enumerate() {
        // SAFETY: `i < R == rows`.
        let c = unsafe { t.c_row(i) };
        for (v, &sum) in acc.iter().enumerate() {
            let at = c.wrapping_add(c_cols[v]);
            // SAFETY: enabled lanes are columns of row `i < rows` of `c` the tile writes,
            // which the caller guarantees readable and writable by this call alone.
            unsafe {
                let sum = if t.accumulate {
                    _mm512_add_ps(_mm512_maskz_loadu_ps(masks[v], at), sum)
                } else {
                    sum
                };
                _mm512_mask_storeu_ps(at, masks[v], sum);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every column of every run is in exactly one live lane, at its own place in `b` and
    /// `c`, and only the last tile has vectors without lanes.
    #[test]
    fn vectors_of_runs_cover_each_column_once() {
        for (runs, width) in [(1, 5), (3, 16), (4, 20), (5, 64), (2, 33), (7, 1)] {
            let (b_stride, c_stride) = (width + 3, width + 1);
            let tiles = Vectors::of_runs(runs, width, (b_stride, c_stride));
            let mut seen = vec![0; runs * width];
            for (t, v) in tiles.iter().enumerate() {
                for lane in 0..VECTORS {
                    let mask = v.masks[lane];
                    assert!(mask != 0 || t == tiles.len() - 1, "{runs} x {width}");
                    for j in (0..LANES).filter(|j| mask >> j & 1 == 1) {
                        let (r, col) = (v.c_cols[lane] / c_stride, v.c_cols[lane] % c_stride);
                        assert_eq!(v.b_cols[lane], r * b_stride + col);
                        assert!(col + j < width, "{runs} x {width}: lane past its run");
                        seen[r * width + col + j] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "{runs} x {width}: {seen:?}");
        }
    }
}
