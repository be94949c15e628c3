//! Nearest-neighbour `Resize` as a gather: every output element copies the input element
//! its per-axis source indices name (the reference's [`axis_taps`], so both kernels share one
//! definition of the coordinate transformations and rounding modes), or the extrapolation
//! value. No arithmetic, so the result is the reference's bit for bit. An output row whose
//! source row is the previous output row's (upsampling along the outer axes) is a copy of
//! it; planes are split over threads.

use graphlift_ir::{Resize, ResizeMode, Shape, TensorData};
use graphlift_runtime::reference::{axis_taps, AxisTaps};
use graphlift_runtime::Tensor;

use super::result_buffer;
use crate::parallel::{for_each, Parallel};

/// The fewest output elements per parallel task.
const MIN_TASK: usize = 1 << 14;

/// Per output index of one axis, the input index it reads (`None`: the extrapolation
/// value), or `None` when some position has more than one tap (not a nearest resize).
fn source_indices(r: &Resize, axis: usize, input: usize) -> Option<Vec<Option<usize>>> {
    axis_taps(r, axis, input)
        .ok()?
        .into_iter()
        .map(|t| match t {
            AxisTaps::Extrapolate => Some(None),
            AxisTaps::Taps(taps) => match taps.as_slice() {
                [(i, w)] if *w == 1.0 => Some(Some(*i)),
                _ => None,
            },
        })
        .collect()
}

/// The input offset of element 0 of output plane `plane` (an index over every axis but the
/// last two, whose maps and input strides are `maps` and `strides`), or `None` when some
/// axis extrapolates.
fn plane_source(plane: usize, maps: &[Vec<Option<usize>>], strides: &[usize]) -> Option<usize> {
    let (mut rest, mut offset) = (plane, 0);
    for (map, &stride) in maps.iter().zip(strides).rev() {
        offset += map[rest % map.len()]? * stride;
        rest /= map.len();
    }
    Some(offset)
}

/// How one output row reads its input row (of `w` elements): each input element repeated
/// `f` times (nearest upsampling by an integer factor, every coordinate mode's usual case),
/// or an input column, or the extrapolation value, per output column.
enum RowMap {
    Repeat(usize),
    Columns(Vec<Option<usize>>),
}

impl RowMap {
    fn of(last: &[Option<usize>], w: usize) -> RowMap {
        let f = last.len() / w.max(1);
        let repeats = f >= 1
            && last.len() == f * w
            && last.iter().enumerate().all(|(i, &s)| s == Some(i / f));
        if repeats {
            RowMap::Repeat(f)
        } else {
            RowMap::Columns(last.to_vec())
        }
    }

    /// Writes output row `line` from input row `src`.
    fn fill<T: Copy>(&self, src: &[T], line: &mut [T], fill: T) {
        match self {
            RowMap::Repeat(2) => repeat::<T, 2>(src, line),
            RowMap::Repeat(3) => repeat::<T, 3>(src, line),
            RowMap::Repeat(4) => repeat::<T, 4>(src, line),
            RowMap::Repeat(f) => {
                for (run, &v) in line.chunks_exact_mut(*f).zip(src) {
                    run.fill(v);
                }
            }
            RowMap::Columns(columns) => {
                for (o, i) in line.iter_mut().zip(columns) {
                    *o = i.and_then(|i| src.get(i)).map_or(fill, |&v| v);
                }
            }
        }
    }
}

/// `line[i · F + j] = src[i]` for every `j < F` and every `i` both hold: runs of a fixed
/// length, which vectorize (as duplicating shuffles); a run of a length known only at run
/// time took about a nanosecond an element.
fn repeat<T: Copy, const F: usize>(src: &[T], line: &mut [T]) {
    let (runs, _) = line.as_chunks_mut::<F>();
    for (run, &v) in runs.iter_mut().zip(src) {
        *run = [v; F];
    }
}

fn gather<T: Copy + Send + Sync>(
    x: &[T],
    in_dims: &[usize],
    maps: &[Vec<Option<usize>>],
    fill: T,
    parallel: &Parallel,
    y: &mut [T],
) {
    let rank = maps.len();
    let last = &maps[rank - 1];
    let width = last.len();
    let in_width = in_dims[rank - 1];
    let row_map = RowMap::of(last, in_width);
    // Input strides; the next-to-last axis (a plane's rows) apart from the planes' axes, so
    // that a row's source is its plane's (worked out once a plane) plus its own.
    let strides = Shape::new(in_dims).strides();
    let one_row = [Some(0)];
    let (rows_map, row_stride, planes) = match rank {
        1 => (&one_row[..], 0, 0),
        _ => (&maps[rank - 2][..], strides[rank - 2], rank - 2),
    };
    let plane_rows = rows_map.len();
    // Rows per task: whole rows, at least MIN_TASK elements.
    let rows_per_task = MIN_TASK.div_ceil(width.max(1)).max(1);
    let task = |(t, out): (usize, &mut [T])| {
        let first = t * rows_per_task;
        let (mut plane, mut row) = (first / plane_rows, first % plane_rows);
        let mut base = plane_source(plane, &maps[..planes], &strides[..planes]);
        let mut previous: Option<Option<usize>> = None;
        for k in 0..out.len() / width {
            let source = base.and_then(|b| Some(b + rows_map[row]? * row_stride));
            row += 1;
            if row == plane_rows {
                (plane, row) = (plane + 1, 0);
                base = plane_source(plane, &maps[..planes], &strides[..planes]);
            }
            let (done, rest) = out.split_at_mut(k * width);
            let line = &mut rest[..width];
            if previous == Some(source) {
                line.copy_from_slice(&done[(k - 1) * width..]);
                continue;
            }
            match source {
                None => line.fill(fill),
                Some(offset) => row_map.fill(&x[offset..offset + in_width], line, fill),
            }
            previous = Some(source);
        }
    };
    let team = parallel.team_of(y.len(), MIN_TASK);
    let chunks = y.chunks_mut(rows_per_task * width.max(1)).enumerate();
    match team {
        Some(team) => for_each(team, chunks, task),
        None => chunks.for_each(task),
    }
}

/// `Resize` in `Nearest` mode of an `f32`/`f64` `x` as a gather (see the module doc), into
/// `out` when it is a buffer of the result's type and length, or `None` when this kernel
/// does not apply (another mode or type, a scalar, an attribute that does not fit `x`);
/// the caller then runs the reference.
pub fn resize_nearest(
    x: &Tensor,
    r: &Resize,
    out: Option<TensorData>,
    parallel: &Parallel,
) -> Option<TensorData> {
    if !matches!(r.mode, ResizeMode::Nearest(_)) {
        return None;
    }
    let in_dims = x.shape().dims();
    if in_dims.is_empty() || r.check(in_dims).is_err() {
        return None;
    }
    let maps = in_dims
        .iter()
        .enumerate()
        .map(|(axis, &d)| source_indices(r, axis, d))
        .collect::<Option<Vec<_>>>()?;
    let len: usize = maps.iter().map(Vec::len).product();
    if len == 0 {
        return Some(TensorData::zeros(x.data().element_type(), 0));
    }
    let mut y = result_buffer(out, x.element_type(), len);
    match (x.data(), &mut y) {
        (TensorData::F32(v), TensorData::F32(y)) => {
            let fill = r.extrapolation_value as f32;
            gather(v, in_dims, &maps, fill, parallel, y);
        }
        (TensorData::F64(v), TensorData::F64(y)) => {
            gather(v, in_dims, &maps, r.extrapolation_value, parallel, y);
        }
        _ => return None,
    }
    Some(y)
}

/// The test attribute of a resize of `dims` by `scales` (the output extents their floored
/// products) in `mode` under transformation `t`: no region of interest, no extrapolation,
/// no antialiasing. Shared by this module's tests and `resize_taps`'s.
#[cfg(test)]
pub(super) fn test_resize(
    mode: ResizeMode,
    t: graphlift_ir::CoordinateTransform,
    dims: &[usize],
    scales: &[f64],
) -> Resize {
    let out: Vec<usize> = dims
        .iter()
        .zip(scales)
        .map(|(&d, s)| (d as f64 * s).floor() as usize)
        .collect();
    Resize {
        mode,
        coordinate_transform: t,
        scales: scales.to_vec(),
        roi: vec![[0.0, 1.0]; out.len()],
        shape: out,
        exclude_outside: false,
        extrapolation_value: 0.0,
        antialias: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::ThreadConfig;
    use graphlift_ir::{CoordinateTransform, NearestMode, Shape};

    #[test]
    fn agrees_with_the_reference_bit_for_bit() {
        let dims = [2, 3, 5, 7];
        let n: usize = dims.iter().product();
        let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
        let xt = Tensor::from_vec(x.clone(), dims).unwrap();
        let cases = [
            (
                CoordinateTransform::Asymmetric,
                NearestMode::Floor,
                [1.0, 1.0, 2.0, 2.0],
            ),
            (
                CoordinateTransform::HalfPixel,
                NearestMode::RoundPreferFloor,
                [1.0, 1.0, 1.6, 0.5],
            ),
            (
                CoordinateTransform::AlignCorners,
                NearestMode::Ceil,
                [1.0, 2.0, 3.0, 1.3],
            ),
            (
                CoordinateTransform::TfHalfPixelForNn,
                NearestMode::RoundPreferCeil,
                [1.0, 1.0, 0.6, 3.0],
            ),
            // Integer factors along the last axis: runs of 3, 4 and 5 copies.
            (
                CoordinateTransform::Asymmetric,
                NearestMode::Floor,
                [1.0, 1.0, 3.0, 4.0],
            ),
            (
                CoordinateTransform::HalfPixel,
                NearestMode::RoundPreferFloor,
                [1.0, 1.0, 1.0, 5.0],
            ),
            (
                CoordinateTransform::Asymmetric,
                NearestMode::Floor,
                [1.0, 2.0, 1.0, 3.0],
            ),
        ];
        for threads in [1, 2] {
            let parallel = Parallel::new(ThreadConfig::with_threads(threads));
            for (t, m, scales) in cases {
                let r = test_resize(ResizeMode::Nearest(m), t, &dims, &scales);
                let want = graphlift_runtime::reference::resize(
                    &TensorData::F32(x.clone()),
                    &Shape::new(dims),
                    &r,
                )
                .unwrap();
                // Into a new buffer and into a recycled one holding stale values.
                let stale = TensorData::F32(vec![f32::NAN; want.len()]);
                for out in [None, Some(stale)] {
                    let got = resize_nearest(&xt, &r, out, &parallel).unwrap();
                    assert_eq!(got, want, "{t:?} {m:?} {scales:?}");
                }
            }
        }
    }

    /// Ranks 1 to 3 (a row's source: its plane's and its own), and planes enough to split
    /// over threads, agree with the reference bit for bit.
    #[test]
    fn every_rank_agrees_with_the_reference() {
        let cases: [(&[usize], &[f64]); 4] = [
            (&[7], &[2.0]),
            (&[5, 7], &[3.0, 2.0]),
            (&[3, 5, 7], &[1.0, 2.0, 1.5]),
            (&[1, 64, 20, 20], &[1.0, 1.0, 2.0, 2.0]),
        ];
        for threads in [1, 2] {
            let parallel = Parallel::new(ThreadConfig::with_threads(threads));
            for (dims, scales) in cases {
                let n: usize = dims.iter().product();
                let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
                let xt = Tensor::from_vec(x.clone(), dims.to_vec()).unwrap();
                let nearest = ResizeMode::Nearest(NearestMode::Floor);
                let r = test_resize(nearest, CoordinateTransform::Asymmetric, dims, scales);
                let want = graphlift_runtime::reference::resize(
                    &TensorData::F32(x),
                    &Shape::new(dims),
                    &r,
                )
                .unwrap();
                let got = resize_nearest(&xt, &r, None, &parallel).unwrap();
                assert_eq!(got, want, "{dims:?} x {scales:?}, {threads} threads");
            }
        }
    }
}
