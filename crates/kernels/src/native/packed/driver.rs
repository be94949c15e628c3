//! The packed product's loops: `c = a · b` (or `c += a · b`) tile by tile over the
//! microkernel, `k` blocked to [`KC`] so that the loaded operand's micro-panel stays in L1
//! while every row tile of `a` passes over it (BLIS's loop order, with `nc = NR`). Every
//! extent and slice length is checked here before the first tile runs.

use super::microkernel::{Tile, MR, NR};
use super::{PackedWeights, Side};
use crate::native::lanes::FloatTiles;

/// Steps of `k` per block: a full micro-panel of the loaded operand is `KC · NR` `f32`
/// (24 KiB), half of a 48 KiB L1.
const KC: usize = 128;

/// The broadcast operand `a` (`m × k`) of a packed product.
#[derive(Clone, Copy)]
pub(in crate::native) enum Lhs<'a> {
    /// `a(i, p)` at `data[i · rs + p · ks]`.
    Strided {
        data: &'a [f32],
        rs: usize,
        ks: usize,
    },
    /// Rows `first_row..first_row + m` (`first_row` a multiple of the panel height) of
    /// matrix `matrix` of weights packed for the left side.
    Packed {
        w: &'a PackedWeights,
        matrix: usize,
        first_row: usize,
    },
}

/// The loaded operand `b` (`k × n`) of a packed product.
#[derive(Clone, Copy)]
pub(in crate::native) enum Rhs<'a> {
    /// `b(p, j)` at `data[p · ks + j]` (unit column stride).
    Strided { data: &'a [f32], ks: usize },
    /// `b(p, j)` at `data[rows[p] + j]`: rows that are windows of one buffer at any offsets
    /// (an implicit GEMM: a stride-1 convolution's unrolled fields read from its padded
    /// image without writing them out).
    Rows { data: &'a [f32], rows: &'a [usize] },
    /// Matrix `matrix` of weights packed for the right side.
    Packed { w: &'a PackedWeights, matrix: usize },
    /// Rows `first..first + k` of matrix `matrix` of weights packed for the right side (a
    /// product over part of the packed `k`), all its columns.
    PackedRows {
        w: &'a PackedWeights,
        matrix: usize,
        first: usize,
    },
}

/// The index one past the last element `rows × cols` addresses with strides `(rs, cs)`
/// (0 when empty), `None` on overflow.
fn extent(rows: usize, cols: usize, rs: usize, cs: usize) -> Option<usize> {
    if rows == 0 || cols == 0 {
        return Some(0);
    }
    (rows - 1)
        .checked_mul(rs)?
        .checked_add((cols - 1).checked_mul(cs)?)?
        .checked_add(1)
}

/// Whether `lhs` holds an `m × k` operand (every address in its slice or panel).
fn lhs_fits(lhs: &Lhs<'_>, m: usize, k: usize) -> bool {
    match *lhs {
        Lhs::Strided { data, rs, ks } => extent(m, k, rs, ks).is_some_and(|e| e <= data.len()),
        Lhs::Packed {
            w,
            matrix,
            first_row,
        } => {
            w.side == Side::Left
                && matrix < w.count
                && w.cols == k
                && first_row.is_multiple_of(MR)
                && first_row.checked_add(m).is_some_and(|end| end <= w.rows)
        }
    }
}

/// Whether `rhs` holds a `k × n` operand.
fn rhs_fits(rhs: &Rhs<'_>, k: usize, n: usize) -> bool {
    match *rhs {
        Rhs::Strided { data, ks } => extent(k, n, ks, 1).is_some_and(|e| e <= data.len()),
        Rhs::Rows { data, rows } => {
            rows.len() == k
                && (n == 0
                    || rows
                        .iter()
                        .all(|&r| r.checked_add(n).is_some_and(|e| e <= data.len())))
        }
        Rhs::Packed { w, matrix } => {
            w.side == Side::Right && matrix < w.count && (w.rows, w.cols) == (k, n)
        }
        Rhs::PackedRows { w, matrix, first } => {
            w.side == Side::Right
                && matrix < w.count
                && w.cols == n
                && first.checked_add(k).is_some_and(|end| end <= w.rows)
        }
    }
}

/// `c = a · b` for `a` `m × k`, `b` `k × n`, into `c` with row stride `ldc` (unit column
/// stride); with `accumulate`, `c += a · b`, on the widest microkernel the host runs
/// (`FloatTiles::host`). Returns `false`, writing nothing, when it runs none (neither
/// AVX-512F nor AVX2 and FMA) or an operand does not hold its extents (the caller then runs
/// the `gemm` crate). Sums run in `f32` in order of `p` within each [`KC`] block, blocks
/// added in order: the result differs from another summation order by rounding only.
pub(in crate::native) fn product(
    c: (&mut [f32], usize),
    lhs: Lhs<'_>,
    rhs: Rhs<'_>,
    extents: (usize, usize, usize),
    accumulate: bool,
) -> bool {
    FloatTiles::host().is_some_and(|kernel| product_on(kernel, c, (lhs, rhs), extents, accumulate))
}

/// As [`product`], on `kernel`; `false` as well where the host does not run it.
pub(super) fn product_on(
    kernel: FloatTiles,
    (c, ldc): (&mut [f32], usize),
    (lhs, rhs): (Lhs<'_>, Rhs<'_>),
    (m, k, n): (usize, usize, usize),
    accumulate: bool,
) -> bool {
    let c_fits = ldc >= n && extent(m, n, ldc, 1).is_some_and(|e| e <= c.len());
    if !kernel.runs() || !c_fits || !lhs_fits(&lhs, m, k) || !rhs_fits(&rhs, k, n) {
        return false;
    }
    if m == 0 || n == 0 {
        return true;
    }
    if k == 0 {
        if !accumulate {
            for row in c.chunks_mut(ldc).take(m) {
                row[..n].fill(0.0);
            }
        }
        return true;
    }
    // Address of `a(i, p)` (`i` a multiple of `MR`) and its strides: rows, `k`, groups of
    // `MR` rows.
    let a_at = |i: usize, p: usize| -> (*const f32, usize, usize, usize) {
        match lhs {
            Lhs::Strided { data, rs, ks } => {
                (data.as_ptr().wrapping_add(i * rs + p * ks), rs, ks, MR * rs)
            }
            Lhs::Packed {
                w,
                matrix,
                first_row,
            } => {
                let row = first_row + i;
                let at = w.matrix_offset(matrix) + (row / MR) * MR * k + p * MR + row % MR;
                (w.data.as_ptr().wrapping_add(at), 1, MR, MR * k)
            }
        }
    };
    // Rows of a tile: one group of `MR` on AVX-512; three on AVX2, whose sub-tiles of six
    // rows cross the groups.
    let step = match kernel {
        FloatTiles::Avx512 => MR,
        FloatTiles::Avx2 => 3 * MR,
    };
    // Address of `b(p, j)` and its `k` stride (for `Rows`, of `b(0, j)` with no stride:
    // the tile adds each row's offset).
    let b_at = |p: usize, j: usize| -> (*const f32, usize) {
        match rhs {
            Rhs::Strided { data, ks } => (data.as_ptr().wrapping_add(p * ks + j), ks),
            Rhs::Rows { data, .. } => (data.as_ptr().wrapping_add(j), 0),
            Rhs::Packed { w, matrix } => {
                let at = w.matrix_offset(matrix) + (j / NR) * NR * k + p * NR + j % NR;
                (w.data.as_ptr().wrapping_add(at), NR)
            }
            Rhs::PackedRows { w, matrix, first } => {
                let at =
                    w.matrix_offset(matrix) + (j / NR) * NR * w.rows + (first + p) * NR + j % NR;
                (w.data.as_ptr().wrapping_add(at), NR)
            }
        }
    };
    // The next micro-panel of packed `b` (`kc · NR` elements from `b(k0, j0 + NR)`), fetched
    // towards L2 a slice per row tile while the current one runs: a packed constant is
    // usually in L3 or memory, and the first row tile over a panel would otherwise wait for
    // it line by line.
    let next_panel = |k0: usize, kc: usize, j0: usize| -> Option<(*const f32, usize)> {
        if let Rhs::Strided { .. } | Rhs::Rows { .. } = rhs {
            return None;
        }
        if j0 + NR < n {
            Some((b_at(k0, j0 + NR).0, kc * NR))
        } else {
            // The first panel of the next block of `k`.
            let k1 = k0 + kc;
            (k1 < k).then(|| (b_at(k1, 0).0, KC.min(k - k1) * NR))
        }
    };
    let tiles = m.div_ceil(step);
    let c_ptr = c.as_mut_ptr();
    for k0 in (0..k).step_by(KC) {
        let kc = KC.min(k - k0);
        for j0 in (0..n).step_by(NR) {
            let (b, b_ks) = b_at(k0, j0);
            let next = next_panel(k0, kc, j0);
            for i0 in (0..m).step_by(step) {
                if let Some((at, len)) = next {
                    prefetch_part(at, len, (i0 / step, tiles));
                }
                let (a, a_rs, a_ks, a_panel) = a_at(i0, k0);
                let b_rows = match rhs {
                    Rhs::Rows { rows, .. } => rows[k0..].as_ptr(),
                    _ => std::ptr::null(),
                };
                let tile = Tile {
                    a,
                    a_rs,
                    a_ks,
                    a_panel,
                    b,
                    b_ks,
                    b_rows,
                    c: c_ptr.wrapping_add(i0 * ldc + j0),
                    ldc,
                    rows: step.min(m - i0),
                    cols: NR.min(n - j0),
                    k: kc,
                    accumulate: accumulate || k0 > 0,
                };
                // SAFETY: the host runs `kernel` (checked above). The tile's addresses are
                // rows `i0..i0 + rows < m`, columns `j0..j0 + cols < n`, steps
                // `k0..k0 + kc < k` of operands checked to hold `m × k`, `k × n` and
                // `m × n` elements in their slices (`lhs_fits`, `rhs_fits`, `c_fits`; a
                // packed panel holds whole panels of `MR` rows or `NR` columns for every
                // `p < k`, for `PackedRows` every row `first + p < w.rows`, zero-padded;
                // `Rows` has `k` offsets, each followed by `n` elements of its slice). `c`
                // is borrowed exclusively for this call.
                #[cfg(target_arch = "x86_64")]
                unsafe {
                    match kernel {
                        FloatTiles::Avx512 => super::microkernel::run(&tile),
                        FloatTiles::Avx2 => super::microkernel_avx2::run(&tile),
                    }
                };
                #[cfg(not(target_arch = "x86_64"))]
                let _ = tile;
            }
        }
    }
    true
}

/// Prefetches part `part` of `parts` of the `len` elements at `at` towards L2 (a hint:
/// nothing is read, and no address is required to be valid).
fn prefetch_part(at: *const f32, len: usize, (part, parts): (usize, usize)) {
    const LINE: usize = 64 / std::mem::size_of::<f32>();
    let lines = len.div_ceil(LINE);
    let per = lines.div_ceil(parts.max(1));
    for line in part * per..((part + 1) * per).min(lines) {
        let p = at.wrapping_add(line * LINE);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is a hint that never faults and reads nothing the program
        // sees; SSE is part of the x86-64 baseline.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(p.cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = p;
    }
}
