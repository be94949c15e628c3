//! `Transpose` of any element type into the buffer the executor hands over, output row by
//! output row (a row is the last output axis): a copy where that axis is the input's last
//! too, else a strided gather; rows split over the threads for large tensors. The reference
//! walks every element through a general strided view and allocates its result. `Slice`
//! (`super::slice`) copies its strided view with the same rows ([`Layout`], [`rows`]).

use graphlift_ir::{match_data, Element, TensorData};
use graphlift_runtime::Tensor;

use super::result_buffer;
use crate::parallel::{for_each, Parallel};

/// The fewest elements a parallel task copies.
const MIN_TASK: usize = 1 << 15;

/// `x` with its axes permuted by `perm` (output axis `i` is input axis `perm[i]`), into
/// `out` when it is a buffer of the result's type and length; `None` where `perm` does not
/// fit `x` (the reference then reports why).
pub(super) fn transpose(
    x: &Tensor,
    perm: &[usize],
    out: Option<TensorData>,
    parallel: &Parallel,
) -> Option<TensorData> {
    let dims = x.shape().dims();
    let rank = dims.len();
    let mut seen = vec![false; rank];
    let is_permutation = perm.len() == rank
        && perm
            .iter()
            .all(|&p| p < rank && !std::mem::replace(&mut seen[p], true));
    if !is_permutation || rank == 0 || x.shape().element_count().ok()? != x.data().len() {
        return None;
    }
    // The input strides in elements, then the output's extents and their input strides.
    let strides = x.shape().strides();
    let layout = Layout {
        dims: perm.iter().map(|&p| dims[p]).collect(),
        strides: perm.iter().map(|&p| strides[p]).collect(),
        base: 0,
    };
    let len = x.data().len();
    let mut y = result_buffer(out, x.element_type(), len);
    match_data!(&mut y, v => rows(x.data(), v, &layout, parallel), String(_) => None)?;
    Some(y)
}

/// A strided view of the input as the output reads it: element `[i₀, i₁, ...]` of the
/// output is input element `base + Σ iₐ · strides[a]`.
pub(super) struct Layout {
    /// The output's extents.
    pub dims: Vec<usize>,
    /// Per output axis, the input stride it steps by.
    pub strides: Vec<usize>,
    /// The input index of the output's first element.
    pub base: usize,
}

impl Layout {
    /// The same view with the fewest axes: axes of extent 1 dropped (they add nothing to an
    /// index), and each axis merged into the one before it where the two step through the
    /// input as one (`strides[a] = dims[a + 1] · strides[a + 1]`). A slice or transpose
    /// whose last axes are such (a last axis of one element, `[1, T, F, 1]` sliced along
    /// `F`) then copies runs of many elements, not one element a row.
    fn coalesced(&self) -> Layout {
        let mut dims: Vec<usize> = Vec::with_capacity(self.dims.len());
        let mut strides: Vec<usize> = Vec::with_capacity(self.dims.len());
        for (&d, &s) in self.dims.iter().zip(&self.strides) {
            if d == 1 {
                continue;
            }
            match (dims.last_mut(), strides.last_mut()) {
                (Some(pd), Some(ps)) if *ps == d * s => {
                    *pd *= d;
                    *ps = s;
                }
                _ => {
                    dims.push(d);
                    strides.push(s);
                }
            }
        }
        if dims.is_empty() {
            // Every extent 1, or no axes: one element.
            let n = self.dims.iter().product();
            dims.push(n);
            strides.push(1);
        }
        Layout {
            dims,
            strides,
            base: self.base,
        }
    }
}

/// Fills every output row of `y` from `x` (its elements of type `T`, every index `layout`
/// names inside it; `None` for another type), in tasks of whole rows over the threads when
/// there are enough elements.
pub(super) fn rows<T: Element + Send + Sync>(
    x: &TensorData,
    y: &mut [T],
    layout: &Layout,
    parallel: &Parallel,
) -> Option<()> {
    let layout = &layout.coalesced();
    let x = x.as_slice::<T>()?;
    let width = *layout.dims.last()?;
    if width == 0 || y.is_empty() {
        return Some(());
    }
    // Where the output's next-to-last axis is the input's last (a transpose of the last two
    // axes, attention's `Kᵀ`), rows go in blocks of `BLOCK`: each output element's input
    // and the next `BLOCK - 1` rows' are adjacent, so each read is one run of the input
    // and the block's rows stay in L1 as they are written, instead of every element
    // gathered `step` apart.
    let rank = layout.dims.len();
    let blocks = (rank >= 2 && layout.strides[rank - 2] == 1 && layout.strides[rank - 1] != 1)
        .then(|| layout.dims[rank - 2]);
    // Tasks of whole blocks (rows of 8,210 made tasks of four rows, each gathered element
    // by element).
    let mut rows_per_task = MIN_TASK.div_ceil(width).max(1);
    if blocks.is_some() {
        rows_per_task = rows_per_task.next_multiple_of(BLOCK);
    }
    let task = |(t, out): (usize, &mut [T])| fill(x, out, t * rows_per_task, layout, blocks);
    let team = parallel.team_of(y.len(), MIN_TASK);
    let tasks = y.chunks_mut(rows_per_task * width).enumerate();
    match team {
        Some(team) => for_each(team, tasks, task),
        None => tasks.for_each(task),
    }
    Some(())
}

/// Output rows `first..` into `out` (whole rows of the output's width), in blocks of
/// [`BLOCK`] rows that do not cross a multiple of `blocks` where that is set (see [`rows`]).
fn fill<T: Element>(x: &[T], out: &mut [T], first: usize, layout: &Layout, blocks: Option<usize>) {
    let width = layout.dims.last().copied().unwrap_or(0).max(1);
    if blocks.is_none() && width < NARROW {
        fill_narrow(x, out, first, layout);
        return;
    }
    let rows = out.len() / width;
    let mut k = 0;
    while k < rows {
        let r = first + k;
        let run = match blocks {
            Some(d) => BLOCK.min(d - r % d).min(rows - k),
            None => 1,
        };
        let block = &mut out[k * width..(k + run) * width];
        if run == 1 {
            fill_row(x, block, r, layout);
        } else {
            fill_block(x, block, (r, run), layout);
        }
        k += run;
    }
}

/// The transpose of the `rows × cols` block of `x` whose rows lie `stride` apart into the
/// first `cols · rows` elements of `out` (row-major): `out[p · rows + j] = x[j · stride +
/// p]`, eight rows of `out` at a time as [`rows`] writes attention's `Kᵀ`. `false`, writing
/// nothing, where the block does not lie in `x` (or `stride < cols`) or `out` is shorter.
pub(super) fn transpose_into<T: Element>(
    x: &[T],
    (rows, cols, stride): (usize, usize, usize),
    out: &mut [T],
) -> bool {
    // One past the block's last element of `x` (none for no rows).
    let end = match rows.checked_sub(1) {
        Some(last) => last.checked_mul(stride).and_then(|at| at.checked_add(cols)),
        None => Some(0),
    };
    // (Then `rows · cols` is at most that end: no overflow.)
    if stride < cols || end.is_none_or(|end| end > x.len()) {
        return false;
    }
    let Some(out) = out.get_mut(..rows * cols) else {
        return false;
    };
    if rows > 0 && cols > 0 {
        let layout = Layout {
            dims: vec![cols, rows],
            strides: vec![1, stride],
            base: 0,
        };
        fill(x, out, 0, &layout, Some(cols));
    }
    true
}

/// Output rows a block of [`rows`] fills together.
const BLOCK: usize = 8;

/// Rows narrower than this ([`fill_narrow`]) follow their input index from row to row.
const NARROW: usize = 16;

/// [`fill`] for rows of fewer than [`NARROW`] elements (a transpose to channels last, with
/// three or two channels): each row's input index is the last one's moved along the output
/// axes (an odometer), not recomputed by a division per axis as [`row_base`] does.
fn fill_narrow<T: Copy>(x: &[T], out: &mut [T], first: usize, layout: &Layout) {
    let lead = layout.dims.len() - 1;
    let (dims, strides) = (&layout.dims[..lead], &layout.strides[..lead]);
    let step = layout.strides[lead];
    let width = layout.dims[lead].max(1);
    // Row `first`'s index along each leading axis, and its input index.
    let mut at = vec![0usize; lead];
    let mut rest = first;
    for a in (0..lead).rev() {
        at[a] = rest % dims[a];
        rest /= dims[a];
    }
    let mut base = row_base(first, layout);
    for row in out.chunks_exact_mut(width) {
        for (j, o) in row.iter_mut().enumerate() {
            *o = x[base + j * step];
        }
        for a in (0..lead).rev() {
            at[a] += 1;
            base += strides[a];
            if at[a] < dims[a] {
                break;
            }
            base -= dims[a] * strides[a];
            at[a] = 0;
        }
    }
}

/// The input index of output row `r`'s first element (`r` an index over every output axis
/// but the last).
fn row_base(r: usize, layout: &Layout) -> usize {
    let rank = layout.dims.len();
    let (mut rest, mut base) = (r, layout.base);
    for a in (0..rank - 1).rev() {
        base += (rest % layout.dims[a]) * layout.strides[a];
        rest /= layout.dims[a];
    }
    base
}

/// Output rows `r..r + run` into `rows` (`run` rows of the output's width), where row
/// `r + i` starts at input element `row_base(r) + i`: column `j` of the block is the run of
/// `run` input elements from `row_base(r) + j · step`.
fn fill_block<T: Element>(x: &[T], rows: &mut [T], (r, run): (usize, usize), layout: &Layout) {
    let base = row_base(r, layout);
    let step = layout.strides[layout.dims.len() - 1];
    let width = rows.len() / run;
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if std::mem::size_of::<T>() == 4 && run == BLOCK && crate::target::CpuFeatures::host().avx2 {
        let last = base + (width - 1) * step + BLOCK;
        assert!(x.len() >= last && rows.len() == BLOCK * width);
        done = width - width % BLOCK;
        for j in (0..done).step_by(BLOCK) {
            // SAFETY: AVX2 (checked above); `T` is four bytes of plain data (an element
            // type), moved as such; the tile reads the runs of `BLOCK` elements at `base +
            // (j + c) · step` (`j + c < width`, all below `last <= x.len()`) and writes
            // columns `j..j + BLOCK` of the block's `BLOCK` rows of `width`.
            unsafe {
                x86::transpose_8x8(
                    x.as_ptr().add(base + j * step).cast(),
                    step,
                    rows.as_mut_ptr().add(j).cast(),
                    width,
                )
            };
        }
    }
    for j in done..width {
        let column = &x[base + j * step..base + j * step + run];
        for (i, &v) in column.iter().enumerate() {
            rows[i * width + j] = v;
        }
    }
}

/// The AVX2 tile of [`fill_block`] for four-byte elements.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// The 8 x 8 block of four-byte values whose row `c` is the 8 values at `src + c ·
    /// src_stride` written transposed: row `i` at `dst + i · dst_stride` (strides in
    /// elements).
    ///
    /// # Safety
    /// AVX2; those 64 values are readable and writable.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn transpose_8x8(
        src: *const f32,
        src_stride: usize,
        dst: *mut f32,
        dst_stride: usize,
    ) {
        // SAFETY: as this function's contract.
        unsafe {
            let r: [__m256; 8] = std::array::from_fn(|c| _mm256_loadu_ps(src.add(c * src_stride)));
            let t: [__m256; 8] = std::array::from_fn(|p| {
                let (a, b) = (r[2 * (p / 2)], r[2 * (p / 2) + 1]);
                if p % 2 == 0 {
                    _mm256_unpacklo_ps(a, b)
                } else {
                    _mm256_unpackhi_ps(a, b)
                }
            });
            let u: [__m256; 8] = std::array::from_fn(|p| {
                // Pairs (t0, t2), (t1, t3) for rows 0-3, (t4, t6), (t5, t7) for 4-7.
                let q = 4 * (p / 4) + (p % 4) / 2;
                let (a, b) = (t[q], t[q + 2]);
                if p % 2 == 0 {
                    _mm256_shuffle_ps::<0x44>(a, b)
                } else {
                    _mm256_shuffle_ps::<0xEE>(a, b)
                }
            });
            for i in 0..4 {
                _mm256_storeu_ps(
                    dst.add(i * dst_stride),
                    _mm256_permute2f128_ps::<0x20>(u[i], u[i + 4]),
                );
                _mm256_storeu_ps(
                    dst.add((i + 4) * dst_stride),
                    _mm256_permute2f128_ps::<0x31>(u[i], u[i + 4]),
                );
            }
        }
    }
}

/// Output row `r` (an index over every output axis but the last) into `row`.
fn fill_row<T: Copy>(x: &[T], row: &mut [T], r: usize, layout: &Layout) {
    let rank = layout.dims.len();
    let base = row_base(r, layout);
    let step = layout.strides[rank - 1];
    if step == 1 {
        row.copy_from_slice(&x[base..base + row.len()]);
    } else {
        for (o, &v) in row.iter_mut().zip(x[base..].iter().step_by(step)) {
            *o = v;
        }
    }
}

/// `n` test elements `0, 1, 2, ...`: `i64`, or `f32` halved.
#[cfg(test)]
pub(super) fn ramp(n: usize, integer: bool) -> TensorData {
    if integer {
        TensorData::I64((0..n as i64).collect())
    } else {
        TensorData::F32((0..n).map(|i| i as f32 * 0.5).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::ThreadConfig;
    use graphlift_ir::Shape;

    /// Every permutation of a 4-D tensor, one large enough to split over threads, a last
    /// axis kept in place, an integer type, a recycled buffer and output rows wider than a
    /// task's share agree with the reference exactly; a wrong permutation is left to the
    /// reference.
    #[test]
    fn agrees_with_the_reference() {
        let perms: &[&[usize]] = &[
            &[0, 1, 2, 3],
            &[0, 2, 1, 3],
            &[0, 3, 1, 2],
            &[3, 2, 1, 0],
            &[1, 0, 3, 2],
            &[2, 0, 3, 1],
            &[0, 1, 3, 2],
            &[2, 1, 3, 0],
        ];
        for threads in [1, 2] {
            let parallel = Parallel::new(ThreadConfig::with_threads(threads));
            for dims in [[2usize, 3, 4, 5], [2, 64, 33, 17], [3, 2, 19, 37]] {
                let n: usize = dims.iter().product();
                for integer in [false, true] {
                    let data = ramp(n, integer);
                    let x = Tensor::from_data(data.clone(), Shape::new(dims)).unwrap();
                    for &perm in perms {
                        let want =
                            graphlift_runtime::reference::transpose(&data, &Shape::new(dims), perm)
                                .unwrap();
                        let stale = Some(TensorData::zeros(want.element_type(), n));
                        for out in [None, stale] {
                            let got = transpose(&x, perm, out, &parallel).unwrap();
                            assert_eq!(got, want, "{dims:?} by {perm:?}, {threads} threads");
                        }
                    }
                }
            }
            // Output rows wider than a task's share (tasks of whole blocks of rows): a
            // vocabulary's scores transposed, as `i32`.
            for (dims, perm) in [
                (&[8210usize, 32][..], &[1usize, 0][..]),
                (&[2, 5000, 24], &[0, 2, 1]),
            ] {
                let n: usize = dims.iter().product();
                let data = TensorData::I32((0..n as i32).collect());
                let x = Tensor::from_data(data.clone(), Shape::new(dims)).unwrap();
                let want = graphlift_runtime::reference::transpose(&data, &Shape::new(dims), perm);
                assert_eq!(transpose(&x, perm, None, &parallel), want.ok(), "{dims:?}");
            }
            let x = Tensor::from_data(TensorData::F32(vec![0.0; 6]), Shape::new([2, 3])).unwrap();
            assert!(transpose(&x, &[0, 0], None, &parallel).is_none());
            assert!(transpose(&x, &[0, 2], None, &parallel).is_none());
            assert!(transpose(&x, &[1], None, &parallel).is_none());
        }
    }

    /// A block of a strided matrix transposed into a buffer (attention's `k_hᵀ`): every
    /// element in place for blocks of whole and partial tiles of eight, wider strides than
    /// the block and a buffer longer than it; a block outside `x`, a stride below the
    /// width or a short buffer is refused and leaves the buffer as it was.
    #[test]
    fn transpose_into_a_buffer() {
        for (rows, cols, stride) in [
            (128, 32, 384),
            (19, 37, 37),
            (8, 8, 8),
            (5, 3, 11),
            (0, 4, 4),
        ] {
            let x: Vec<f32> = (0..rows * stride + 7).map(|i| i as f32).collect();
            let mut out = vec![-1.0f32; rows * cols + 3];
            assert!(transpose_into(&x, (rows, cols, stride), &mut out));
            for p in 0..cols {
                for j in 0..rows {
                    assert_eq!(
                        out[p * rows + j],
                        x[j * stride + p],
                        "{rows}x{cols}/{stride}"
                    );
                }
            }
            assert!(out[rows * cols..].iter().all(|&v| v == -1.0));
        }
        let x = vec![1.0f32; 100];
        for (block, len) in [
            ((10, 10, 11), 100),
            ((11, 10, 10), 110),
            ((4, 5, 4), 20),
            ((10, 10, 10), 99),
        ] {
            let mut out = vec![-1.0f32; len];
            assert!(!transpose_into(&x, block, &mut out), "{block:?} into {len}");
            assert!(out.iter().all(|&v| v == -1.0));
        }
    }
}
