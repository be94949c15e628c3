//! The packed product's loops: `c = a · b` (or `c += a · b`) tile by tile over the
//! microkernel, `k` in blocks of at most [`KC`] steps, every row tile of `a` passing over
//! one micro-panel of the loaded operand before the next (BLIS's loop order, with `nc =
//! NR`; for a `c` too large for L2 and a small `a`, each micro-panel's blocks of `k` run in
//! turn instead: [`column_outer`]). Every extent and slice length is checked here before
//! the first tile runs.

use super::microkernel::{Tile, Vectors, MR, NR};
use super::{PackedWeights, Side};
use crate::native::lanes::FloatTiles;
use crate::target::CpuFeatures;

/// The most steps of `k` in one block. Each block reads and writes every tile of `c` once
/// more, and `c` is usually in L3 by then, so deep blocks pay; a micro-panel of the loaded
/// operand, up to `KC · NR` `f32` (96 KiB), then streams from L2 rather than staying in
/// L1, which costs less (BENCHMARKS.md, the twentieth session). Every microkernel blocks
/// `k` alike, so all give the same bits.
pub(super) const KC: usize = 512;

/// Steps of `k` per block for a product over `k` in blocks of at most `depth`: as many
/// blocks as `depth` requires, of equal depth (the last shorter by less than one step per
/// block), so that none is a short remainder.
pub(super) fn block_len(k: usize, depth: usize) -> usize {
    k.div_ceil(k.div_ceil(depth).max(1)).max(1)
}

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

/// Whether `rhs` holds a `k × n` operand read at `columns` (only `Strided` and `Rows`
/// operands are read in runs; a packed one from a whole panel on).
fn rhs_fits(rhs: &Rhs<'_>, k: usize, columns: &Columns) -> bool {
    let Some(n) = columns
        .span(columns.b_stride)
        .and_then(|span| span.checked_add(columns.b_first))
    else {
        return false;
    };
    if let Rhs::Packed { .. } | Rhs::PackedRows { .. } = rhs {
        if columns.runs > 1 || !columns.b_first.is_multiple_of(NR) {
            return false;
        }
    }
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
            w.side == Side::Right && matrix < w.count && w.rows == k && n <= w.cols
        }
        Rhs::PackedRows { w, matrix, first } => {
            w.side == Side::Right
                && matrix < w.count
                && n <= w.cols
                && first.checked_add(k).is_some_and(|end| end <= w.rows)
        }
    }
}

/// The product's `n` columns as `runs` runs of `width` columns: column `j` of run `r` is
/// column `b_first + r · b_stride + j` of `b` and `r · c_stride + j` of each row of `c`.
/// One run of all columns for a plain product (from `b_first`, a multiple of the panel
/// width for packed weights: a block of a product's columns); a band of a convolution's
/// output rows read from its padded image (`b_stride` the padded row, `c_stride` the output
/// row) for an implicit one, so the columns that wrap past an output row's end are neither
/// computed nor stored.
#[derive(Clone, Copy, Debug)]
pub(in crate::native) struct Columns {
    pub runs: usize,
    pub width: usize,
    pub b_first: usize,
    pub b_stride: usize,
    pub c_stride: usize,
}

impl Columns {
    /// `n` columns in one run.
    pub(in crate::native) fn flat(n: usize) -> Columns {
        Columns::block(0, n)
    }

    /// `width` columns of `b` from column `first` on, in one run.
    pub(in crate::native) fn block(first: usize, width: usize) -> Columns {
        Columns {
            runs: 1,
            width,
            b_first: first,
            b_stride: width,
            c_stride: width,
        }
    }

    /// The columns a row spans at run stride `stride`: one past the last (0 when empty),
    /// `None` on overflow.
    fn span(&self, stride: usize) -> Option<usize> {
        if self.runs == 0 || self.width == 0 {
            return Some(0);
        }
        (self.runs - 1).checked_mul(stride)?.checked_add(self.width)
    }
}

/// Where the rows of a product's result go.
pub(in crate::native) enum Out<'a, 'b> {
    /// Row `i` at `c[i · ldc..]`: `(c, ldc)`.
    Strided(&'a mut [f32], usize),
    /// Row `i` in slice `i` of its own (a band of output rows of each channel of a
    /// convolution, each in its own plane).
    Rows(&'a mut [&'b mut [f32]]),
}

/// `c = a · b` for `a` `m × k`, `b` `k × n`, into `c` with row stride `ldc` (unit column
/// stride); with `accumulate`, `c += a · b`, on the widest microkernel the host runs
/// (`FloatTiles::host`). Returns `false`, writing nothing, when it runs none (neither
/// AVX-512F nor AVX2 and FMA) or an operand does not hold its extents (the caller then runs
/// the `gemm` crate). Sums run in `f32` in order of `p` within each block of `k`
/// ([`block_len`]), blocks added in order: the result differs from another summation order
/// by rounding only.
pub(in crate::native) fn product(
    (c, ldc): (&mut [f32], usize),
    lhs: Lhs<'_>,
    rhs: Rhs<'_>,
    (m, k, n): (usize, usize, usize),
    accumulate: bool,
) -> bool {
    let operands = (lhs, rhs);
    FloatTiles::host().is_some_and(|kernel| {
        product_on(
            kernel,
            Out::Strided(c, ldc),
            operands,
            (m, k),
            Columns::flat(n),
            accumulate,
        )
    })
}

/// As [`product`], `c = a · b` for `a` `m × k` and the `k × n` operand `b` read at
/// `columns`, into `out`'s rows at `columns` (`c_stride`); `false`, writing nothing, where
/// [`product`] would be. Every column is stored by one tile, as in [`product`].
pub(in crate::native) fn product_at(
    out: Out<'_, '_>,
    (lhs, rhs): (Lhs<'_>, Rhs<'_>),
    (m, k): (usize, usize),
    columns: Columns,
) -> bool {
    FloatTiles::host()
        .is_some_and(|kernel| product_on(kernel, out, (lhs, rhs), (m, k), columns, false))
}

/// As [`product_at`], on `kernel`, and with `accumulate`; `false` as well where the host
/// does not run `kernel`.
pub(super) fn product_on(
    kernel: FloatTiles,
    out: Out<'_, '_>,
    (lhs, rhs): (Lhs<'_>, Rhs<'_>),
    (m, k): (usize, usize),
    columns: Columns,
    accumulate: bool,
) -> bool {
    let Some(c_span) = columns.span(columns.c_stride) else {
        return false;
    };
    let c_fits = match &out {
        Out::Strided(c, ldc) => {
            *ldc >= c_span && extent(m, c_span, *ldc, 1).is_some_and(|e| e <= c.len())
        }
        Out::Rows(rows) => rows.len() == m && rows.iter().all(|r| r.len() >= c_span),
    };
    if !kernel.runs() || !c_fits || !lhs_fits(&lhs, m, k) || !rhs_fits(&rhs, k, &columns) {
        return false;
    }
    if m == 0 || c_span == 0 {
        return true;
    }
    // Each row of `c` from its first column on.
    let mut c_rows: Vec<&mut [f32]> = match out {
        Out::Strided(c, ldc) => c.chunks_mut(ldc).take(m).collect(),
        Out::Rows(rows) => rows.iter_mut().map(|r| &mut **r).collect(),
    };
    if k == 0 {
        if !accumulate {
            for row in &mut c_rows {
                for run in 0..columns.runs {
                    let at = run * columns.c_stride;
                    row[at..at + columns.width].fill(0.0);
                }
            }
        }
        return true;
    }
    let c_ptrs: Vec<*mut f32> = c_rows.into_iter().map(<[f32]>::as_mut_ptr).collect();
    let n = columns.width;
    let kc_full = block_len(k, KC);
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
    // it line by line. Only on Intel hosts: on AMD the hardware prefetchers keep up, and
    // the extra traffic made products slower (`CpuFeatures::intel`).
    let b_first = columns.b_first;
    let prefetch = CpuFeatures::host().intel;
    let next_panel = |k0: usize, kc: usize, j0: usize| -> Option<(*const f32, usize)> {
        if let Rhs::Strided { .. } | Rhs::Rows { .. } = rhs {
            return None;
        }
        if j0 + NR < n {
            Some((b_at(k0, b_first + j0 + NR).0, kc * NR))
        } else {
            // The first panel of the next block of `k`.
            let k1 = k0 + kc;
            (k1 < k).then(|| (b_at(k1, b_first).0, kc_full.min(k - k1) * NR))
        }
    };
    let tiles = m.div_ceil(step);
    // The tiles' columns: micro-panels of each run; on AVX-512, runs that do not fill
    // whole panels (a band of narrow output rows) in tiles of three vectors from any runs.
    let placed = kernel == FloatTiles::Avx512 && columns.runs > 1 && !n.is_multiple_of(NR);
    let groups: Vec<Group> = if placed {
        Vectors::of_runs(columns.runs, n, (columns.b_stride, columns.c_stride))
            .into_iter()
            .map(|v| Group {
                b_col: b_first,
                c_col: 0,
                cols: NR,
                vectors: Some(v),
            })
            .collect()
    } else {
        (0..columns.runs)
            .flat_map(|run| {
                (0..n).step_by(NR).map(move |j0| Group {
                    b_col: b_first + run * columns.b_stride + j0,
                    c_col: run * columns.c_stride + j0,
                    cols: NR.min(n - j0),
                    vectors: None,
                })
            })
            .collect()
    };
    // Every row tile of `a` over the columns of `group` for the block of `k` from `k0`,
    // fetching `next` meanwhile.
    let block = |k0: usize, group: &Group, next: Option<(*const f32, usize)>| {
        let kc = kc_full.min(k - k0);
        let (b, b_ks) = b_at(k0, group.b_col);
        for i0 in (0..m).step_by(step) {
            if let Some((at, len)) = next.filter(|_| prefetch) {
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
                c_rows: c_ptrs[i0..].as_ptr(),
                c_col: group.c_col,
                rows: step.min(m - i0),
                cols: group.cols,
                k: kc,
                accumulate: accumulate || k0 > 0,
                vectors: group.vectors,
            };
            // SAFETY: the host runs `kernel` (checked above). The tile's addresses are
            // rows `i0..i0 + rows < m`, the columns of `group` (each inside a run `<
            // runs` of `width` columns, `Vectors::of_runs` placing them so), steps `k0..k0
            // + kc < k` of operands checked to hold `m × k`, `k × n` (read at `columns`)
            // and `m` rows of `columns` in their slices (`lhs_fits`, `rhs_fits`,
            // `c_fits`; a packed panel holds whole panels of `MR` rows or `NR` columns for
            // every `p < k`, for `PackedRows` every row `first + p < w.rows`,
            // zero-padded; `Rows` has `k` offsets, each followed by the columns' span of
            // its slice). `c_ptrs` holds the `m` rows' starts, each row borrowed
            // exclusively (from `out`) for this call. Only AVX-512 tiles have `vectors`.
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
    };
    if column_outer((m, k, n * columns.runs), kc_full) {
        // Each micro-panel's blocks of `k` in turn, its tiles of `c` staying in L1 between
        // them; the next panel fetched is the next block of `k`, or the next panel's first.
        for group in &groups {
            for k0 in (0..k).step_by(kc_full) {
                let next = match rhs {
                    Rhs::Strided { .. } | Rhs::Rows { .. } => None,
                    _ if k0 + kc_full < k => {
                        let at = b_at(k0 + kc_full, group.b_col).0;
                        Some((at, kc_full.min(k - k0 - kc_full) * NR))
                    }
                    _ => next_panel(0, kc_full.min(k), group.b_col - b_first),
                };
                block(k0, group, next);
            }
        }
    } else {
        for k0 in (0..k).step_by(kc_full) {
            let kc = kc_full.min(k - k0);
            for group in &groups {
                // A packed operand is read in one run from `b_first` (`rhs_fits`).
                block(k0, group, next_panel(k0, kc, group.b_col - b_first));
            }
        }
    }
    true
}

/// The columns of one tile: `cols` columns from column `b_col` of `b` and `c_col` of
/// `c`'s rows, or the vectors `vectors` places.
struct Group {
    b_col: usize,
    c_col: usize,
    cols: usize,
    vectors: Option<Vectors>,
}

/// Bytes of `c` from which the packed product runs each micro-panel of `b` through all its
/// blocks of `k` before the next ([`product_on`]): BLIS's order writes all of `c` once per
/// block of `k`, which from this size on no longer stays in L2 between blocks (a
/// vocabulary's projection, `[32, 1024] x [1024, 8210]`, read and wrote its 1 MiB `c` eight
/// times from L3).
const C_IN_L2: usize = 512 << 10;

/// Bytes of `a` up to which every micro-panel may read it all again from L2.
const A_IN_L2: usize = 256 << 10;

/// Whether a product of `m × k` by `k × n` in blocks of `kc` steps of `k` runs each
/// micro-panel through all of `k` first (see [`C_IN_L2`]): several blocks of `k`, a large
/// `c` and an `a` small enough to be read again per panel.
pub(super) fn column_outer((m, k, n): (usize, usize, usize), kc: usize) -> bool {
    let f32s = std::mem::size_of::<f32>();
    k > kc && m * n * f32s >= C_IN_L2 && m * k * f32s <= A_IN_L2
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
