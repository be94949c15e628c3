//! `MaxPool` and `MaxPoolBackprop` over 2-D windows on `f32`/`f64`, planes split over the
//! backend's threads: windows walked in place from per-axis tap ranges (the reference
//! tabulates every window's taps first), each output's taps in the reference's order with
//! its `max`, so the results are the reference's bit for bit (the forward pool folds a tap
//! over a whole output row at once, branch-free, so it vectorises). The backprop's rule: the first maximum in
//! row-major window order takes the window's adjoint, a NaN is a maximum, padding never is.

use graphlift_ir::{Shape, TensorData, Window};
use graphlift_runtime::Tensor;
use multiversion::multiversion;
use num_traits::Float;

use crate::parallel::{for_each, Parallel};

/// Below this many window taps a pooling runs on the calling thread.
const MIN_PARALLEL_TAPS: usize = 1 << 16;

/// Per output position along one axis of extent `input`: the window taps `lo..hi` that read
/// inside the input, and the input index of tap 0 (before the padding is taken off).
fn taps_per_output(input: usize, out: usize, win: &Window, a: usize) -> Vec<(usize, usize, usize)> {
    let (k, s, d, p) = (
        win.shape[a],
        win.strides[a],
        win.dilations[a],
        win.pads_begin[a],
    );
    (0..out)
        .map(|o| {
            let start = o * s;
            // Tap t reads start + t·d - p, inside when p <= start + t·d < p + input.
            let lo = p.saturating_sub(start).div_ceil(d).min(k);
            let hi = (p + input).saturating_sub(start).div_ceil(d).min(k);
            (lo, hi.max(lo), start)
        })
        .collect()
}

/// The forward pool of every plane of `x` (`[N·C, H, W]` row-major) into `y`: the
/// reference's fold (`-inf`, then `max` over the taps in row-major window order, a NaN
/// anywhere making the result NaN). Each output row is folded tap by tap over all its
/// columns at once ([`fold_tap`]): every output still sees its taps in the reference's
/// order, and the loop over columns has no branch, so it vectorises.
fn pool<T: Float + Send + Sync>(
    x: &[T],
    y: &mut [T],
    (h, w): (usize, usize),
    out: &[usize],
    win: &Window,
    parallel: &Parallel,
) {
    let rows = taps_per_output(h, out[0], win, 0);
    let cols = taps_per_output(w, out[1], win, 1);
    let (dh, dw, ph, pw, sw) = (
        win.dilations[0],
        win.dilations[1],
        win.pads_begin[0],
        win.pads_begin[1],
        win.strides[1],
    );
    // Per horizontal tap: the output columns whose window holds it inside the input (a
    // contiguous range: the left padding cuts the first columns, the right the last).
    let spans: Vec<(usize, usize)> = (0..win.shape[1])
        .map(|kx| {
            let inside = |&(lo, hi, _): &(usize, usize, usize)| lo <= kx && kx < hi;
            let first = cols.iter().position(inside).unwrap_or(cols.len());
            let len = cols[first..].iter().take_while(|c| inside(c)).count();
            (first, first + len)
        })
        .collect();
    let plane_out = out[0] * out[1];
    let one_plane = |(plane, y): (&[T], &mut [T])| {
        for (oy, &(ky0, ky1, y0)) in rows.iter().enumerate() {
            let m = &mut y[oy * out[1]..(oy + 1) * out[1]];
            m.fill(T::neg_infinity());
            for ky in ky0..ky1 {
                let row = &plane[(y0 + ky * dh - ph) * w..][..w];
                for (kx, &(lo, hi)) in spans.iter().enumerate() {
                    if lo < hi {
                        // Input column of output `ox` at tap kx: ox·sw + kx·dw - pw (≥ 0 for
                        // every ox in the span).
                        let first = lo * sw + kx * dw - pw;
                        fold_tap(&mut m[lo..hi], &row[first..], sw);
                    }
                }
            }
        }
    };
    let planes = x.chunks(h * w).zip(y.chunks_mut(plane_out));
    let taps = x.len() / (h * w).max(1) * plane_out * win.shape.iter().product::<usize>();
    match parallel.pool().filter(|_| taps >= MIN_PARALLEL_TAPS) {
        Some(pool) => for_each(pool, planes, one_plane),
        None => planes.for_each(one_plane),
    }
}

/// `m[i] = max(m[i], row[i · stride])` with NaN sticky, as the reference's fold does
/// (`m.max(v)` unless either is NaN, then NaN), without a branch; strides 2 to 4 (the usual
/// pools) with the stride a constant, so the strided loads vectorise too.
fn fold_tap<T: Float>(m: &mut [T], row: &[T], stride: usize) {
    match stride {
        1 => fold_tap_by::<T, 1>(m, row),
        2 => fold_tap_by::<T, 2>(m, row),
        3 => fold_tap_by::<T, 3>(m, row),
        4 => fold_tap_by::<T, 4>(m, row),
        _ => fold_tap_strided(m, row, stride),
    }
}

/// One step of the reference's fold.
#[inline(always)]
fn fold_step<T: Float>(m: &mut T, v: T) {
    let nan = m.is_nan() | v.is_nan();
    let r = m.max(v);
    *m = if nan { T::nan() } else { r };
}

/// [`fold_tap`] for the constant stride `S`.
#[multiversion(targets = "simd")]
fn fold_tap_by<T: Float, const S: usize>(m: &mut [T], row: &[T]) {
    let n = m.len().min(row.len().div_ceil(S));
    let (m, row) = (
        &mut m[..n],
        &row[..n.saturating_sub(1) * S + usize::from(n > 0)],
    );
    for (i, m) in m.iter_mut().enumerate() {
        fold_step(m, row[i * S]);
    }
}

/// [`fold_tap`] for any stride.
#[multiversion(targets = "simd")]
fn fold_tap_strided<T: Float>(m: &mut [T], row: &[T], stride: usize) {
    for (m, &v) in m.iter_mut().zip(row.iter().step_by(stride)) {
        fold_step(m, v);
    }
}

/// A 2-D `MaxPool(window)` of `x` `[N, C, H, W]` on `f32`/`f64`, written into `out` when it
/// is given with the result's type and size; `None` when this kernel does not apply (other
/// ranks or element types); the caller then runs the reference, which this equals bit for
/// bit.
pub fn max_pool(
    x: &Tensor,
    window: &Window,
    out: Option<TensorData>,
    parallel: &Parallel,
) -> Option<TensorData> {
    let sx = x.shape().dims();
    if sx.len() != 4 || x.data().len() != x.shape().element_count().ok()? {
        return None;
    }
    let extents = window.output_extents(&sx[2..]).ok()?;
    let len = sx[0] * sx[1] * extents[0] * extents[1];
    let mut y = match out {
        Some(d) if d.element_type() == x.data().element_type() && d.len() == len => d,
        _ => TensorData::zeros(x.data().element_type(), len),
    };
    let hw = (sx[2], sx[3]);
    match (x.data(), &mut y) {
        (TensorData::F32(a), TensorData::F32(b)) => pool(a, b, hw, &extents, window, parallel),
        (TensorData::F64(a), TensorData::F64(b)) => pool(a, b, hw, &extents, window, parallel),
        _ => return None,
    }
    Some(y)
}

fn backprop<T: Float + Send + Sync>(
    x: &[T],
    dy: &[T],
    sx: &[usize],
    out: &[usize],
    win: &Window,
    parallel: &Parallel,
) -> Vec<T> {
    let (h, w) = (sx[2], sx[3]);
    let (dh, dw, ph, pw) = (
        win.dilations[0],
        win.dilations[1],
        win.pads_begin[0],
        win.pads_begin[1],
    );
    let rows = taps_per_output(h, out[0], win, 0);
    let cols = taps_per_output(w, out[1], win, 1);
    let mut dx = vec![T::zero(); x.len()];
    let plane_out = out[0] * out[1];
    let taps = x.len() / (h * w).max(1) * plane_out * win.shape.iter().product::<usize>();
    // Each plane's adjoint is its own: planes split over threads add nothing twice.
    let one_plane = |(p, (plane, dx)): (usize, (&[T], &mut [T]))| {
        let g = &dy[p * plane_out..(p + 1) * plane_out];
        for (oy, &(ky0, ky1, y0)) in rows.iter().enumerate() {
            for (ox, &(kx0, kx1, x0)) in cols.iter().enumerate() {
                // The first maximum in row-major window order; a NaN is one and ends the
                // search; padding is never read.
                let mut best: Option<(usize, T)> = None;
                'window: for ky in ky0..ky1 {
                    let row = (y0 + ky * dh - ph) * w;
                    for kx in kx0..kx1 {
                        let at = row + x0 + kx * dw - pw;
                        let v = plane[at];
                        if best.is_none_or(|(_, b)| v > b || v.is_nan()) {
                            best = Some((at, v));
                            if v.is_nan() {
                                break 'window;
                            }
                        }
                    }
                }
                if let Some((at, _)) = best {
                    dx[at] = dx[at] + g[oy * out[1] + ox];
                }
            }
        }
    };
    let planes = x.chunks(h * w).zip(dx.chunks_mut(h * w)).enumerate();
    match parallel.pool().filter(|_| taps >= MIN_PARALLEL_TAPS) {
        Some(pool) => for_each(pool, planes, one_plane),
        None => planes.for_each(one_plane),
    }
    dx
}

/// The adjoint of a 2-D `MaxPool(window)`: `x` `[N, C, H, W]` and `dy` of the pooled shape
/// give `dx` of `x`'s shape, each `dy` element added at its window's first maximum (see
/// `graphlift_runtime::reference::max_pool_backprop`, which this follows, summing in the
/// element type). `None` when this kernel does not apply (other ranks or element types,
/// operands that do not fit); the caller then runs the reference.
pub fn max_pool_backprop(
    x: &Tensor,
    dy: &Tensor,
    window: &Window,
    parallel: &Parallel,
) -> Option<TensorData> {
    let sx = x.shape().dims();
    if sx.len() != 4 {
        return None;
    }
    let out = window.output_extents(&sx[2..]).ok()?;
    let want = Shape::new([sx[0], sx[1], out[0], out[1]]);
    if dy.shape() != &want || x.data().len() != x.shape().element_count().ok()? {
        return None;
    }
    Some(match (x.data(), dy.data()) {
        (TensorData::F32(a), TensorData::F32(d)) => {
            TensorData::F32(backprop(a, d, sx, &out, window, parallel))
        }
        (TensorData::F64(a), TensorData::F64(d)) => {
            TensorData::F64(backprop(a, d, sx, &out, window, parallel))
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_testkit::uniform;

    /// The forward pool equals the reference bit for bit (ties of ±0, NaN), on one and two
    /// threads, for strided, unit-stride (the contiguous fold), dilated, padded on either
    /// side, and non-overlapping windows.
    #[test]
    fn forward_is_the_reference() {
        use crate::parallel::ThreadConfig;
        let window =
            |k: [usize; 2], s: [usize; 2], d: [usize; 2], pb: [usize; 2], pe: [usize; 2]| Window {
                shape: k.to_vec(),
                strides: s.to_vec(),
                dilations: d.to_vec(),
                pads_begin: pb.to_vec(),
                pads_end: pe.to_vec(),
            };
        let windows = [
            window([3, 3], [2, 2], [1, 1], [1, 1], [1, 1]),
            window([3, 3], [1, 1], [1, 1], [1, 1], [1, 1]),
            window([2, 3], [1, 2], [2, 1], [0, 1], [0, 0]),
            window([1, 4], [1, 4], [1, 1], [0, 0], [0, 0]),
            window([2, 5], [1, 1], [1, 2], [1, 3], [0, 4]),
        ];
        let sx = Shape::new([2, 3, 41, 37]);
        let n = sx.element_count().unwrap();
        let mut xs: Vec<f32> = uniform(n, 9).iter().map(|v| (v * 2.0).round()).collect();
        xs[7] = f32::NAN;
        xs[100] = -0.0;
        xs[2000] = f32::NAN;
        let x = Tensor::from_data(TensorData::F32(xs), sx.clone()).unwrap();
        for w in &windows {
            let want = graphlift_runtime::reference::max_pool(x.data(), &sx, w).unwrap();
            for threads in [1, 2] {
                let parallel = Parallel::new(ThreadConfig::with_threads(threads));
                let got = max_pool(&x, w, None, &parallel).unwrap();
                let (TensorData::F32(g), TensorData::F32(r)) = (&got, &want) else {
                    panic!("types")
                };
                assert_eq!(g.len(), r.len());
                assert!(
                    g.iter().zip(r).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{w:?}, {threads} threads"
                );
            }
        }
    }

    #[test]
    fn agrees_with_the_reference() {
        let window = |k: [usize; 2], s: [usize; 2], d: [usize; 2], pb: [usize; 2], pe| Window {
            shape: k.to_vec(),
            strides: s.to_vec(),
            dilations: d.to_vec(),
            pads_begin: pb.to_vec(),
            pads_end: [pe, pe].to_vec(),
        };
        let cases = [
            ([2, 3, 7, 6], window([3, 3], [2, 2], [1, 1], [1, 1], 1)),
            ([1, 2, 6, 9], window([2, 3], [1, 2], [2, 1], [0, 1], 0)),
            ([1, 1, 4, 4], window([2, 2], [2, 2], [1, 1], [0, 0], 0)),
            // Enough taps to split the planes over threads.
            ([2, 8, 48, 48], window([3, 3], [2, 2], [1, 1], [1, 1], 1)),
        ];
        for ((dims, w), threads) in cases.into_iter().flat_map(|c| [(c.clone(), 1), (c, 2)]) {
            let parallel = Parallel::new(crate::parallel::ThreadConfig::with_threads(threads));
            let sx = Shape::new(dims);
            let n = sx.element_count().unwrap();
            // Values rounded to integers: many ties.
            let mut xs: Vec<f32> = uniform(n, 5).iter().map(|v| (v * 3.0).round()).collect();
            xs[5] = f32::NAN;
            let out = w.output_extents(&dims[2..]).unwrap();
            let sy = Shape::new([dims[0], dims[1], out[0], out[1]]);
            let dy = TensorData::F32(uniform(sy.element_count().unwrap(), 6));
            let x = Tensor::from_data(TensorData::F32(xs), sx.clone()).unwrap();
            let dyt = Tensor::from_data(dy.clone(), sy.clone()).unwrap();
            let got = max_pool_backprop(&x, &dyt, &w, &parallel).unwrap();
            let want = graphlift_runtime::reference::max_pool_backprop(x.data(), &sx, &dy, &sy, &w)
                .unwrap();
            let (TensorData::F32(g), TensorData::F32(r)) = (&got, &want) else {
                panic!("types")
            };
            for (a, b) in g.iter().zip(r) {
                assert!((a - b).abs() <= 4.0 * f32::EPSILON, "{dims:?}: {a} vs {b}");
            }
        }
    }
}
