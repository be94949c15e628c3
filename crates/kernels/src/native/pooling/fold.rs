//! The folds of the native `MaxPool`: one output row's maxima along the width of one input
//! row ([`RowPool`]), and the element-wise fold of such rows down the height
//! ([`fold_rows`]). A 2-D window's maximum is the maximum of its rows' maxima, so a pool is
//! separable: each input row is pooled along the width once, however many output rows'
//! windows hold it. Every output still folds its taps in the reference's row-major order
//! (a row's taps left to right, rows top to bottom) with the reference's step, so the
//! results are the reference's bit for bit. Each loop runs over output columns with no
//! branch in its body, so it vectorises: contiguous loads for a unit stride, whole windows
//! as fixed-size chunks for non-overlapping windows (stride = kernel, the usual 2×2/2 and
//! 1×4/4 pools), strided loads otherwise.

use graphlift_ir::Window;
use multiversion::multiversion;
use num_traits::Float;

/// Per output position along one axis of extent `input`: the window taps `lo..hi` that read
/// inside the input, and the input index of tap 0 before the padding is taken off (tap `t`
/// reads `start + t · dilation − pad_begin`).
pub(super) fn taps_per_output(
    input: usize,
    out: usize,
    win: &Window,
    a: usize,
) -> Vec<(usize, usize, usize)> {
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

/// The pool of one input row along the width into one row of output columns: the window
/// geometry of the width axis, with the outputs whose window lies wholly inside the row
/// (`interior`) pooled by a vector loop and the few others (cut by padding or `ceil_mode`)
/// one by one.
pub(super) struct RowPool {
    /// Per output column: the taps inside the row and the start (see [`taps_per_output`]).
    cols: Vec<(usize, usize, usize)>,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
    /// The output columns whose every tap is inside the row: a contiguous range (padding
    /// cuts the first columns' windows, the row's end the last ones').
    interior: std::ops::Range<usize>,
}

impl RowPool {
    /// The width-axis (axis `a` of `win`) pool of rows of `width` into `out` columns.
    pub(super) fn new(width: usize, out: usize, win: &Window, a: usize) -> RowPool {
        let cols = taps_per_output(width, out, win, a);
        let kernel = win.shape[a];
        let full = |&(lo, hi, _): &(usize, usize, usize)| lo == 0 && hi == kernel && kernel > 0;
        let first = cols.iter().position(full).unwrap_or(out);
        let len = cols[first..].iter().take_while(|c| full(c)).count();
        RowPool {
            cols,
            kernel,
            stride: win.strides[a],
            dilation: win.dilations[a],
            pad: win.pads_begin[a],
            interior: first..first + len,
        }
    }

    /// `dst[o]` = the reference's fold over output column `o`'s taps in `row` (`-inf` for a
    /// window wholly in the padding). `row` is one input row and `dst` one output row.
    pub(super) fn run<T: Float>(&self, row: &[T], dst: &mut [T]) {
        let (s, d, p) = (self.stride, self.dilation, self.pad);
        let inner = self.interior.clone();
        for o in (0..inner.start).chain(inner.end..self.cols.len()) {
            let (lo, hi, start) = self.cols[o];
            let mut m = T::neg_infinity();
            for t in lo..hi {
                fold_step(&mut m, row[start + t * d - p]);
            }
            dst[o] = m;
        }
        if !inner.is_empty() {
            // Input column of output `o`'s tap t: o·s + t·d - p, ≥ 0 for every interior `o`.
            self.interior(&row[inner.start * s - p..], &mut dst[inner]);
        }
    }

    /// Whether every output column's window lies wholly inside the row and the row holds
    /// nothing past the last window's stride: then consecutive rows pool as one long row
    /// ([`RowPool::interior`] over all of them at once).
    pub(super) fn tiles_rows(&self, width: usize) -> bool {
        self.interior == (0..self.cols.len()) && width == self.cols.len() * self.stride
    }

    /// `dst[o]` = the fold over the taps of a window that starts at `src[o · stride]` and
    /// lies wholly inside `src`, for every `o` of `dst`.
    pub(super) fn interior<T: Float>(&self, src: &[T], dst: &mut [T]) {
        let (k, s, d) = (self.kernel, self.stride, self.dilation);
        match (s, k, d) {
            (2, 2, 1) => fold_windows::<T, 2>(dst, src),
            (3, 3, 1) => fold_windows::<T, 3>(dst, src),
            (4, 4, 1) => fold_windows::<T, 4>(dst, src),
            _ => {
                for t in 0..k {
                    fold_tap(dst, &src[t * d..], s, t == 0);
                }
            }
        }
    }
}

/// `m[i] = fold(m[i], src[i])`: one more of a window's rows (its row maxima) folded into
/// an output row; with `first`, the fold starts here (`m[i] = fold(-inf, src[i])`).
pub(super) fn fold_rows<T: Float>(m: &mut [T], src: &[T], first: bool) {
    fold_tap(m, src, 1, first);
}

/// One step of the reference's fold: `m.max(v)`, NaN when either is NaN, with no branch.
#[inline(always)]
pub(super) fn fold_step<T: Float>(m: &mut T, v: T) {
    let nan = m.is_nan() | v.is_nan();
    let r = m.max(v);
    *m = if nan { T::nan() } else { r };
}

/// `dst[i]` = the fold of `src[i·K..(i+1)·K]` from `-inf`: non-overlapping windows of `K`
/// adjacent taps, each read as one fixed-size chunk.
#[multiversion(targets = "simd")]
fn fold_windows<T: Float, const K: usize>(dst: &mut [T], src: &[T]) {
    let (windows, _) = src.as_chunks::<K>();
    for (m, w) in dst.iter_mut().zip(windows) {
        let mut a = T::neg_infinity();
        for &v in w {
            fold_step(&mut a, v);
        }
        *m = a;
    }
}

/// `m[i] = fold(m[i], row[i · stride])` over the outputs `row` reaches (with `first`,
/// `fold(-inf, ·)`, and `-inf` for the outputs it does not reach); strides 2 to 4 with
/// the stride a constant, so the strided loads vectorise too.
fn fold_tap<T: Float>(m: &mut [T], row: &[T], stride: usize, first: bool) {
    match (stride, first) {
        (1, false) => fold_tap_by::<T, 1, false>(m, row),
        (1, true) => fold_tap_by::<T, 1, true>(m, row),
        (2, false) => fold_tap_by::<T, 2, false>(m, row),
        (2, true) => fold_tap_by::<T, 2, true>(m, row),
        (3, false) => fold_tap_by::<T, 3, false>(m, row),
        (3, true) => fold_tap_by::<T, 3, true>(m, row),
        (4, false) => fold_tap_by::<T, 4, false>(m, row),
        (4, true) => fold_tap_by::<T, 4, true>(m, row),
        _ => fold_tap_strided(m, row, stride, first),
    }
}

/// [`fold_tap`] for the constant stride `S`.
#[multiversion(targets = "simd")]
fn fold_tap_by<T: Float, const S: usize, const FIRST: bool>(m: &mut [T], row: &[T]) {
    let n = m.len().min(row.len().div_ceil(S));
    let (m, rest) = m.split_at_mut(n);
    let row = &row[..n.saturating_sub(1) * S + usize::from(n > 0)];
    for (i, m) in m.iter_mut().enumerate() {
        let mut a = if FIRST { T::neg_infinity() } else { *m };
        fold_step(&mut a, row[i * S]);
        *m = a;
    }
    if FIRST {
        rest.fill(T::neg_infinity());
    }
}

/// [`fold_tap`] for any stride.
#[multiversion(targets = "simd")]
fn fold_tap_strided<T: Float>(m: &mut [T], row: &[T], stride: usize, first: bool) {
    if first {
        m.fill(T::neg_infinity());
    }
    for (m, &v) in m.iter_mut().zip(row.iter().step_by(stride)) {
        fold_step(m, v);
    }
}
