//! The packed product's one-row case, `out = v · b` for a vector `v` and part of a matrix
//! packed for the right side: a recurrent op's step multiplies its state by the recurrent
//! weights this way, once per time step. The [`super::driver`]'s tile of one row holds
//! three accumulators, one FMA chain per 16 columns, so it waits on the FMA latency; here
//! up to [`PANELS`] panels run side by side (twelve independent chains, enough for two FMA
//! pipes), each panel's `k` rows read once, in order.

use std::ops::Range;

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m256, __m512, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_set1_ps, _mm256_setzero_ps,
    _mm256_storeu_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_set1_ps, _mm512_setzero_ps,
    _mm512_storeu_ps,
};

use super::microkernel::NR;
use super::{PackedWeights, Side};
use crate::native::lanes::FloatTiles;

/// Panels of [`NR`] columns run side by side on AVX-512 (twelve zmm accumulators).
const PANELS: usize = 4;
/// Panels run side by side on AVX2 (twelve ymm accumulators, of 16 registers).
const PANELS_AVX2: usize = 2;
/// Sixteen `f32` lanes in a zmm register.
const LANES: usize = 16;
/// Vectors per panel row.
const VECTORS: usize = NR / LANES;
/// Eight `f32` lanes in a ymm register.
const LANES_AVX2: usize = 8;
/// Vectors per panel row on AVX2.
const VECTORS_AVX2: usize = NR / LANES_AVX2;

/// `out[j − cols.start] = Σ_p v[p] · b(first_row + p, j)` for `j` in `cols`, `b` matrix
/// `matrix` of `w` (packed for the right side; rows `first_row..first_row + v.len()` of
/// it, so a product over part of its `k`). Sums run in `f32` in order of `p`. Returns
/// `false`, writing nothing, when the host runs no packed microkernel (neither AVX-512F
/// nor AVX2 and FMA) or the operands do not fit
/// (`w` packed for the left side, `matrix`, the rows or `cols` outside `w`, or `out` not
/// `cols.len()` long); the caller then runs another product.
pub(in crate::native) fn gemv(
    w: &PackedWeights,
    matrix: usize,
    first_row: usize,
    v: &[f32],
    cols: Range<usize>,
    out: &mut [f32],
) -> bool {
    FloatTiles::host()
        .is_some_and(|kernel| gemv_on(kernel, (w, matrix, first_row), v, cols.clone(), out))
}

/// As [`gemv`], on `kernel`; `false` as well where the host does not run it.
pub(super) fn gemv_on(
    kernel: FloatTiles,
    (w, matrix, first_row): (&PackedWeights, usize, usize),
    v: &[f32],
    cols: Range<usize>,
    out: &mut [f32],
) -> bool {
    let fits = w.side == Side::Right
        && matrix < w.count
        && first_row
            .checked_add(v.len())
            .is_some_and(|end| end <= w.rows)
        && cols.start <= cols.end
        && cols.end <= w.cols
        && out.len() == cols.len();
    if !kernel.runs() || !fits {
        return false;
    }
    if v.is_empty() || cols.is_empty() {
        out.fill(0.0);
        return true;
    }
    let panel_len = NR * w.rows;
    let base = w.matrix_offset(matrix) + first_row * NR;
    let end_panel = cols.end.div_ceil(NR);
    // One past the last element a pass reads: whole (zero-padded) rows `..v.len()` of
    // panels `..end_panel`, which the matrix holds (`w.cols.div_ceil(NR)` whole panels).
    let last = base + (end_panel - 1) * panel_len + (v.len() - 1) * NR + NR;
    if last > w.data.len() {
        return false;
    }
    let most = match kernel {
        FloatTiles::Avx512 => PANELS,
        FloatTiles::Avx2 => PANELS_AVX2,
    };
    let mut panel = cols.start / NR;
    while panel < end_panel {
        let group = most.min(end_panel - panel);
        let mut sums = [0f32; PANELS * NR];
        let b = w.data[base + panel * panel_len..].as_ptr();
        // SAFETY: the host runs `kernel` (checked above). A pass of `group` panels reads
        // panel rows `0..v.len()` of panels `panel..panel + group ≤ end_panel` from `b`:
        // elements below `last ≤ w.data.len()` of `w.data` (checked above); it writes
        // `group · NR ≤ sums.len()` elements of `sums`.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            match (kernel, group) {
                (FloatTiles::Avx512, 1) => pass::<1>(b, panel_len, v, &mut sums),
                (FloatTiles::Avx512, 2) => pass::<2>(b, panel_len, v, &mut sums),
                (FloatTiles::Avx512, 3) => pass::<3>(b, panel_len, v, &mut sums),
                (FloatTiles::Avx512, _) => pass::<PANELS>(b, panel_len, v, &mut sums),
                (FloatTiles::Avx2, 1) => pass_avx2::<1>(b, panel_len, v, &mut sums),
                (FloatTiles::Avx2, _) => pass_avx2::<PANELS_AVX2>(b, panel_len, v, &mut sums),
            }
        }
        let (g0, g1) = (panel * NR, (panel + group) * NR);
        let (lo, hi) = (cols.start.max(g0), cols.end.min(g1));
        out[lo - cols.start..hi - cols.start].copy_from_slice(&sums[lo - g0..hi - g0]);
        panel += group;
    }
    true
}

/// `sums[q · NR + j] = Σ_p v[p] · b[q · panel_len + p · NR + j]` for `q < P`, `j < NR`.
///
/// # Safety
/// The host has AVX-512F and every address named is readable.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn pass<const P: usize>(
    b: *const f32,
    panel_len: usize,
    v: &[f32],
    sums: &mut [f32; PANELS * NR],
) {
    let mut acc = [[_mm512_setzero_ps(); VECTORS]; P];
    let mut row = b;
    for &x in v {
        let av = _mm512_set1_ps(x);
        for (q, acc) in acc.iter_mut().enumerate() {
            let at = row.wrapping_add(q * panel_len);
            for (l, acc) in acc.iter_mut().enumerate() {
                // SAFETY: row `p` of panel `q`, lanes `l · 16..(l + 1) · 16 ≤ NR`: readable
                // (caller).
                let bv: __m512 = unsafe { _mm512_loadu_ps(at.wrapping_add(l * LANES)) };
                *acc = _mm512_fmadd_ps(av, bv, *acc);
            }
        }
        row = row.wrapping_add(NR);
    }
    for (q, acc) in acc.iter().enumerate() {
        for (l, &sum) in acc.iter().enumerate() {
            // SAFETY: `q · NR + (l + 1) · 16 ≤ P · NR ≤ sums.len()`.
            unsafe { _mm512_storeu_ps(sums.as_mut_ptr().add(q * NR + l * LANES), sum) };
        }
    }
}

/// [`pass`] in AVX2 and FMA, `P ≤ PANELS_AVX2` panels at a time.
///
/// # Safety
/// The host has AVX2 and FMA and every address named is readable.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn pass_avx2<const P: usize>(
    b: *const f32,
    panel_len: usize,
    v: &[f32],
    sums: &mut [f32; PANELS * NR],
) {
    let mut acc = [[_mm256_setzero_ps(); VECTORS_AVX2]; P];
    let mut row = b;
    for &x in v {
        let av = _mm256_set1_ps(x);
        for (q, acc) in acc.iter_mut().enumerate() {
            let at = row.wrapping_add(q * panel_len);
            for (l, acc) in acc.iter_mut().enumerate() {
                // SAFETY: row `p` of panel `q`, lanes `l · 8..(l + 1) · 8 ≤ NR`: readable
                // (caller).
                let bv: __m256 = unsafe { _mm256_loadu_ps(at.wrapping_add(l * LANES_AVX2)) };
                *acc = _mm256_fmadd_ps(av, bv, *acc);
            }
        }
        row = row.wrapping_add(NR);
    }
    for (q, acc) in acc.iter().enumerate() {
        for (l, &sum) in acc.iter().enumerate() {
            // SAFETY: `q · NR + (l + 1) · 8 ≤ P · NR ≤ sums.len()`.
            unsafe { _mm256_storeu_ps(sums.as_mut_ptr().add(q * NR + l * LANES_AVX2), sum) };
        }
    }
}
