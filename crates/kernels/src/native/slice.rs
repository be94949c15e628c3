//! `Slice` with positive steps (ONNX `Slice`, normalised to one [`SliceAxis`] per axis) of
//! any element type, into the buffer the executor hands over: the strided view copied output
//! row by output row with the transpose's rows (`super::transpose`), a row a copy where the
//! last axis steps by one. The reference walks every element and allocates its result.

use graphlift_ir::{match_data, SliceAxis, TensorData};
use graphlift_runtime::Tensor;

use super::result_buffer;
use super::transpose::{rows, Layout};
use crate::parallel::Parallel;

/// The elements of `x` that `axes` select (axis `a`: `len` indices from `start`, `step`
/// apart), into `out` when it is a buffer of the result's type and length; `None` where an
/// axis steps backwards or leaves the input's extent, or `axes` does not fit `x` (the
/// reference then runs, and reports what is wrong).
pub(super) fn slice(
    x: &Tensor,
    axes: &[SliceAxis],
    out: Option<TensorData>,
    parallel: &Parallel,
) -> Option<TensorData> {
    let dims = x.shape().dims();
    let inside = |(ax, &d): (&SliceAxis, &usize)| {
        let step = usize::try_from(ax.step).ok().filter(|&s| s > 0);
        let last = step.and_then(|s| ax.start.checked_add(s.checked_mul(ax.len.checked_sub(1)?)?));
        step.is_some() && (ax.len == 0 || last.is_some_and(|l| l < d))
    };
    if axes.len() != dims.len()
        || dims.is_empty()
        || x.shape().element_count().ok()? != x.data().len()
        || !axes.iter().zip(dims).all(inside)
    {
        return None;
    }
    let strides = x.shape().strides();
    let layout = Layout {
        dims: axes.iter().map(|ax| ax.len).collect(),
        strides: axes
            .iter()
            .zip(&strides)
            .map(|(ax, &s)| ax.step as usize * s)
            .collect(),
        base: axes.iter().zip(&strides).map(|(ax, &s)| ax.start * s).sum(),
    };
    let len: usize = layout.dims.iter().product();
    let mut y = result_buffer(out, x.element_type(), len);
    match_data!(&mut y, v => rows(x.data(), v, &layout, parallel), String(_) => None)?;
    Some(y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::ThreadConfig;
    use graphlift_ir::Shape;

    fn axis(start: usize, step: i64, len: usize) -> SliceAxis {
        SliceAxis { start, step, len }
    }

    /// Strided rows and columns (YOLOv5's space-to-depth), unit steps, a last axis of one
    /// element, axes merged into longer rows, an empty slice, one large enough to split over
    /// threads, an integer type and a recycled buffer agree with the reference exactly; a backward step, one leaving the
    /// extent and too few axes are left to the reference.
    #[test]
    fn agrees_with_the_reference() {
        let dims = [2usize, 3, 40, 37];
        let n: usize = dims.iter().product();
        let slices: &[[SliceAxis; 4]] = &[
            [axis(0, 1, 2), axis(0, 1, 3), axis(0, 2, 20), axis(0, 1, 37)],
            [axis(0, 1, 2), axis(0, 1, 3), axis(1, 2, 20), axis(1, 2, 18)],
            [axis(1, 1, 1), axis(1, 1, 2), axis(3, 3, 12), axis(5, 4, 8)],
            [axis(0, 1, 2), axis(2, 1, 1), axis(0, 1, 40), axis(36, 1, 1)],
            [axis(0, 1, 2), axis(0, 1, 3), axis(7, 1, 0), axis(0, 1, 37)],
            // Whole trailing axes (merged into rows of 1,480) and a run along axis 2 of
            // rows of one element (`[.., F, 1]`-like: merged with the last).
            [axis(1, 1, 1), axis(1, 1, 2), axis(0, 1, 40), axis(0, 1, 37)],
            [axis(0, 1, 2), axis(0, 1, 3), axis(5, 1, 30), axis(4, 1, 1)],
        ];
        for threads in [1, 2] {
            let parallel = Parallel::new(ThreadConfig::with_threads(threads));
            for integer in [false, true] {
                let data = super::super::transpose::ramp(n, integer);
                let x = Tensor::from_data(data.clone(), Shape::new(dims)).unwrap();
                for axes in slices {
                    let want = graphlift_runtime::reference::slice(&data, &Shape::new(dims), axes)
                        .unwrap();
                    let stale = Some(TensorData::zeros(want.element_type(), want.len()));
                    for out in [None, stale] {
                        let got = slice(&x, axes, out, &parallel).unwrap();
                        assert_eq!(got, want, "{axes:?}, {threads} threads");
                    }
                }
            }
            // Space-to-depth over a 256 x 256 image: 49,152 elements, split over threads.
            let big = [1usize, 3, 256, 256];
            let data = TensorData::F32((0..3 * 256 * 256).map(|i| i as f32).collect());
            let x = Tensor::from_data(data.clone(), Shape::new(big)).unwrap();
            let axes = [
                axis(0, 1, 1),
                axis(0, 1, 3),
                axis(1, 2, 128),
                axis(0, 2, 128),
            ];
            let want = graphlift_runtime::reference::slice(&data, &Shape::new(big), &axes);
            assert_eq!(slice(&x, &axes, None, &parallel), want.ok());
            let x = Tensor::from_data(TensorData::F32(vec![0.0; n]), Shape::new(dims)).unwrap();
            let backwards = [
                axis(0, 1, 2),
                axis(2, -1, 3),
                axis(0, 1, 40),
                axis(0, 1, 37),
            ];
            let outside = [axis(0, 1, 2), axis(0, 1, 3), axis(2, 2, 20), axis(0, 1, 37)];
            assert!(slice(&x, &backwards, None, &parallel).is_none());
            assert!(slice(&x, &outside, None, &parallel).is_none());
            assert!(slice(&x, &outside[..3], None, &parallel).is_none());
        }
    }
}
