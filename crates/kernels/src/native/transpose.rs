//! `Transpose` of any element type into the buffer the executor hands over, output row by
//! output row (a row is the last output axis): a copy where that axis is the input's last
//! too, else a strided gather; rows split over the threads for large tensors. The reference
//! walks every element through a general strided view and allocates its result.

use graphlift_ir::{match_data, Element, TensorData};
use graphlift_runtime::Tensor;

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
    let mut strides = vec![1usize; rank];
    for a in (0..rank - 1).rev() {
        strides[a] = strides[a + 1] * dims[a + 1];
    }
    let layout = Layout {
        dims: perm.iter().map(|&p| dims[p]).collect(),
        strides: perm.iter().map(|&p| strides[p]).collect(),
    };
    let len = x.data().len();
    let mut y = match out {
        Some(d) if d.element_type() == x.element_type() && d.len() == len => d,
        _ => TensorData::zeros(x.element_type(), len),
    };
    match_data!(&mut y, v => rows(x.data(), v, &layout, parallel))?;
    Some(y)
}

/// The output's extents and, per output axis, the input stride it steps by.
struct Layout {
    dims: Vec<usize>,
    strides: Vec<usize>,
}

/// Fills every output row of `y` from `x`, in tasks of whole rows over the threads when
/// there are enough elements.
fn rows<T: Element + Send + Sync>(
    x: &TensorData,
    y: &mut [T],
    layout: &Layout,
    parallel: &Parallel,
) -> Option<()> {
    let x = x.as_slice::<T>()?;
    let width = *layout.dims.last()?;
    if width == 0 || y.is_empty() {
        return Some(());
    }
    let rows_per_task = MIN_TASK.div_ceil(width).max(1);
    let task = |(t, out): (usize, &mut [T])| {
        for (k, row) in out.chunks_exact_mut(width).enumerate() {
            fill_row(x, row, t * rows_per_task + k, layout);
        }
    };
    let pool = parallel.pool().filter(|_| y.len() >= 2 * MIN_TASK);
    let tasks = y.chunks_mut(rows_per_task * width).enumerate();
    match pool {
        Some(pool) => for_each(pool, tasks, task),
        None => tasks.for_each(task),
    }
    Some(())
}

/// Output row `r` (an index over every output axis but the last) into `row`.
fn fill_row<T: Copy>(x: &[T], row: &mut [T], r: usize, layout: &Layout) {
    let rank = layout.dims.len();
    let (mut rest, mut base) = (r, 0);
    for a in (0..rank - 1).rev() {
        base += (rest % layout.dims[a]) * layout.strides[a];
        rest /= layout.dims[a];
    }
    let step = layout.strides[rank - 1];
    if step == 1 {
        row.copy_from_slice(&x[base..base + row.len()]);
    } else {
        for (j, o) in row.iter_mut().enumerate() {
            *o = x[base + j * step];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::ThreadConfig;
    use graphlift_ir::Shape;

    /// Every permutation of a 4-D tensor, one large enough to split over threads, a last
    /// axis kept in place, an integer type and a recycled buffer agree with the reference
    /// exactly; a wrong permutation is left to the reference.
    #[test]
    fn agrees_with_the_reference() {
        let perms: &[&[usize]] = &[
            &[0, 1, 2, 3],
            &[0, 2, 1, 3],
            &[0, 3, 1, 2],
            &[3, 2, 1, 0],
            &[1, 0, 3, 2],
            &[2, 0, 3, 1],
        ];
        for threads in [1, 2] {
            let parallel = Parallel::new(ThreadConfig::with_threads(threads));
            for dims in [[2usize, 3, 4, 5], [2, 64, 33, 17]] {
                let n: usize = dims.iter().product();
                for integer in [false, true] {
                    let data = if integer {
                        TensorData::I64((0..n as i64).collect())
                    } else {
                        TensorData::F32((0..n).map(|i| i as f32 * 0.5).collect())
                    };
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
            let x = Tensor::from_data(TensorData::F32(vec![0.0; 6]), Shape::new([2, 3])).unwrap();
            assert!(transpose(&x, &[0, 0], None, &parallel).is_none());
            assert!(transpose(&x, &[0, 2], None, &parallel).is_none());
            assert!(transpose(&x, &[1], None, &parallel).is_none());
        }
    }
}
