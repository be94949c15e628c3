//! The folds of the native `MaxPool`: one output row's maxima along the width of one input
//! row ([`RowPool`]), and the element-wise fold of such rows down the height
//! ([`fold_rows`]). A 2-D window's maximum is the maximum of its rows' maxima, so a pool is
//! separable: each input row is pooled along the width once, however many output rows'
//! windows hold it. Every output still folds its taps in the reference's row-major order
//! (a row's taps left to right, rows top to bottom) with the reference's step, so the
//! results are the reference's bit for bit. Each loop runs over output columns with no
//! branch in its body, remainders in blocks of sixteen, so it vectorises however short the
//! row: contiguous
//! loads for a unit stride, whole windows as fixed-size chunks for non-overlapping windows
//! (stride = kernel, the usual 2×2/2 and 1×4/4 pools), and for strides 2 to 4 the row split
//! into its phases first, so that every tap reads one phase contiguously.

use graphlift_ir::Window;
use multiversion::multiversion;
use num_traits::Float;

use crate::native::phases::deinterleave;

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
    /// window wholly in the padding). `row` is one input row and `dst` one output row;
    /// `scratch` is the caller's, reused from row to row.
    pub(super) fn run<T: Float>(&self, row: &[T], dst: &mut [T], scratch: &mut Vec<T>) {
        let (s, p) = (self.stride, self.pad);
        let inner = self.interior.clone();
        self.edges(row, dst);
        if !inner.is_empty() {
            // Input column of output `o`'s tap t: o·s + t·d - p, ≥ 0 for every interior `o`.
            self.interior(&row[inner.start * s - p..], &mut dst[inner], scratch);
        }
    }

    /// [`RowPool::run`] of `rows` rows of `width` one after another in `src` into as many
    /// output rows one after another in `dst`. When the row's width is a whole number of
    /// strides, the rows' interior columns pool as one long row (`long`: each row's
    /// interior outputs, then the few positions whose windows straddle two rows, computed
    /// and dropped), so the vector loops run once for all rows.
    pub(super) fn run_rows<T: Float>(
        &self,
        src: &[T],
        (rows, width): (usize, usize),
        dst: &mut [T],
        (scratch, long): (&mut Vec<T>, &mut Vec<T>),
    ) {
        let (s, p, ow) = (self.stride, self.pad, self.cols.len());
        let inner = self.interior.clone();
        if rows < 2 || inner.is_empty() || !width.is_multiple_of(s) {
            for r in 0..rows {
                let row = &src[r * width..(r + 1) * width];
                self.run(row, &mut dst[r * ow..(r + 1) * ow], scratch);
            }
            return;
        }
        // Long output j = r·per + (o - inner.start) reads src[r·width + o·s - p + t·d]:
        // row r's output o.
        let per = width / s;
        let total = (rows - 1) * per + inner.len();
        // `interior` writes every element: the buffer is only resized, not filled again.
        long.resize(total, T::neg_infinity());
        self.interior(&src[inner.start * s - p..], long, scratch);
        for r in 0..rows {
            let out = &mut dst[r * ow..(r + 1) * ow];
            out[inner.clone()].copy_from_slice(&long[r * per..r * per + inner.len()]);
            self.edges(&src[r * width..(r + 1) * width], out);
        }
    }

    /// The output columns outside the interior, one by one (their windows cut by padding).
    fn edges<T: Float>(&self, row: &[T], dst: &mut [T]) {
        let (d, p) = (self.dilation, self.pad);
        let inner = self.interior.clone();
        for o in (0..inner.start).chain(inner.end..self.cols.len()) {
            let (lo, hi, start) = self.cols[o];
            let mut m = T::neg_infinity();
            for t in lo..hi {
                fold_step(&mut m, row[start + t * d - p]);
            }
            dst[o] = m;
        }
    }

    /// Whether every output column's window lies wholly inside the row and the row holds
    /// nothing past the last window's stride: then consecutive rows pool as one long row
    /// ([`RowPool::interior`] over all of them at once).
    pub(super) fn tiles_rows(&self, width: usize) -> bool {
        self.interior == (0..self.cols.len()) && width == self.cols.len() * self.stride
    }

    /// `dst[o]` = the fold over the taps of a window that starts at `src[o · stride]` and
    /// lies wholly inside `src`, for every `o` of `dst`: non-overlapping windows of 2 to 4
    /// adjacent taps as chunks, strides 2 to 4 by tap over the row split into its `stride`
    /// phases (`scratch`: every tap then reads one phase contiguously), others by tap.
    pub(super) fn interior<T: Float>(&self, src: &[T], dst: &mut [T], scratch: &mut Vec<T>) {
        let (k, s, d) = (self.kernel, self.stride, self.dilation);
        match (s, k, d) {
            (2, 2, 1) => fold_windows::<T, 2, false>(dst, src),
            (3, 3, 1) => fold_windows::<T, 3, false>(dst, src),
            (4, 4, 1) => fold_windows::<T, 4, false>(dst, src),
            (2, 3, 1) => fold_overlapping::<T, 2, 3>(dst, src),
            (2..=4, _, _) => {
                // Tap t of output o reads src[o·s + t·d]: phase (t·d) mod s, element
                // o + (t·d) / s of it.
                let n = dst.len() + (k - 1) * d / s;
                let phases = split_phases(src, s, n, scratch);
                for t in 0..k {
                    let phase = &phases[(t * d % s) * n + t * d / s..];
                    fold_tap(dst, phase, 1, t == 0);
                }
            }
            _ => {
                for t in 0..k {
                    fold_tap(dst, &src[t * d..], s, t == 0);
                }
            }
        }
    }
}

/// `src` split into its `stride` phases of `n` elements each, in `scratch`: phase `p`'s
/// element `i` is `src[i · stride + p]` (elements past `src`'s end are left as they were).
/// `stride` is 2 to 4.
fn split_phases<'s, T: Float>(
    src: &[T],
    stride: usize,
    n: usize,
    scratch: &'s mut Vec<T>,
) -> &'s [T] {
    scratch.clear();
    scratch.resize(stride * n, T::neg_infinity());
    let whole = n.min(src.len() / stride);
    match stride {
        2 => deinterleave::<T, 2>(&src[..whole * 2], scratch, n),
        3 => deinterleave::<T, 3>(&src[..whole * 3], scratch, n),
        _ => deinterleave::<T, 4>(&src[..whole * 4], scratch, n),
    }
    if whole < n {
        for (p, &v) in src[whole * stride..].iter().enumerate().take(stride) {
            scratch[p * n + whole] = v;
        }
    }
    scratch
}

/// `m[i] = fold(m[i], src[i])`: one more of a window's rows (its row maxima) folded into
/// an output row; with `first`, the fold starts here (`m[i] = fold(-inf, src[i])`).
pub(super) fn fold_rows<T: Float>(m: &mut [T], src: &[T], first: bool) {
    fold_tap(m, src, 1, first);
}

/// [`fold_rows`] for each output row `r` of `m` (rows of `width`) from `src[r · stride..]`:
/// the same pooled row of every window of a block of output rows whose windows step
/// `stride / width` pooled rows apart, in one call rather than one per row (at unit stride,
/// `stride == width`, as one long row).
pub(super) fn fold_rows_strided<T: Float>(
    m: &mut [T],
    src: &[T],
    (width, stride): (usize, usize),
    first: bool,
) {
    if stride == width {
        fold_rows(m, src, first);
    } else if first {
        fold_strided::<T, true>(m, src, (width, stride));
    } else {
        fold_strided::<T, false>(m, src, (width, stride));
    }
}

/// [`fold_rows_strided`], `FIRST` its `first`.
#[multiversion(targets = "simd")]
fn fold_strided<T: Float, const FIRST: bool>(
    m: &mut [T],
    src: &[T],
    (width, stride): (usize, usize),
) {
    for (r, m) in m.chunks_exact_mut(width.max(1)).enumerate() {
        let Some(row) = src.get(r * stride..) else {
            break;
        };
        let n = width.min(row.len());
        pieces(n, |i, len| {
            for (m, &v) in m[i..i + len].iter_mut().zip(&row[i..i + len]) {
                let mut a = if FIRST { T::neg_infinity() } else { *m };
                fold_step(&mut a, v);
                *m = a;
            }
        });
    }
}

/// One step of the reference's fold: `m.max(v)`, NaN when either is NaN, with no branch.
/// Past NaN, `m.max(v)` is the larger of two ordered values, written as a compare and a
/// select (one vector `max`; `max`'s own NaN rule, which the NaN check overrides anyway,
/// would cost a compare and a blend more).
#[inline(always)]
pub(super) fn fold_step<T: Float>(m: &mut T, v: T) {
    let nan = m.is_nan() | v.is_nan();
    let r = if v > *m { v } else { *m };
    *m = if nan { T::nan() } else { r };
}

/// Output columns per vector block: sixteen `f32` lanes of a zmm register.
const BLOCK: usize = 16;
/// Outputs of the vectoriser's main loop per trip (four blocks, unrolled); a multiple of
/// it runs wholly in that loop.
const TRIP: usize = 4 * BLOCK;

/// Runs `f(i, len)` over `0..n` in pieces the vectoriser handles whole: `0..n − n mod
/// TRIP` in one piece (its unrolled vector loop, no scalar remainder), then the rest (under
/// [`TRIP`]) in blocks of [`BLOCK`], the last one ending at `n` and overlapping the one
/// before (half blocks for rows under a block; one by one under half a block). Every fold
/// here computes an output from its own taps, and folding a tap twice leaves the same
/// result, so the overlap is harmless. The remainder's blocks are written out rather than
/// looped over, so the vectoriser makes each one block of vector operations and does not
/// vectorise across blocks (with gathers).
#[inline(always)]
fn pieces(n: usize, mut f: impl FnMut(usize, usize)) {
    const HALF: usize = BLOCK / 2;
    let main = n - n % TRIP;
    if main > 0 {
        f(0, main);
    }
    let mut i = main;
    if n >= BLOCK {
        if i + BLOCK <= n {
            f(i, BLOCK);
            i += BLOCK;
        }
        if i + BLOCK <= n {
            f(i, BLOCK);
            i += BLOCK;
        }
        if i + BLOCK <= n {
            f(i, BLOCK);
            i += BLOCK;
        }
        if i < n {
            f(n - BLOCK, BLOCK);
        }
    } else if n >= HALF {
        f(0, HALF);
        f(n - HALF, HALF);
    } else if n > 0 {
        f(0, n);
    }
}

/// `dst[i]` = the fold of `src[i·K..(i+1)·K]` from `-inf`: non-overlapping windows of `K`
/// adjacent taps, each read as one fixed-size chunk; with `ONTO`, that fold folded onto
/// `dst[i]` (the window's next row: the first maximum in row-major order still wins).
#[multiversion(targets = "simd")]
fn fold_windows<T: Float, const K: usize, const ONTO: bool>(dst: &mut [T], src: &[T]) {
    let (windows, _) = src.as_chunks::<K>();
    let n = dst.len().min(windows.len());
    pieces(n, |i, len| {
        for (m, w) in dst[i..i + len].iter_mut().zip(&windows[i..i + len]) {
            let mut a = T::neg_infinity();
            for &v in w {
                fold_step(&mut a, v);
            }
            if ONTO {
                fold_step(m, a);
            } else {
                *m = a;
            }
        }
    });
}

/// `dst[i]` = the fold of `src[i·S..i·S + K]` from `-inf`: windows of `K` adjacent taps at
/// stride `S < K` (overlapping: ResNet's 3x3 stride-2 pool), each tap read straight from
/// the row (the vectoriser deinterleaves the stride), with no phases written out.
#[multiversion(targets = "simd")]
fn fold_overlapping<T: Float, const S: usize, const K: usize>(dst: &mut [T], src: &[T]) {
    let n = dst.len().min((src.len() + S).saturating_sub(K) / S);
    pieces(n, |i, len| {
        for (o, m) in dst[i..i + len].iter_mut().enumerate() {
            let w = &src[(i + o) * S..(i + o) * S + K];
            let mut a = T::neg_infinity();
            for &v in w {
                fold_step(&mut a, v);
            }
            *m = a;
        }
    });
}

/// One input row of `k x k` windows at stride `k` (`k` from 2 to 4; `src` holds the row's
/// `dst.len() · k` columns they read) folded into an output row `dst`: its first row
/// (`first`: from `-inf`), or onto the rows before.
pub(super) fn fold_row_windows<T: Float>(dst: &mut [T], src: &[T], k: usize, first: bool) {
    match (k, first) {
        (2, true) => fold_windows::<T, 2, false>(dst, src),
        (2, false) => fold_windows::<T, 2, true>(dst, src),
        (3, true) => fold_windows::<T, 3, false>(dst, src),
        (3, false) => fold_windows::<T, 3, true>(dst, src),
        (4, true) => fold_windows::<T, 4, false>(dst, src),
        _ => fold_windows::<T, 4, true>(dst, src),
    }
}

/// `m[i] = fold(m[i], row[i · stride])` over the outputs `row` reaches (with `first`,
/// `fold(-inf, ·)`, and `-inf` for the outputs it does not reach): contiguous taps in
/// vector pieces, other strides one by one.
fn fold_tap<T: Float>(m: &mut [T], row: &[T], stride: usize, first: bool) {
    match (stride, first) {
        (1, false) => fold_contiguous::<T, false>(m, row),
        (1, true) => fold_contiguous::<T, true>(m, row),
        _ => fold_tap_strided(m, row, stride, first),
    }
}

/// [`fold_tap`] for stride 1.
#[multiversion(targets = "simd")]
fn fold_contiguous<T: Float, const FIRST: bool>(m: &mut [T], row: &[T]) {
    let n = m.len().min(row.len());
    let (m, rest) = m.split_at_mut(n);
    pieces(n, |i, len| {
        for (m, &v) in m[i..i + len].iter_mut().zip(&row[i..i + len]) {
            let mut a = if FIRST { T::neg_infinity() } else { *m };
            fold_step(&mut a, v);
            *m = a;
        }
    });
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
