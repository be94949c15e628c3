//! `Concat` of any element type copied run by run into the buffer the executor hands over
//! (the reference allocates a new result on every call), a large join's output split into
//! chunks over the threads: a memory-bound copy that at 3 MB takes longer than the
//! convolutions around it when it runs on one thread into fresh pages.

use graphlift_ir::{match_data, Element, TensorData};
use graphlift_runtime::Tensor;

use crate::parallel::{for_each, Parallel};

/// `parts` joined along `axis` (every part of one element type and rank, the same extents
/// on every other axis), into `out` when it is a buffer of the result's type and length;
/// `None` where the parts do not fit together (the reference then reports why).
pub(super) fn concat(
    parts: &[&Tensor],
    axis: usize,
    out: Option<TensorData>,
    parallel: &Parallel,
) -> Option<TensorData> {
    let first = parts.first()?;
    let dims = first.shape().dims();
    let fits = |t: &Tensor| {
        let d = t.shape().dims();
        t.element_type() == first.element_type()
            && d.len() == dims.len()
            && (0..d.len()).all(|a| a == axis || d[a] == dims[a])
            && t.shape().element_count().ok() == Some(t.data().len())
    };
    if axis >= dims.len() || !parts.iter().all(|t| fits(t)) {
        return None;
    }
    let outer: usize = dims[..axis].iter().product();
    // Elements of each part per outer index, and where each part's run starts in a row of
    // the output.
    let runs: Vec<usize> = parts
        .iter()
        .map(|t| t.shape().dims()[axis..].iter().product())
        .collect();
    let starts: Vec<usize> = runs
        .iter()
        .scan(0, |at, &r| {
            let s = *at;
            *at += r;
            Some(s)
        })
        .collect();
    let row: usize = runs.iter().sum();
    let len = outer.checked_mul(row)?;
    let mut y = match out {
        Some(d) if d.element_type() == first.element_type() && d.len() == len => d,
        _ => TensorData::zeros(first.element_type(), len),
    };
    let layout = Layout {
        runs: &runs,
        starts: &starts,
        row,
    };
    match_data!(&mut y, v => join(v, parts, &layout, parallel), String(_) => None)?;
    Some(y)
}

/// Where the parts' runs lie in a row of the output.
struct Layout<'a> {
    runs: &'a [usize],
    starts: &'a [usize],
    row: usize,
}

/// Fills `y` with the parts' runs, in chunks over the threads when it is large enough.
fn join<T: Element + Send + Sync>(
    y: &mut [T],
    parts: &[&Tensor],
    layout: &Layout<'_>,
    parallel: &Parallel,
) -> Option<()> {
    let sources: Vec<&[T]> = parts
        .iter()
        .map(|t| t.data().as_slice::<T>())
        .collect::<Option<_>>()?;
    let bytes = 2 * std::mem::size_of_val(y);
    match parallel.split(0, y.len(), bytes, y.len()) {
        Some((team, chunks)) => {
            let mut pieces = Vec::with_capacity(chunks.len());
            let mut rest = &mut *y;
            for &(begin, end) in &chunks {
                let (piece, tail) = rest.split_at_mut(end - begin);
                pieces.push((begin, piece));
                rest = tail;
            }
            for_each(team, pieces.into_iter(), |(begin, piece)| {
                copy_range(piece, begin, &sources, layout)
            });
        }
        None => copy_range(y, 0, &sources, layout),
    }
    Some(())
}

/// Writes output elements `begin..begin + dst.len()` into `dst`: each output row is the
/// parts' runs for its outer index, one after another. The part and row are found once,
/// then followed run by run; runs of a few elements (a join along a last axis of one
/// element, as harmonic stacking interleaves eight `[1, T, F, 1]` maps) are copied element
/// by element rather than by `memcpy`.
fn copy_range<T: Copy>(dst: &mut [T], begin: usize, sources: &[&[T]], layout: &Layout<'_>) {
    if dst.is_empty() || layout.row == 0 {
        return;
    }
    let (mut o, r) = (begin / layout.row, begin % layout.row);
    // The part whose run holds column `r` (the last of any empty runs starting there).
    let mut p = layout.starts.partition_point(|&s| s <= r) - 1;
    let mut within = r - layout.starts[p];
    // Parts of one element a row (a stack along a new last axis): whole rows gathered
    // element by element, one from each part.
    let singles = layout.runs.iter().all(|&n| n == 1);
    let mut i = 0;
    while i < dst.len() {
        if singles && p == 0 && dst.len() - i >= layout.row {
            let rows = (dst.len() - i) / layout.row;
            for (k, row) in dst[i..i + rows * layout.row]
                .chunks_exact_mut(layout.row)
                .enumerate()
            {
                for (d, src) in row.iter_mut().zip(sources) {
                    *d = src[o + k];
                }
            }
            (i, o) = (i + rows * layout.row, o + rows);
            continue;
        }
        let n = (layout.runs[p] - within).min(dst.len() - i);
        let from = o * layout.runs[p] + within;
        let (to, src) = (&mut dst[i..i + n], &sources[p][from..from + n]);
        if n <= 4 {
            to.iter_mut().zip(src).for_each(|(t, &s)| *t = s);
        } else {
            to.copy_from_slice(src);
        }
        i += n;
        within = 0;
        p += 1;
        if p == layout.runs.len() {
            (p, o) = (0, o + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::ThreadConfig;
    use graphlift_ir::Shape;

    /// Joins along every axis (empty parts, one part, a large join split over threads, parts
    /// of one element a row, an integer type) agree with the reference exactly, into a
    /// recycled buffer and a new one.
    #[test]
    fn agrees_with_the_reference() {
        const MAP: &[usize] = &[1, 300, 33, 1];
        let cases: &[(&[&[usize]], usize)] = &[
            (&[&[2, 3, 4], &[2, 5, 4]], 1),
            (&[&[2, 3, 4], &[2, 3, 1], &[2, 3, 0], &[2, 3, 7]], 2),
            (&[&[1, 3], &[4, 3]], 0),
            (&[&[6]], 0),
            (
                &[&[1, 16, 160, 160], &[1, 16, 160, 160], &[1, 0, 160, 160]],
                1,
            ),
            (&[&[3, 70, 33], &[3, 70, 1]], 2),
            // Stacks along a last axis of one element (rows of 8 and of 7, so that the
            // threads' chunks start inside rows).
            (&[MAP; 8], 3),
            (&[MAP; 7], 3),
            (&[&[2, 9, 1], &[2, 9, 1], &[2, 9, 0], &[2, 9, 1]], 2),
        ];
        for threads in [1, 3] {
            let parallel = Parallel::new(ThreadConfig::with_threads(threads));
            for &(shapes, axis) in cases {
                for integer in [false, true] {
                    let mut seed = 0;
                    let tensors: Vec<Tensor> = shapes
                        .iter()
                        .map(|&d| {
                            let s = Shape::new(d);
                            let n = s.element_count().unwrap();
                            seed += n;
                            let data = if integer {
                                TensorData::I64((0..n).map(|i| (i + seed) as i64).collect())
                            } else {
                                TensorData::F32((0..n).map(|i| (i + seed) as f32).collect())
                            };
                            Tensor::from_data(data, s).unwrap()
                        })
                        .collect();
                    let parts: Vec<&Tensor> = tensors.iter().collect();
                    let refs: Vec<_> = parts.iter().map(|t| (t.data(), t.shape())).collect();
                    let want = graphlift_runtime::reference::concat(&refs, axis).unwrap();
                    let recycled = Some(TensorData::zeros(want.element_type(), want.len()));
                    for out in [None, recycled] {
                        let got = concat(&parts, axis, out, &parallel).unwrap();
                        assert_eq!(got, want, "{shapes:?} on axis {axis}, {threads} threads");
                    }
                }
            }
        }
    }

    /// Parts that do not fit together are left to the reference, which names the mismatch.
    #[test]
    fn refuses_parts_that_do_not_fit() {
        let parallel = Parallel::new(ThreadConfig::with_threads(1));
        let t = |d: &[usize], data: TensorData| Tensor::from_data(data, Shape::new(d)).unwrap();
        let a = t(&[2, 3], TensorData::F32(vec![0.0; 6]));
        let b = t(&[3, 3], TensorData::F32(vec![0.0; 9]));
        let c = t(&[2, 1], TensorData::I32(vec![0; 2]));
        assert!(concat(&[&a, &b], 1, None, &parallel).is_none());
        assert!(concat(&[&a, &c], 1, None, &parallel).is_none());
        assert!(concat(&[&a], 2, None, &parallel).is_none());
    }
}
