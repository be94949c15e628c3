//! `MatMul` on `f32` and `f64` through the `gemm` crate (blocked, SIMD microkernels for the
//! host CPU, multi-threaded on the backend's rayon pool) or the packed microkernels, and on
//! `i32` through the integer tiles (`matmul_narrow`, `matmul_integer`).

use gemm::Parallelism;
use graphlift_ir::{Shape, TensorData};
use graphlift_runtime::reference::batch_offsets;

use super::gemm_call::{gemm_into, Strided};
use super::matmul_integer::integer_matmul;
use super::matmul_narrow::narrow_matmul;
use super::packed::{self, Lhs, Out, PackedWeights, Rhs, Side};
use super::result_buffer;
use super::Epilogue;
use crate::parallel::{for_each, Parallel};

/// Row blocks of a product split over threads are multiples of this (whole microkernel
/// tiles).
pub(super) const ROW_BLOCK_ALIGN: usize = 8;

/// The problem: batch offsets into `a` and `b`, and `m`, `k`, `n`.
pub(super) struct Problem {
    pub offsets_a: Vec<usize>,
    pub offsets_b: Vec<usize>,
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

fn problem(sa: &Shape, sb: &Shape) -> Option<Problem> {
    let (da, db) = (sa.dims(), sb.dims());
    if da.len() < 2 || db.len() < 2 || da[da.len() - 1] != db[db.len() - 2] {
        return None;
    }
    let (m, k, n) = (da[da.len() - 2], da[da.len() - 1], db[db.len() - 1]);
    let (ba, bb) = (&da[..da.len() - 2], &db[..db.len() - 2]);
    let batch = Shape::broadcast(&Shape::new(ba), &Shape::new(bb))?;
    Some(Problem {
        offsets_a: batch_offsets(ba, batch.dims(), m * k),
        offsets_b: batch_offsets(bb, batch.dims(), k * n),
        m,
        k,
        n,
    })
}

impl Problem {
    /// The products as one when every one of them multiplies the same `b` and the `a`s lie
    /// one after another (`[B, M, K] · [K, N]`, as a sequence model's classifier head or
    /// a token-wise projection is written): one `[B · M, K] · [K, N]` product, whose result
    /// has the same layout, so `b` is read once instead of `B` times.
    fn folded(self) -> Problem {
        let batch = self.offsets_a.len();
        let one_b = self
            .offsets_b
            .iter()
            .all(|&o| Some(&o) == self.offsets_b.first());
        let a_in_order = self
            .offsets_a
            .iter()
            .enumerate()
            .all(|(i, &o)| o == i * self.m * self.k);
        match self.m.checked_mul(batch) {
            Some(m) if batch > 1 && one_b && a_in_order => Problem {
                offsets_a: vec![0],
                offsets_b: vec![self.offsets_b[0]],
                m,
                ..self
            },
            _ => self,
        }
    }
}

/// A matrix operand of a product: its elements and the distance between consecutive rows
/// and columns, so a transposed matrix or a block of one is read in place.
#[derive(Clone, Copy)]
pub(super) struct Operand<'a, T> {
    /// The elements, the first one at index 0.
    pub data: &'a [T],
    /// Distance between consecutive rows.
    pub row: usize,
    /// Distance between consecutive columns.
    pub col: usize,
}

impl<'a, T> Operand<'a, T> {
    /// A row-major matrix of `cols` columns.
    pub fn rows(data: &'a [T], cols: usize) -> Operand<'a, T> {
        Operand {
            data,
            row: cols,
            col: 1,
        }
    }

    /// The transpose of a row-major matrix of `cols` columns (row `i` of the operand is
    /// column `i` of `data`).
    pub fn transposed(data: &'a [T], cols: usize) -> Operand<'a, T> {
        Operand {
            data,
            row: 1,
            col: cols,
        }
    }
}

/// One row-major product `c[m, n] = a[m, k] · b[k, n]` (nothing when a slice is too short
/// for its extents, or `T` is neither `f32` nor `f64`).
pub(super) fn product<T: Copy + Default + 'static>(
    a: &[T],
    b: &[T],
    c: &mut [T],
    (m, k, n): (usize, usize, usize),
    one: T,
    parallelism: Parallelism,
) {
    product_strided(
        Operand::rows(a, k),
        Operand::rows(b, n),
        c,
        (m, k, n),
        (one, false),
        parallelism,
    );
}

/// `c[m, n] = a[m, k] · b[k, n]` for operands of any strides, into row-major `c`; with
/// `accumulate`, `c += a · b` instead. Nothing when an operand does not hold its extents.
pub(super) fn product_strided<T: Copy + Default + 'static>(
    a: Operand<'_, T>,
    b: Operand<'_, T>,
    c: &mut [T],
    (m, k, n): (usize, usize, usize),
    (one, accumulate): (T, bool),
    parallelism: Parallelism,
) {
    let view = |o: &Operand<'_, T>, rows, cols| Strided {
        rows,
        cols,
        row_stride: o.row,
        col_stride: o.col,
    };
    gemm_into(
        (c, Strided::row_major(m, n)),
        (a.data, view(&a, m, k)),
        (b.data, view(&b, k, n)),
        one,
        accumulate.then_some(one),
        parallelism,
    );
}

/// Every product of `p` into `c` (`batch · m · n` elements, each written once) by
/// `rows(i, row0, block)`, which writes rows `row0..row0 + block.len() / n` of product `i`
/// into `block`; each block of `c` is handed to `epilogue` as soon as it is written (a whole
/// product, or a block of its rows when a product is split over threads).
pub(super) fn batched<T: Copy + Send + Sync>(
    c: &mut [T],
    p: &Problem,
    parallel: &Parallel,
    epilogue: Option<Epilogue<'_>>,
    rows: impl Fn(usize, usize, &mut [T]) + Sync,
) {
    let (m, k, n) = (p.m, p.k, p.n);
    let count = p.offsets_a.len();
    if m * n == 0 || c.len() != count * m * n {
        return;
    }
    let team = parallel.team(count * m * n * k);
    let threads = team.map_or(1, |t| t.threads());
    let finish = |begin: usize, c: &[T]| {
        if let Some(e) = &epilogue {
            e.run(begin, c);
        }
    };
    // Product `i` into `c`, then its epilogue.
    let run = |(i, c): (usize, &mut [T])| {
        rows(i, 0, c);
        finish(i * m * n, c);
    };
    match team {
        // Many small products (attention heads): one product per task.
        Some(team) if count >= 2 * threads => {
            for_each(team, c.chunks_mut(m * n).enumerate(), run);
        }
        // Few large products: each is split by rows of `a` and `c`, one block per thread
        // (every block reads all of `b`; gemm's own split did not divide MiniLM's
        // [128, 384] x [384, 384] over two threads).
        Some(team) => {
            let block = m.div_ceil(threads).next_multiple_of(ROW_BLOCK_ALIGN).min(m);
            for (i, c) in c.chunks_mut(m * n).enumerate() {
                for_each(team, c.chunks_mut(block * n).enumerate(), |(blk, c)| {
                    rows(i, blk * block, c);
                    finish(i * m * n + blk * block * n, c);
                });
            }
        }
        None => c.chunks_mut(m * n).enumerate().for_each(run),
    }
}

/// The tiles ([`grid`]: rows, panels) the products of `p`, whose `b` is packed for the
/// right side, split over the threads in ([`tiles`]), when they split by columns as well
/// as rows rather than by rows alone ([`batched`]): fewer products than two per thread,
/// large enough to split, at least two panels wide, and a grid narrower than the product.
/// So each thread reads its own rows of `a` and columns of `b`, not all of `b` (a
/// classifier head over a sequence, `[40, 80] · [80, 6906]`, gave row blocks of 24 and 16,
/// both reading the whole 2.2 MB of weights).
fn tile_grid(p: &Problem, parallel: &Parallel, epilogue: bool) -> Option<(usize, usize)> {
    let count = p.offsets_a.len();
    let threads = parallel.threads_for(count * p.m * p.n * p.k);
    if threads < 2 || count >= 2 * threads || p.n < 2 * packed::PANEL_COLUMNS {
        return None;
    }
    let panels = p.n.div_ceil(packed::PANEL_COLUMNS);
    let (rows, cols) = grid(p.m, (p.k, panels), threads, epilogue);
    (cols < panels).then_some((rows, cols))
}

/// Multiply-accumulates' worth of time an epilogue takes per element beyond a whole block's
/// pass when a tile narrower than the product hands it one row piece at a time: at two
/// threads a bias `Add` cost 12 to 35 per element on pieces of 192 and 768 columns, a row
/// block's pass next to nothing (BENCHMARKS.md, the twenty-second session).
const NARROW_EPILOGUE_MACS: usize = 24;

/// The tiles of one product of `m` rows, depth `k` and `panels` column panels split over
/// `threads`: `(rows, panels)` per tile, rows a multiple of [`ROW_BLOCK_ALIGN`] (or all
/// `m`). Of the grids of up to `threads` row blocks and `2 · threads` column blocks, the one
/// whose busiest thread (tiles handed out in turn, each counted at the full tile's size)
/// has the least work, then the one whose busiest thread reads the fewest bytes of `a` and
/// `b` (squarer tiles keep a thread's operands in its L2), then the one of fewest tiles.
/// With an `epilogue`, a thread's work is its tiles' multiply-accumulates plus half one per
/// byte they read plus [`NARROW_EPILOGUE_MACS`] per element of tiles narrower than the
/// product, weighed together: whole rows where the products are even, but not rows so few
/// that each thread streams all of `b` for little work. Columns alone left half of 16
/// threads idle on MiniLM's `[128, 1536] · [1536, 384]` (eight panels of 48); rows alone
/// make every thread read all of `b`.
fn grid(m: usize, (k, panels): (usize, usize), threads: usize, epilogue: bool) -> (usize, usize) {
    let f32s = std::mem::size_of::<f32>();
    let mut best = ((usize::MAX, usize::MAX, usize::MAX), m, panels);
    for row_blocks in 1..=threads.min(m.div_ceil(ROW_BLOCK_ALIGN)).max(1) {
        let rows = m
            .div_ceil(row_blocks)
            .next_multiple_of(ROW_BLOCK_ALIGN)
            .min(m);
        for column_blocks in 1..=panels.min(2 * threads).max(1) {
            let cols = panels.div_ceil(column_blocks);
            let tiles = m.div_ceil(rows) * panels.div_ceil(cols);
            let per_thread = tiles.div_ceil(threads);
            let elements = per_thread * rows * cols * packed::PANEL_COLUMNS;
            let bytes = per_thread * (rows + cols * packed::PANEL_COLUMNS) * k * f32s;
            let work = match (epilogue, cols < panels) {
                (false, _) => elements * k,
                (true, false) => elements * k + bytes / 2,
                (true, true) => elements * (k + NARROW_EPILOGUE_MACS) + bytes / 2,
            };
            if (work, bytes, tiles) < best.0 {
                best = ((work, bytes, tiles), rows, cols);
            }
        }
    }
    (best.1, best.2)
}

/// Every product of `p` (`a` row-major, `b` packed for the right side as `w`) into `c`,
/// each product split into tiles of `rows` rows and `panels` whole column panels
/// ([`tile_grid`]) spread over the threads: each tile the product of its rows of `a` with
/// its columns of `b`, stored into its piece of each of its rows of `c`, which the
/// epilogue then sees row by row.
/// `false` when the packed path declines a tile (the caller then computes every product
/// by rows, writing every element again).
fn tiles(
    c: &mut [f32],
    a: &[f32],
    p: &Problem,
    w: &PackedWeights,
    parallel: &Parallel,
    epilogue: Option<Epilogue<'_>>,
    (rows, panels): (usize, usize),
) -> bool {
    let (m, k, n) = (p.m, p.k, p.n);
    let Some(team) = parallel.team(p.offsets_a.len() * m * n * k) else {
        return false;
    };
    let (_, w_rows, w_cols) = w.extents();
    if (w_rows, w_cols) != (k, n) || c.len() != p.offsets_a.len() * m * n {
        return false;
    }
    let width = panels * packed::PANEL_COLUMNS;
    for (i, c) in c.chunks_mut(m * n).enumerate() {
        let (oa, ob) = (p.offsets_a[i], p.offsets_b[i]);
        let Some(a) = a.get(oa..oa + m * k) else {
            return false;
        };
        let matrix = ob.checked_div(k * n).unwrap_or(0);
        // Tile (first row, first column, its piece of each of its rows of `c`).
        let mut tiles: Vec<(usize, usize, Vec<&mut [f32]>)> = Vec::new();
        for (r, band) in c.chunks_mut(rows * n).enumerate() {
            let first = tiles.len();
            for row in band.chunks_mut(n) {
                for (b, piece) in row.chunks_mut(width).enumerate() {
                    if first + b == tiles.len() {
                        tiles.push((r * rows, b * width, Vec::with_capacity(rows)));
                    }
                    tiles[first + b].2.push(piece);
                }
            }
        }
        let ran = std::sync::atomic::AtomicBool::new(true);
        for_each(team, tiles.into_iter(), |(row0, col0, mut pieces)| {
            let height = pieces.len();
            let tile_width = pieces.first().map_or(0, |piece| piece.len());
            let operands = (
                Lhs::Strided {
                    data: &a[row0 * k..],
                    rs: k,
                    ks: 1,
                },
                Rhs::Packed { w, matrix },
            );
            let columns = packed::Columns::block(col0, tile_width);
            if !packed::product_at(Out::Rows(&mut pieces), operands, (height, k), columns) {
                ran.store(false, std::sync::atomic::Ordering::Relaxed);
                return;
            }
            if let Some(e) = &epilogue {
                for (r, piece) in pieces.iter().enumerate() {
                    e.run(i * m * n + (row0 + r) * n + col0, piece);
                }
            }
        });
        if !ran.into_inner() {
            return false;
        }
    }
    true
}

/// Rows `row0..row0 + c.len() / n` of product `i` of `p` through the packed path with the
/// weights `w` (packed from `a` or `b`, as [`PackedWeights::side`] says); `false`, writing
/// nothing, when `w` does not hold that operand's matrices or the packed path declines.
fn packed_rows(
    w: &PackedWeights,
    (a, b): (&[f32], &[f32]),
    (sa, sb): (&Shape, &Shape),
    p: &Problem,
    (i, row0): (usize, usize),
    c: &mut [f32],
) -> bool {
    let (m, k, n) = (p.m, p.k, p.n);
    let matrices = |s: &Shape| s.dims()[..s.rank() - 2].iter().product::<usize>();
    let (oa, ob) = (p.offsets_a[i], p.offsets_b[i]);
    let r = c.len() / n.max(1);
    let (lhs, rhs) = match w.side() {
        Side::Right if w.extents() == (matrices(sb), k, n) => (
            Lhs::Strided {
                data: a.get(oa + row0 * k..).unwrap_or_default(),
                rs: k,
                ks: 1,
            },
            Rhs::Packed {
                w,
                matrix: ob.checked_div(k * n).unwrap_or(0),
            },
        ),
        Side::Left if w.extents() == (matrices(sa), m, k) => (
            Lhs::Packed {
                w,
                matrix: oa.checked_div(m * k).unwrap_or(0),
                first_row: row0,
            },
            Rhs::Strided {
                data: b.get(ob..).unwrap_or_default(),
                ks: n,
            },
        ),
        _ => return false,
    };
    packed::product((c, n), lhs, rhs, (r, k, n), false)
}

/// Every product of `p` whose left operand is one row (`m == 1`: an LSTM's state times its
/// recurrent weights at each step, a classifier head at batch 1) with `b` packed for the
/// right side (`w`): each product's columns in blocks of whole panels, spread over the pool
/// when the product is large enough, each block one [`packed::gemv`] (twelve independent
/// chains of sums, where the driver's one-row tile has three) and handed to `epilogue`.
/// A row split gives such a product one block; this reads each thread's columns of `b`
/// only. A block `gemv` declines runs through gemm.
fn row_vectors(
    c: &mut [f32],
    (a, b): (&[f32], &[f32]),
    p: &Problem,
    w: &PackedWeights,
    parallel: &Parallel,
    epilogue: Option<Epilogue<'_>>,
) {
    let (k, n) = (p.k, p.n);
    if n == 0 || c.len() != p.offsets_a.len() * n {
        return;
    }
    let team = parallel.team(k * n);
    // Two blocks per thread, so a thread held up leaves one to the others.
    let block = match team {
        Some(team) => n
            .div_ceil(2 * team.threads())
            .next_multiple_of(packed::PANEL_COLUMNS),
        None => n,
    };
    for (i, c) in c.chunks_mut(n).enumerate() {
        let (oa, ob) = (p.offsets_a[i], p.offsets_b[i]);
        let Some(v) = a.get(oa..oa + k) else {
            return;
        };
        let matrix = ob.checked_div(k * n).unwrap_or(0);
        let run = |(blk, c): (usize, &mut [f32])| {
            let cols = blk * block..blk * block + c.len();
            if !packed::gemv(w, matrix, 0, v, cols.clone(), c) {
                let columns = Strided {
                    rows: k,
                    cols: cols.len(),
                    row_stride: n,
                    col_stride: 1,
                };
                let b = b.get(ob + cols.start..).unwrap_or_default();
                let row = Strided::row_major(1, k);
                let c_view = Strided::row_major(1, cols.len());
                gemm_into(
                    (c, c_view),
                    (v, row),
                    (b, columns),
                    1.0,
                    None,
                    Parallelism::None,
                );
            }
            if let Some(e) = &epilogue {
                e.run(i * n + cols.start, c);
            }
        };
        match team {
            Some(team) => for_each(team, c.chunks_mut(block).enumerate(), run),
            None => c.chunks_mut(block).enumerate().for_each(run),
        }
    }
}

/// Rows `row0..row0 + c.len() / n` of product `i` of `p` through the `gemm` crate.
fn gemm_rows<T: Copy + Default + 'static>(
    a: &[T],
    b: &[T],
    p: &Problem,
    (i, row0): (usize, usize),
    c: &mut [T],
    one: T,
) {
    let (k, n) = (p.k, p.n);
    let (oa, ob) = (p.offsets_a[i] + row0 * k, p.offsets_b[i]);
    let (Some(a), Some(b)) = (a.get(oa..), b.get(ob..)) else {
        return;
    };
    product(a, b, c, (c.len() / n.max(1), k, n), one, Parallelism::None);
}

/// `a` `[..., M, K]` times `b` `[..., K, N]` with numpy batch broadcasting, written into
/// `out` when it is given with the result's element type and size (a caller's output
/// tensor: no allocation), else into a new buffer. `None` when this kernel does not apply
/// (`i64`, `i32` products of depth 0 ([`integer_matmul`]) or whose narrowed weights do
/// not fit ([`narrow_matmul`]), shapes the IR would not accept); the caller then runs the
/// reference.
/// `epilogue` runs on each block of the result as it is finished (see [`batched`]).
/// `packed`, the weights [`super::packed::prepare`] made from the constant operand, runs
/// the `f32` products on the packed AVX-512 path (the `gemm` crate where it declines).
///
/// Floating-point results differ from the reference (which accumulates in `f64` and rounds
/// once) by the rounding of an `f32`/`f64` dot product of length `K`: at most about `K · ε ·
/// Σ|a·b|`; `i32` results equal it.
pub fn matmul(
    (a, sa): (&TensorData, &Shape),
    (b, sb): (&TensorData, &Shape),
    out: Option<TensorData>,
    parallel: &Parallel,
    epilogue: Option<Epilogue<'_>>,
    packed: Option<&PackedWeights>,
) -> Option<TensorData> {
    let p = problem(sa, sb)?;
    // Weights packed for the left side keep their matrices: they are one per `a`.
    let p = if packed.is_some_and(|w| w.side() == Side::Left) {
        p
    } else {
        p.folded()
    };
    let need_a = p.offsets_a.iter().max().map_or(0, |&o| o + p.m * p.k);
    let need_b = p.offsets_b.iter().max().map_or(0, |&o| o + p.k * p.n);
    if a.len() < need_a || b.len() < need_b {
        return None;
    }
    let len = p.offsets_a.len() * p.m * p.n;
    let mut c = result_buffer(out, a.element_type(), len);
    match (a, b, &mut c) {
        (TensorData::F32(x), TensorData::F32(y), TensorData::F32(z))
            if p.m == 1 && packed.is_some_and(|w| w.side() == Side::Right) =>
        {
            let w = packed?;
            row_vectors(z, (x, y), &p, w, parallel, epilogue);
        }
        (TensorData::F32(x), TensorData::F32(y), TensorData::F32(z)) => {
            let in_tiles = tile_grid(&p, parallel, epilogue.is_some()).is_some_and(|grid| {
                packed.is_some_and(|w| {
                    w.side() == Side::Right && tiles(z, x, &p, w, parallel, epilogue, grid)
                })
            });
            if !in_tiles {
                batched(z, &p, parallel, epilogue, |i, row0, c| {
                    let on_packed =
                        packed.is_some_and(|w| packed_rows(w, (x, y), (sa, sb), &p, (i, row0), c));
                    if !on_packed {
                        gemm_rows(x, y, &p, (i, row0), c, 1.0);
                    }
                })
            }
        }
        (TensorData::I32(x), TensorData::I32(y), TensorData::I32(z)) => {
            let done = match packed.filter(|w| w.side() == Side::Narrow) {
                Some(w) => narrow_matmul(z, x, &p, w, parallel, epilogue),
                None => integer_matmul(z, (x, y), &p, parallel, epilogue),
            };
            if !done {
                return None;
            }
        }
        (TensorData::F64(x), TensorData::F64(y), TensorData::F64(z)) => {
            batched(z, &p, parallel, epilogue, |i, row0, c| {
                gemm_rows(x, y, &p, (i, row0), c, 1.0)
            })
        }
        _ => return None,
    }
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::ThreadConfig;
    use graphlift_testkit::uniform as data;

    /// Native products agree with the reference (f64 accumulation) within the rounding of
    /// an f32 dot product, for broadcast batches, every threading path, and degenerate
    /// extents.
    #[test]
    fn agrees_with_the_reference() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[3, 5], &[5, 4]),
            (&[2, 3, 7, 5], &[5, 6]),
            (&[2, 1, 4, 8], &[3, 8, 2]),
            (&[12, 16, 32], &[12, 32, 16]),
            (&[128, 96], &[96, 160]),
            // Row blocks of 56 and 44; two products each split by rows.
            (&[100, 64], &[64, 50]),
            (&[2, 70, 64], &[64, 40]),
            (&[4, 0], &[0, 3]),
            (&[0, 4], &[4, 3]),
        ];
        for threads in [1, 2] {
            let parallel = Parallel::new(ThreadConfig::with_threads(threads));
            for &(da, db) in cases {
                let (sa, sb) = (Shape::new(da), Shape::new(db));
                let a = TensorData::F32(data(sa.element_count().unwrap(), 1));
                let b = TensorData::F32(data(sb.element_count().unwrap(), 2));
                let got = matmul((&a, &sa), (&b, &sb), None, &parallel, None, None).unwrap();
                let want = graphlift_runtime::reference::matmul(&a, &sa, &b, &sb).unwrap();
                let (TensorData::F32(g), TensorData::F32(w)) = (&got, &want) else {
                    panic!("types")
                };
                assert_eq!(g.len(), w.len(), "{da:?} x {db:?}");
                let k = da[da.len() - 1] as f32;
                for (x, y) in g.iter().zip(w) {
                    assert!(
                        (x - y).abs() <= 2.0 * k * f32::EPSILON,
                        "{da:?} x {db:?}: {x} vs {y}"
                    );
                }
            }
        }
        // Products on weights packed for the right side: one-row products (a single one, a
        // batch of them, widths of part of a panel, several panels and a tail), and
        // products split over up to 16 threads in tiles of rows and panels (`grid`).
        let rows: &[(&[usize], &[usize])] = &[
            (&[1, 512], &[512, 2048]),
            (&[3, 1, 40], &[3, 40, 100]),
            (&[1, 7], &[7, 5]),
            (&[40, 96], &[96, 400]),
            (&[2, 128, 64], &[64, 384]),
        ];
        for threads in [1, 2, 5, 16] {
            let parallel = Parallel::new(ThreadConfig::with_threads(threads));
            for &(da, db) in rows {
                let (sa, sb) = (Shape::new(da), Shape::new(db));
                let (k, n) = (db[db.len() - 2], db[db.len() - 1]);
                let a = data(sa.element_count().unwrap(), 3);
                let b = data(sb.element_count().unwrap(), 4);
                let count = sb.element_count().unwrap() / (k * n);
                let w = PackedWeights::pack(&b, Side::Right, 1, (count, k, n)).unwrap();
                let (a, b) = (TensorData::F32(a), TensorData::F32(b));
                let got = matmul((&a, &sa), (&b, &sb), None, &parallel, None, Some(&w)).unwrap();
                let want = graphlift_runtime::reference::matmul(&a, &sa, &b, &sb).unwrap();
                let (TensorData::F32(g), TensorData::F32(w)) = (&got, &want) else {
                    panic!("types")
                };
                assert_eq!(g.len(), w.len(), "{da:?} x {db:?}");
                for (x, y) in g.iter().zip(w) {
                    assert!(
                        (x - y).abs() <= 2.0 * k as f32 * f32::EPSILON,
                        "{da:?} x {db:?}, {threads} threads: {x} vs {y}"
                    );
                }
            }
        }
        let i = TensorData::I32(vec![1, 2, 3, 4]);
        let s = Shape::new([2, 2]);
        let parallel = Parallel::new(ThreadConfig::with_threads(1));
        assert_eq!(
            matmul((&i, &s), (&i, &s), None, &parallel, None, None),
            Some(TensorData::I32(vec![7, 10, 15, 22])),
            "i32 products run natively"
        );
        let l = TensorData::I64(vec![1, 2, 3, 4]);
        assert!(
            matmul((&l, &s), (&l, &s), None, &parallel, None, None).is_none(),
            "i64 products use the reference"
        );
    }

    /// The tiles cover the product with rows in whole microkernel tiles, and without an
    /// epilogue the busiest thread gets no more work than under columns alone or rows
    /// alone; MiniLM's eight panels over 16 threads come out as 16 tiles of equal work.
    #[test]
    fn grids_balance_the_threads() {
        assert_eq!(grid(128, (384, 8), 16, false), (64, 1));
        // MiniLM at batch 8: 4 x 4 tiles of 256 rows and 384 columns, not 16 row blocks
        // each reading all 2.4 MB of `b`.
        assert_eq!(grid(1024, (384, 32), 16, false), (256, 8));
        for m in [1, 7, 8, 40, 128, 300] {
            for panels in [1, 2, 3, 8, 13, 32] {
                for threads in [2, 3, 4, 8, 16] {
                    for epilogue in [false, true] {
                        let (rows, cols) = grid(m, (384, panels), threads, epilogue);
                        let case = format!("{m} {panels} {threads} {epilogue}");
                        assert!(rows == m || rows % ROW_BLOCK_ALIGN == 0, "{case}");
                        assert!((1..=m).contains(&rows) && (1..=panels).contains(&cols));
                        let busiest = |rows: usize, cols: usize| {
                            let tiles = m.div_ceil(rows) * panels.div_ceil(cols);
                            tiles.div_ceil(threads) * rows * cols
                        };
                        let by_columns = panels.div_ceil((2 * threads).min(panels));
                        let by_rows = m.div_ceil(threads).next_multiple_of(ROW_BLOCK_ALIGN).min(m);
                        if !epilogue {
                            assert!(busiest(rows, cols) <= busiest(m, by_columns), "{case}");
                            assert!(busiest(rows, cols) <= busiest(by_rows, panels), "{case}");
                        }
                    }
                }
            }
        }
    }

    /// With an epilogue, which a tile narrower than the product runs one row at a time,
    /// MiniLM's products at two threads split by rows alone; at 16 threads the tiles stay
    /// narrow, so that no thread streams all of `b`.
    #[test]
    fn an_epilogue_prefers_whole_rows_where_the_work_is_even() {
        assert_eq!(grid(128, (384, 8), 2, false), (128, 4));
        assert_eq!(grid(128, (384, 8), 2, true), (64, 8));
        assert_eq!(grid(128, (1536, 8), 2, true), (64, 8));
        assert_eq!(grid(128, (384, 32), 2, true), (64, 32));
        assert_eq!(grid(128, (384, 8), 16, true), (64, 1));
        assert_eq!(grid(128, (1536, 8), 16, true), (64, 1));
    }
}
