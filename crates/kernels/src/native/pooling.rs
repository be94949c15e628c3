//! `MaxPool` and `MaxPoolBackprop` over 2-D windows on `f32`/`f64`, split over the
//! backend's threads. The forward pool is separable ([`fold`]): each input row is pooled
//! along the width once, by branch-free loops over output columns that vectorise, and each
//! output row folds its window's pooled rows, every output's taps in the reference's order
//! with its `max`, so the results are the reference's bit for bit. The backprop walks each
//! window in place from per-axis tap ranges; its rule: the first maximum in row-major
//! window order takes the window's adjoint, a NaN is a maximum, padding never is.

mod fold;

use graphlift_ir::{Shape, TensorData, Window};
use graphlift_runtime::Tensor;
use num_traits::Float;

use super::result_buffer;
use crate::parallel::{for_each, Parallel};
use fold::{fold_row_windows, fold_rows, fold_rows_strided, fold_step, taps_per_output, RowPool};

/// Window taps each thread of a split pooling must get, so one of under twice this runs on
/// the calling thread (on two threads, the split point it had before threads were chosen
/// by work: 2^16 taps).
const MIN_TAPS_PER_THREAD: usize = 1 << 15;

/// Output rows narrower than this pool each output directly from its taps: the separable
/// loops' vector blocks are half this wide, so a narrower row runs them one output at a time
/// and pays their setup per plane (a batch of small planes, `[6, 200, 3, 12]`, spent 90 %
/// of its time there). Rows whose windows tile them (`1 x k` at stride `k`) are exempt: a
/// plane of them pools as one long row.
const DIRECT_WIDTH: usize = 8;

/// Work units per thread of a split forward pool: a few, so a thread whose core is taken
/// leaves units to the others.
const UNITS_PER_THREAD: usize = 4;

/// The window size `k` of a pool of `k x k` windows at stride `k` (2 to 4) that lie wholly
/// inside the input (no padding, dilation or `ceil_mode` cut): then every output row folds
/// `k` input rows' windows ([`fold_row_windows`]), with none of the separable loops'
/// bookkeeping, which a batch of small planes (`[6, 200, 2, 96]`) paid per plane.
fn tiled(win: &Window, (h, w): (usize, usize), (oh, ow): (usize, usize)) -> Option<usize> {
    let k = win.shape[0];
    let square = win.shape[1] == k && win.strides.iter().all(|&s| s == k);
    let plain = win.dilations.iter().all(|&d| d == 1) && win.pads_begin.iter().all(|&p| p == 0);
    (square && plain && (2..=4).contains(&k) && oh * k <= h && ow * k <= w).then_some(k)
}

/// Per output position along one axis, its taps inside the input and where tap 0 reads
/// ([`taps_per_output`]).
type AxisTaps = [(usize, usize, usize)];

/// The pool of one plane (`[H, W]`, rows `w` long) into `y`, each output folded from its
/// own taps in row-major window order ([`fold_step`], from `-inf`): the reference's fold,
/// for rows too narrow for the separable loops' vector blocks ([`DIRECT_WIDTH`]). `taps`
/// are the rows' and the columns' [`taps_per_output`].
fn direct<T: Float>(
    plane: &[T],
    y: &mut [T],
    w: usize,
    (rows, cols): (&AxisTaps, &AxisTaps),
    win: &Window,
) {
    let (dh, dw) = (win.dilations[0], win.dilations[1]);
    let (ph, pw) = (win.pads_begin[0], win.pads_begin[1]);
    for (out_row, &(ky0, ky1, y0)) in y.chunks_mut(cols.len()).zip(rows) {
        for (m, &(kx0, kx1, x0)) in out_row.iter_mut().zip(cols) {
            let mut acc = T::neg_infinity();
            for ky in ky0..ky1 {
                let row = &plane[(y0 + ky * dh - ph) * w..];
                for kx in kx0..kx1 {
                    fold_step(&mut acc, row[x0 + kx * dw - pw]);
                }
            }
            *m = acc;
        }
    }
}

/// The pool of plane `p` of the input into its plane of the output, with a unit's work
/// buffers.
type PlaneFn<'a, T> = dyn Fn(usize, &mut [T], &mut Buffers<T>) + Sync + 'a;

/// A pooling unit's work buffers: the phases of a strided row, the long row of a block's
/// rows, the block's rows pooled along the width.
struct Buffers<T> {
    phases: Vec<T>,
    long: Vec<T>,
    pooled: Vec<T>,
}

impl<T> Default for Buffers<T> {
    fn default() -> Self {
        Buffers {
            phases: Vec::new(),
            long: Vec::new(),
            pooled: Vec::new(),
        }
    }
}

/// The forward pool of every plane of `x` (`[N·C, H, W]` row-major) into `y`: the
/// reference's fold (`-inf`, then `max` over the taps in row-major window order, a NaN
/// anywhere making the result NaN), separably: each input row a window reads is pooled
/// along the width once ([`RowPool`]), and each output row folds its window's pooled rows
/// ([`fold_rows`]). Work is split over threads by planes and, when there are fewer planes
/// than units to fill the threads, by blocks of output rows.
fn pool<T: Float + Send + Sync>(
    x: &[T],
    y: &mut [T],
    (h, w): (usize, usize),
    out: &[usize],
    win: &Window,
    parallel: &Parallel,
) {
    let (oh, ow) = (out[0], out[1]);
    let plane_out = oh * ow;
    if plane_out == 0 {
        return;
    }
    let planes = y.len() / plane_out;
    let rows = taps_per_output(h, oh, win, 0);
    let taps = y.len() * win.shape.iter().product::<usize>();
    let team = parallel.team_of(taps, MIN_TAPS_PER_THREAD);
    // Units wanted over the threads.
    let wanted = UNITS_PER_THREAD * team.map_or(1, |t| t.threads());
    // Each plane on its own (`one(p, plane p of y, work buffers)`): units of whole planes,
    // a few per thread, not one per plane (each unit is handed out under a lock); each unit
    // keeps its work buffers from one plane to the next.
    let each_plane = |y: &mut [T], one: &PlaneFn<'_, T>| {
        let planes_of = |(u, yu): (usize, &mut [T]), per_unit: usize| {
            let mut buffers = Buffers::default();
            for (i, yp) in yu.chunks_mut(plane_out).enumerate() {
                one(u * per_unit + i, yp, &mut buffers);
            }
        };
        match team {
            Some(team) => {
                let per_unit = planes.div_ceil(wanted);
                let groups = y.chunks_mut(per_unit * plane_out).enumerate();
                for_each(team, groups, |g| planes_of(g, per_unit));
            }
            None => planes_of((0, y), planes),
        }
    };
    if let Some(k) = tiled(win, (h, w), (oh, ow)) {
        // Each output row folds its `k` input rows' windows in turn, from the top.
        each_plane(y, &|p, yp, _| {
            let plane = &x[p * h * w..(p + 1) * h * w];
            for (oy, m) in yp.chunks_mut(ow).enumerate() {
                for ky in 0..k {
                    let at = (oy * k + ky) * w;
                    fold_row_windows(m, &plane[at..at + ow * k], k, ky == 0);
                }
            }
        });
        return;
    }
    let cols = RowPool::new(w, ow, win, 1);
    let (dh, ph) = (win.dilations[0], win.pads_begin[0]);
    // One input row per window, output row `oy` reading input row `oy`, whose windows tile
    // it: the block's rows pool as one long row, however narrow each output row is.
    let flat = win.shape[0] == 1 && win.strides[0] == 1 && ph == 0 && oh == h && cols.tiles_rows(w);
    if ow < DIRECT_WIDTH && !flat {
        let cols = taps_per_output(w, ow, win, 1);
        each_plane(y, &|p, yp, _| {
            direct(&x[p * h * w..(p + 1) * h * w], yp, w, (&rows, &cols), win)
        });
        return;
    }
    // A unit's work buffers, kept from one unit to the next by each caller: a batch of small
    // planes (`[6, 200, 3, 12]`) otherwise allocates three times per plane.
    let one_unit = |(p, oy0, ys): (usize, usize, &mut [T]), buffers: &mut Buffers<T>| {
        let plane = &x[p * h * w..(p + 1) * h * w];
        let input_row = |r: usize| &plane[r * w..(r + 1) * w];
        let windows = &rows[oy0..oy0 + ys.len() / ow];
        let Buffers {
            phases,
            long,
            pooled,
        } = buffers;
        if flat {
            // Output row `oy` is input row `oy` pooled, and the rows tile: one long row.
            cols.interior(&plane[oy0 * w..], ys, phases);
            return;
        }
        let scratch = (phases, long);
        // The output rows whose windows read no input row: all padding.
        for (m, _) in ys
            .chunks_mut(ow)
            .zip(windows)
            .filter(|(_, &(lo, hi, _))| lo == hi)
        {
            m.fill(T::neg_infinity());
        }
        let Some(a) = windows.iter().position(|&(lo, hi, _)| lo < hi) else {
            return;
        };
        if win.shape[0] == 1 {
            // One input row per window: an output row is that row pooled (the rows that read
            // one, `a..b`, are consecutive), consecutive output rows consecutive input rows
            // at unit stride.
            let b = a + windows[a..]
                .iter()
                .take_while(|&&(lo, hi, _)| lo < hi)
                .count();
            let y0 = windows[a].2 - ph;
            if win.strides[0] == 1 {
                let src = &plane[y0 * w..(y0 + b - a) * w];
                cols.run_rows(src, (b - a, w), &mut ys[a * ow..b * ow], scratch);
            } else {
                for (m, &(_, _, y0)) in ys.chunks_mut(ow).zip(windows).take(b).skip(a) {
                    cols.run(input_row(y0 - ph), m, scratch.0);
                }
            }
            return;
        }
        // The input rows the block's windows read, `first..end`, each pooled along the
        // width once. (With dilation, a window may read no row between two that do.)
        let inside = windows.iter().filter(|&&(lo, hi, _)| lo < hi);
        let first = inside.clone().map(|&(lo, _, y0)| y0 + lo * dh - ph).min();
        let end = inside.map(|&(_, hi, y0)| y0 + (hi - 1) * dh - ph + 1).max();
        let (first, end) = (first.unwrap_or(0), end.unwrap_or(0));
        // Every element is written below (each pooled row whole: interior and edges), so
        // the buffer kept from the unit before is only resized, not filled again.
        pooled.resize((end - first) * ow, T::neg_infinity());
        let src = &plane[first * w..end * w];
        cols.run_rows(src, (end - first, w), pooled, scratch);
        let pooled_row = |r: usize| &pooled[(r - first) * ow..];
        // The output rows whose windows are whole (every tap inside) read pooled rows
        // `stride` apart: they fold as a block of rows in one call.
        let (kh, sh) = (win.shape[0], win.strides[0]);
        let whole = |&(lo, hi, _): &(usize, usize, usize)| lo == 0 && hi == kh;
        let (wa, wb) = match windows.iter().position(whole) {
            Some(i) => (i, i + windows[i..].iter().take_while(|w| whole(w)).count()),
            None => (0, 0),
        };
        if wa < wb {
            let (m, y0) = (&mut ys[wa * ow..wb * ow], windows[wa].2);
            for ky in 0..kh {
                fold_rows_strided(m, pooled_row(y0 + ky * dh - ph), (ow, sh * ow), ky == 0);
            }
        }
        for (oy, m) in ys.chunks_mut(ow).enumerate() {
            if (wa..wb).contains(&oy) {
                continue;
            }
            let (lo, hi, y0) = windows[oy];
            for ky in lo..hi {
                fold_rows(m, &pooled_row(y0 + ky * dh - ph)[..ow], ky == lo);
            }
        }
    };
    match team {
        // Few planes over several threads: blocks of output rows.
        Some(team) if planes < wanted => {
            let block = oh.div_ceil(wanted.div_ceil(planes.max(1)).clamp(1, oh));
            // (plane, first output row, those rows of `y`).
            let units = y.chunks_mut(plane_out).enumerate().flat_map(|(p, yp)| {
                yp.chunks_mut(block * ow)
                    .enumerate()
                    .map(move |(b, ys)| (p, b * block, ys))
            });
            for_each(team, units, |u| one_unit(u, &mut Buffers::default()));
        }
        // Many planes (a batch of feature maps), or one thread: whole planes.
        _ => each_plane(y, &|p, yp, b| one_unit((p, 0, yp), b)),
    }
}

/// A 1-D or 2-D `MaxPool(window)` of `x` `[N, C, W]` or `[N, C, H, W]` on `f32`/`f64`
/// (a 1-D pool runs as a 2-D one of unit height), written into `out` when it is given with
/// the result's type and size; `None` when this kernel does not apply (other ranks or
/// element types, a window that does not fit); the caller then runs the reference, which
/// this equals bit for bit.
pub fn max_pool(
    x: &Tensor,
    window: &Window,
    out: Option<TensorData>,
    parallel: &Parallel,
) -> Option<TensorData> {
    let sx = x.shape().dims();
    if x.data().len() != x.shape().element_count().ok()? {
        return None;
    }
    let (hw, window) = match sx.len() {
        4 => ((sx[2], sx[3]), window.clone()),
        3 => ((1, sx[2]), unit_height(window)?),
        _ => return None,
    };
    let extents = window.output_extents(&[hw.0, hw.1]).ok()?;
    let len = sx[0]
        .checked_mul(sx[1])?
        .checked_mul(extents[0])?
        .checked_mul(extents[1])?;
    let mut y = result_buffer(out, x.data().element_type(), len);
    match (x.data(), &mut y) {
        (TensorData::F32(a), TensorData::F32(b)) => pool(a, b, hw, &extents, &window, parallel),
        (TensorData::F64(a), TensorData::F64(b)) => pool(a, b, hw, &extents, &window, parallel),
        _ => return None,
    }
    Some(y)
}

/// The 2-D window of a 1-D `window` over a unit height; `None` unless `window` is 1-D.
fn unit_height(window: &Window) -> Option<Window> {
    let axis = |v: &[usize], unit: usize| -> Option<Vec<usize>> {
        let [v] = v else { return None };
        Some(vec![unit, *v])
    };
    Some(Window {
        shape: axis(&window.shape, 1)?,
        strides: axis(&window.strides, 1)?,
        dilations: axis(&window.dilations, 1)?,
        pads_begin: axis(&window.pads_begin, 0)?,
        pads_end: axis(&window.pads_end, 0)?,
    })
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
    match parallel.team_of(taps, MIN_TAPS_PER_THREAD) {
        Some(team) => for_each(team, planes, one_plane),
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
mod tests;
