//! The AVX-512 register-blocked microkernel of the packed `f32` product: one tile of up to
//! [`MR`] rows by [`NR`] columns of `c`, its accumulators held in 3 · rows zmm registers
//! over a block of `k` (BLIS's microkernel shape: broadcast one operand's column, load
//! the other's row, one FMA per accumulator).

#[cfg(target_arch = "x86_64")]
use crate::native::lanes::lane_mask;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m512, __mmask16, _mm512_add_ps, _mm512_fmadd_ps, _mm512_mask_storeu_ps,
    _mm512_maskz_loadu_ps, _mm512_set1_ps, _mm512_setzero_ps,
};

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
    /// `1..=NR`.
    pub cols: usize,
    pub k: usize,
    /// `c += a · b` when set, else `c = a · b`.
    pub accumulate: bool,
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
    // SAFETY: as the caller guarantees; each arm's row count equals `t.rows`.
    unsafe {
        if t.b_rows.is_null() {
            rows::<false>(t)
        } else {
            rows::<true>(t)
        }
    }
}

/// [`run`] for `b` addressed by row offsets (`OFFSETS`) or by its `k` stride.
///
/// # Safety
/// As [`run`], with `OFFSETS` telling whether `t.b_rows` is not null.
#[cfg(target_arch = "x86_64")]
unsafe fn rows<const OFFSETS: bool>(t: &Tile) {
    // SAFETY: as the caller guarantees; each arm's row count equals `t.rows`.
    unsafe {
        match t.rows {
            1 => tile::<1, OFFSETS>(t),
            2 => tile::<2, OFFSETS>(t),
            3 => tile::<3, OFFSETS>(t),
            4 => tile::<4, OFFSETS>(t),
            5 => tile::<5, OFFSETS>(t),
            6 => tile::<6, OFFSETS>(t),
            7 => tile::<7, OFFSETS>(t),
            _ => tile::<MR, OFFSETS>(t),
        }
    }
}

/// The tile of `R` rows. Columns past `t.cols` are masked off in every load and store
/// (AVX-512 masked accesses do not touch masked lanes), so tails in `n` are exact.
///
/// # Safety
/// As [`run`], with `R == t.rows` and `OFFSETS` telling whether `t.b_rows` is not null.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tile<const R: usize, const OFFSETS: bool>(t: &Tile) {
    let masks: [__mmask16; VECTORS] = std::array::from_fn(|v| lane_mask(t.cols, v));
    let mut acc = [[_mm512_setzero_ps(); VECTORS]; R];
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
        // SAFETY: lanes enabled by `masks` are columns `< cols` of row `p` of `b`, which
        // the caller guarantees readable; disabled lanes are not accessed.
        let bv: [__m512; VECTORS] = unsafe {
            [
                _mm512_maskz_loadu_ps(masks[0], b),
                _mm512_maskz_loadu_ps(masks[1], b.wrapping_add(LANES)),
                _mm512_maskz_loadu_ps(masks[2], b.wrapping_add(2 * LANES)),
            ]
        };
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
            let at = c.wrapping_add(v * LANES);
            // SAFETY: enabled lanes are columns `< cols` of row `i < rows` of `c`, which
            // the caller guarantees readable and writable by this call alone.
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
