//! Integer `MatMul` (`i32`, wrapping, as the reference defines it) whose right operand is
//! a constant narrowed to `i8` when the executable was compiled ([`Side::Narrow`]): the
//! products of a dynamically quantized recurrent op, whose state, less its zero point,
//! multiplies the 8-bit recurrent weights less theirs at every step. Read as `i8`, a step
//! of an LSTM of 512 units reads 1 MiB of weights instead of 4 (from L3 either way when its
//! two directions alternate), and runs on VNNI (`super::narrow_vnni`) or, on AVX2 hosts,
//! on 16-bit pairs (`super::int_avx2`). One-row products
//! split their columns over the threads.

use std::ops::Range;

use multiversion::multiversion;

use super::int_avx2;
use super::matmul::Problem;
use super::narrow_vnni;
use super::packed::{NarrowMatrix, PackedWeights, Side};
use super::Epilogue;
use crate::parallel::{for_each, Parallel};

/// Columns of a block of a one-row product split over threads: whole 16-lane vectors.
const COLUMN_ALIGN: usize = 64;

/// Every product of `p` into `c` (`batch · m · n`), `a` the left operands (`i32`) and `w`
/// the right ones narrowed: `c[i, j] = Σ_p a[i, p] · b[p, j]` in wrapping `i32`, exactly
/// the reference's result. Each block of `c` is handed to `epilogue` once written (whole
/// products, or a block of columns of a one-row product split over threads). Returns
/// `false`, writing nothing, when `w` does not hold `p`'s right operands or `a` or `c`
/// is shorter than `p` says.
pub(super) fn narrow_matmul(
    c: &mut [i32],
    a: &[i32],
    p: &Problem,
    w: &PackedWeights,
    parallel: &Parallel,
    epilogue: Option<Epilogue<'_>>,
) -> bool {
    let (m, k, n) = (p.m, p.k, p.n);
    let count = p.offsets_a.len();
    let (_, rows, cols) = w.extents();
    // Each product's right operand: its quads and column sums.
    let matrices: Option<Vec<_>> = p
        .offsets_b
        .iter()
        .map(|&ob| w.narrow_matrix(ob.checked_div(k * n).unwrap_or(0)))
        .collect();
    let fits = w.side() == Side::Narrow
        && (rows, cols) == (k, n)
        && c.len() == count * m * n
        && p.offsets_a.iter().all(|&o| o + m * k <= a.len());
    let Some(matrices) = matrices.filter(|_| fits) else {
        return false;
    };
    if c.is_empty() {
        return true;
    }
    let team = parallel.team(m * k * n);
    // One-row products by blocks of columns (two per thread), others whole.
    let block = match team {
        Some(team) if m == 1 => n
            .div_ceil(2 * team.threads())
            .next_multiple_of(COLUMN_ALIGN),
        _ => n,
    };
    for (i, (c, b)) in c.chunks_mut(m * n).zip(&matrices).enumerate() {
        let oa = p.offsets_a[i];
        let run = |(blk, c): (usize, &mut [i32])| {
            let cols = blk * block..blk * block + c.len().min(block);
            let (mut shifted, mut widened) = (Vec::new(), Vec::new());
            for (r, c) in c.chunks_mut(cols.len().max(1)).enumerate() {
                let row = &a[oa + r * k..oa + (r + 1) * k];
                let scratch = (&mut shifted, &mut widened);
                row_product(row, (b, n), cols.clone(), c, scratch);
            }
            if let Some(e) = &epilogue {
                e.run(i * m * n + cols.start, c);
            }
        };
        match team {
            Some(team) if m == 1 => for_each(team, c.chunks_mut(block).enumerate(), run),
            _ => run((0, c)),
        }
    }
    true
}

/// `out[j − cols.start] = Σ_p row[p] · b[p, j]` for `j` in `cols`, in wrapping `i32`, `b`
/// `[row.len(), n]` ([`Side::Narrow`]): on VNNI where the row allows it
/// ([`narrow_vnni::row`]), else on the AVX2 tile where the host has it and the row's values
/// fit 16 bits ([`avx2_row`]), else in portable code, one quad of `b`'s rows at a time.
/// `shifted` and `widened` are those paths' scratch for the row.
fn row_product(
    row: &[i32],
    (b, n): (&NarrowMatrix<'_>, usize),
    cols: Range<usize>,
    out: &mut [i32],
    (shifted, widened): (&mut Vec<u8>, &mut Vec<i16>),
) {
    if narrow_vnni::row(row, (b.quads, b.sums, n), cols.clone(), out, shifted) {
        return;
    }
    let done = avx2_row(row, (b, n), cols.clone(), out, widened);
    let rest = cols.start + done..cols.end;
    portable_row(row, (b.quads, n), rest, &mut out[done..]);
}

/// The first columns of [`row_product`] on the AVX2 tile ([`int_avx2`], one row): the row
/// widened to 16 bits, eight columns at a time, read from `b`'s panels (each block's quads
/// in one run) when it has them and `cols` starts a block, else from its quads (32 bytes
/// every `4 · n`). Returns how many columns (from `cols.start`) it wrote: a multiple of 8,
/// or 0 when the host lacks AVX2 or a value of `row` does not fit 16 bits. `a16` is
/// scratch for the widened row.
fn avx2_row(
    row: &[i32],
    (b, n): (&NarrowMatrix<'_>, usize),
    cols: Range<usize>,
    out: &mut [i32],
    a16: &mut Vec<i16>,
) -> usize {
    const COLUMNS: usize = int_avx2::COLUMNS;
    let k4 = row.len().div_ceil(4);
    let full = cols.len() - cols.len() % COLUMNS;
    let fits = int_avx2::available()
        && full > 0
        && cols.end <= n
        && b.quads.len() >= k4 * 4 * n
        && out.len() >= full
        && row.iter().all(|&v| i16::try_from(v).is_ok());
    if !fits {
        return 0;
    }
    let paneled =
        cols.start.is_multiple_of(COLUMNS) && b.panels.len() >= n / COLUMNS * k4 * 4 * COLUMNS;
    a16.clear();
    a16.extend(row.iter().map(|&v| v as i16));
    a16.resize(k4 * 4, 0);
    let mut sums = [[0i32; COLUMNS]; int_avx2::ROWS];
    #[cfg(target_arch = "x86_64")]
    for j in (0..full).step_by(COLUMNS) {
        let col = cols.start + j;
        let (columns, group_stride) = if paneled {
            (
                b.panels[col / COLUMNS * k4 * 4 * COLUMNS..].as_ptr(),
                4 * COLUMNS,
            )
        } else {
            (b.quads[4 * col..].as_ptr(), 4 * n)
        };
        let o = int_avx2::Operands {
            rows: a16.as_ptr(),
            row_stride: k4 * 4,
            columns: columns.cast(),
            group_stride,
            groups: k4,
        };
        // SAFETY: the host has AVX2 (checked above); `a16` is one row of `4 · k4` values.
        // Columns `col .. col + 8 <= n`: from the panels (`col` a multiple of 8 and the
        // panels `⌊n/8⌋` runs of `k4` groups of 32 bytes, checked above), the run of block
        // `col / 8`; else of each of the `k4` quad rows (`4 · n` bytes each, `k4 · 4 · n <=
        // quads.len()`), 32 bytes inside `quads`.
        unsafe { int_avx2::tile_rows::<int_avx2::Signed8>(&o, 1, &mut sums) };
        out[j..j + COLUMNS].copy_from_slice(&sums[0]);
    }
    full
}

/// [`row_product`] in portable code.
#[multiversion(targets = "simd")]
fn portable_row(row: &[i32], (quads, n): (&[i8], usize), cols: Range<usize>, out: &mut [i32]) {
    out.fill(0);
    for (q, four) in row.chunks(4).enumerate() {
        let quad_row = &quads[q * 4 * n..(q + 1) * 4 * n];
        for (o, w) in out
            .iter_mut()
            .zip(quad_row[4 * cols.start..].chunks_exact(4))
        {
            let dot = four.iter().zip(w).fold(0i32, |s, (&x, &v)| {
                s.wrapping_add(x.wrapping_mul(i32::from(v)))
            });
            *o = o.wrapping_add(dot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::ThreadConfig;
    use graphlift_ir::{Shape, TensorData};

    /// Narrowed products equal the reference bit for bit (wrapping included) on one and
    /// two threads, on VNNI and in portable code: one-row products split by columns,
    /// several rows, a batch of matrices, depths that are no multiple of four.
    #[test]
    fn narrowed_products_equal_the_reference() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[1, 512], &[512, 2048]),
            (&[5, 33], &[33, 70]),
            (&[2, 1, 9], &[2, 9, 130]),
        ];
        for threads in [1, 2] {
            let parallel = Parallel::new(ThreadConfig::with_threads(threads));
            for &(da, db) in cases {
                let (sa, sb) = (Shape::new(da), Shape::new(db));
                let (k, n) = (db[db.len() - 2], db[db.len() - 1]);
                // Large left values make the sums wrap (and the rows span too much for
                // VNNI); small ones (a quantized state less its zero point) run on it.
                for wide in [true, false] {
                    let a: Vec<i32> = (0..sa.element_count().unwrap())
                        .map(|i| {
                            if wide {
                                (i as i32).wrapping_mul(0x2545_F491) >> 3
                            } else {
                                (i * 37 % 251) as i32 - 140
                            }
                        })
                        .collect();
                    let b: Vec<i32> = (0..sb.element_count().unwrap())
                        .map(|i| (i * 37 % 256) as i32 - 128)
                        .collect();
                    let count = b.len() / (k * n);
                    let (a, b32) = (TensorData::I32(a), TensorData::I32(b.clone()));
                    let want = graphlift_runtime::reference::matmul(&a, &sa, &b32, &sb).unwrap();
                    for panels in [true, false] {
                        let w = PackedWeights::narrow(&b, 1, (count, k, n), panels).unwrap();
                        let got = super::super::matmul::matmul(
                            (&a, &sa),
                            (&b32, &sb),
                            None,
                            &parallel,
                            None,
                            Some(&w),
                        )
                        .unwrap();
                        assert_eq!(
                            got, want,
                            "{da:?} x {db:?}, {threads} threads, wide {wide}, panels {panels}"
                        );
                    }
                }
            }
        }
        assert!(
            PackedWeights::narrow(&[1, 200, 3], 1, (1, 1, 3), false).is_none(),
            "200 is no i8"
        );
    }

    /// The AVX2 row product equals the portable one, wrapping included, for rows at the
    /// ends of the 16-bit range, from the panels and from the quads (blocks that start off
    /// a panel); rows that do not fit 16 bits are left to the portable code.
    #[test]
    fn the_avx2_row_equals_the_portable_row() {
        let (k, n) = (37usize, 29usize);
        let k4 = k.div_ceil(4);
        let quads: Vec<i8> = (0..k4 * 4 * n)
            .map(|i| ((i * 71 % 256) as i32 - 128) as i8)
            .collect();
        let panels = crate::native::packed::quad_panels(&quads, k4, n);
        let sums = vec![0; n];
        let row: Vec<i32> = (0..k)
            .map(|i| if i % 2 == 0 { 32767 } else { -32768 + i as i32 })
            .collect();
        for paneled in [true, false] {
            let b = NarrowMatrix {
                quads: &quads,
                panels: if paneled { &panels } else { &[] },
                sums: &sums,
            };
            for cols in [0..n, 3..n, 5..21, 8..24] {
                let mut want = vec![0; cols.len()];
                portable_row(&row, (&quads, n), cols.clone(), &mut want);
                let mut got = vec![0; cols.len()];
                let done = avx2_row(&row, (&b, n), cols.clone(), &mut got, &mut Vec::new());
                if int_avx2::available() {
                    assert_eq!(done, cols.len() / 8 * 8, "{cols:?}");
                }
                assert_eq!(got[..done], want[..done], "{cols:?} paneled {paneled}");
            }
            let wide = vec![1 << 16; k];
            let declined = avx2_row(&wide, (&b, n), 0..n, &mut vec![0; n], &mut Vec::new());
            assert_eq!(declined, 0);
        }
    }
}
