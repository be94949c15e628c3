//! The geometry of a 2-D window op over `[N, C, H, W]` data (convolution, its backprops,
//! the integer convolution): extents, the runs of output columns each filter column reads
//! inside the row (so kernels loop over contiguous memory instead of testing every tap for
//! padding), a row's stride phases, and the receptive fields unrolled (im2col).

use std::ops::Range;

use graphlift_ir::{Convolution, Shape, Window};
use multiversion::multiversion;

/// The geometry of one 2-D convolution: data `[n, c, h, w]`, filter `[m, c / groups, kh,
/// kw]`, output `[n, m, oh, ow]`.
pub(super) struct Geometry {
    pub n: usize,
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub m: usize,
    pub kh: usize,
    pub kw: usize,
    pub oh: usize,
    pub ow: usize,
    pub groups: usize,
}

/// The least output row, in positions, whose fields are read in place from the padded
/// image ([`Geometry::phases`]).
const IMPLICIT_MIN_ROW: usize = 16;

impl Geometry {
    /// The geometry of `conv` on data of shape `sx` and a filter of shape `sf`, or `None`
    /// when they are not 4-D or do not fit.
    pub(super) fn of(sx: &Shape, sf: &Shape, conv: &Convolution) -> Option<Geometry> {
        let (dx, df) = (sx.dims(), sf.dims());
        if dx.len() != 4 || df.len() != 4 {
            return None;
        }
        let out = conv.window.output_extents(&dx[2..]).ok()?;
        let g = conv.groups;
        if g == 0 || dx[1] % g != 0 || df[0] % g != 0 || df[1] != dx[1] / g {
            return None;
        }
        Some(Geometry {
            n: dx[0],
            c: dx[1],
            h: dx[2],
            w: dx[3],
            m: df[0],
            kh: df[2],
            kw: df[3],
            oh: out[0],
            ow: out[1],
            groups: g,
        })
    }

    /// Whether each window of `conv` covers a whole unpadded image in one group (a 1x1
    /// convolution on 1x1 planes, as a squeeze-and-excitation block applies after its
    /// global pooling, or a window the size of the image): one output position per image
    /// and filter, each the dot product of the filter with the image.
    pub(super) fn covers_images(&self, conv: &Convolution) -> bool {
        let w = &conv.window;
        self.groups == 1
            && (self.oh, self.ow) == (1, 1)
            && (self.kh, self.kw) == (self.h, self.w)
            && w.pads_begin.iter().chain(&w.pads_end).all(|&p| p == 0)
    }

    /// The shape `(hq, wq)` of the stride phases of the padded image when the receptive
    /// fields are read from them in place by the row-wise tiles (`conv_dense::Implicit`):
    /// [`Geometry::phase_extents`] for a window larger than 1x1 (or with padding or
    /// strides), output rows of at least [`IMPLICIT_MIN_ROW`] positions and at most a fifth
    /// of each phase row past the output row (computed and dropped). `None` where the
    /// fields are unrolled.
    pub(super) fn phases(&self, conv: &Convolution) -> Option<(usize, usize)> {
        if is_pointwise(self, conv) || self.ow < IMPLICIT_MIN_ROW {
            return None;
        }
        let (hq, wq) = self.phase_extents(conv)?;
        (5 * (wq - self.ow) <= wq).then_some((hq, wq))
    }

    /// The shape `(hq, wq)` of the stride phases of the padded image (phase `(py, px)`
    /// holds the padded pixels `(i · sH + py, j · sW + px)`), when every output position's
    /// window reads inside its phases: the last output row and column shifted by the
    /// window's last tap stay within the phase. `None` otherwise, or for a zero stride or
    /// an empty output.
    pub(super) fn phase_extents(&self, conv: &Convolution) -> Option<(usize, usize)> {
        let w = &conv.window;
        let (sh, sw) = (w.strides[0], w.strides[1]);
        let (dh, dw) = (w.dilations[0], w.dilations[1]);
        if sh == 0 || sw == 0 {
            return None;
        }
        let hp = self.h + w.pads_begin[0] + w.pads_end[0];
        let wp = self.w + w.pads_begin[1] + w.pads_end[1];
        let (hq, wq) = (hp.div_ceil(sh), wp.div_ceil(sw));
        let last_y = self.oh.checked_sub(1)? + self.kh.saturating_sub(1) * dh / sh;
        let last_x = self.ow.checked_sub(1)? + self.kw.saturating_sub(1) * dw / sw;
        (last_y < hq && last_x < wq).then_some((hq, wq))
    }
}

/// [`Geometry::of`] for data of shape `sx` and a filter of shape `sf`, 1-D (lifted to 2-D:
/// [`lift_1d`]) or 2-D, with the convolution it then describes; `None` for any other rank or
/// shapes that do not fit.
pub(super) fn geometry_of(
    sx: &Shape,
    sf: &Shape,
    conv: &Convolution,
) -> Option<(Geometry, Convolution)> {
    match lift_1d(sx, sf, conv) {
        Some((sx, sf, c)) => Geometry::of(&sx, &sf, &c).map(|g| (g, c)),
        None => Geometry::of(sx, sf, conv).map(|g| (g, conv.clone())),
    }
}

/// [`Geometry::covers_images`] for data of shape `sx` and a filter of shape `sf`, 1-D or
/// 2-D (`false` for any other rank or shapes that do not fit).
pub(super) fn covers_images(sx: &Shape, sf: &Shape, conv: &Convolution) -> bool {
    geometry_of(sx, sf, conv).is_some_and(|(g, c)| g.covers_images(&c))
}

/// Whether the receptive fields of data of shape `sx` under a filter of shape `sf` are
/// read in place ([`Geometry::phases`]), 1-D or 2-D.
pub(super) fn reads_fields_in_place(sx: &Shape, sf: &Shape, conv: &Convolution) -> bool {
    geometry_of(sx, sf, conv).is_some_and(|(g, c)| g.phases(&c).is_some())
}

/// A 1-D convolution (`x` `[N, C, L]`, filter `[M, C / groups, K]`) as the 2-D one over a
/// unit height: the same elements as `[N, C, 1, L]` and `[M, C / groups, 1, K]` under a
/// window of height 1 (stride and dilation 1, no padding), giving `[N, M, 1, OL]`, the
/// elements of the 1-D result. `None` for any other rank.
pub(super) fn lift_1d(
    sx: &Shape,
    sf: &Shape,
    conv: &Convolution,
) -> Option<(Shape, Shape, Convolution)> {
    let (dx, df) = (sx.dims(), sf.dims());
    if dx.len() != 3 || df.len() != 3 {
        return None;
    }
    let w = &conv.window;
    let unit = |v: &[usize], first: usize| -> Vec<usize> {
        std::iter::once(first).chain(v.iter().copied()).collect()
    };
    let window = graphlift_ir::Window {
        shape: unit(&w.shape, 1),
        strides: unit(&w.strides, 1),
        dilations: unit(&w.dilations, 1),
        pads_begin: unit(&w.pads_begin, 0),
        pads_end: unit(&w.pads_end, 0),
    };
    Some((
        Shape::new([dx[0], dx[1], 1, dx[2]]),
        Shape::new([df[0], df[1], 1, df[2]]),
        Convolution {
            window,
            groups: conv.groups,
        },
    ))
}

/// Per filter column `kx`: the output columns whose input column lies inside the row, and
/// the input column the first of them reads (the depthwise kernel's and the data
/// backprop's contiguous runs).
pub(super) fn column_runs(g: &Geometry, win: &Window) -> Vec<(std::ops::Range<usize>, usize)> {
    let (sw, dw, pw) = (win.strides[1], win.dilations[1], win.pads_begin[1]);
    (0..g.kw)
        .map(|kx| {
            let valid = valid_columns(g.ow, g.w, sw, kx * dw, pw);
            let first = (valid.start * sw + kx * dw).saturating_sub(pw);
            (valid, first)
        })
        .collect()
}

/// The output columns `ox` whose input column `ox * stride + offset - pad` lies in
/// `0..width`, as a range.
pub(super) fn valid_columns(
    out: usize,
    width: usize,
    stride: usize,
    offset: usize,
    pad: usize,
) -> std::ops::Range<usize> {
    // ox * stride + offset >= pad  and  ox * stride + offset < pad + width.
    let lo = pad.saturating_sub(offset).div_ceil(stride);
    let hi = (pad + width)
        .saturating_sub(offset)
        .div_ceil(stride)
        .min(out);
    lo.min(hi)..hi
}

/// A convolution's output `y` (tasks of `channels` planes of `plane` elements, rows of
/// `width`) cut for splitting by bands of output rows: for each task and band, the band's
/// rows of each of the task's channels, as work items `(task, band, pieces)`.
pub(super) type BandItem<'a, T> = (usize, usize, Vec<&'a mut [T]>);

/// The work items of `y` split by `bands` (see [`BandItem`]).
pub(super) fn band_items<'a, T>(
    y: &'a mut [T],
    (channels, plane, width): (usize, usize, usize),
    bands: &[std::ops::Range<usize>],
) -> Vec<BandItem<'a, T>> {
    let mut items = Vec::new();
    for (task, out) in y.chunks_mut((channels * plane).max(1)).enumerate() {
        let mut pieces: Vec<Vec<&mut [T]>> = bands.iter().map(|_| Vec::new()).collect();
        for channel in out.chunks_mut(plane.max(1)) {
            let mut rest = channel;
            for (band, to) in bands.iter().zip(&mut pieces) {
                let (piece, tail) = rest.split_at_mut(band.len() * width);
                to.push(piece);
                rest = tail;
            }
        }
        items.extend(pieces.into_iter().enumerate().map(|(b, p)| (task, b, p)));
    }
    items
}

/// Unrolls channels `c0..c0 + cg` of image `x` (`[C, H, W]`) for the output rows `rows` into
/// `cols` (`[cg · kH · kW, rows.len() · oW]`, row-major); window positions in the padding
/// read `pad` (zero for a float convolution, the zero point for an integer one).
#[multiversion(targets = "simd")]
pub(super) fn im2col<T: Copy + Default>(
    x: &[T],
    g: &Geometry,
    conv: &Convolution,
    (c0, cg): (usize, usize),
    rows: Range<usize>,
    cols: &mut [T],
    pad: T,
) {
    let win = &conv.window;
    let (sh, sw) = (win.strides[0], win.strides[1]);
    let (dh, dw) = (win.dilations[0], win.dilations[1]);
    let (ph, pw) = (win.pads_begin[0], win.pads_begin[1]);
    let plane = rows.len() * g.ow;
    for ci in 0..cg {
        let image = &x[(c0 + ci) * g.h * g.w..(c0 + ci + 1) * g.h * g.w];
        for ky in 0..g.kh {
            for kx in 0..g.kw {
                let row = (ci * g.kh + ky) * g.kw + kx;
                let out = &mut cols[row * plane..(row + 1) * plane];
                let valid = valid_columns(g.ow, g.w, sw, kx * dw, pw);
                for (r, oy) in rows.clone().enumerate() {
                    let line = &mut out[r * g.ow..(r + 1) * g.ow];
                    let Some(iy) = (oy * sh + ky * dh).checked_sub(ph).filter(|&y| y < g.h) else {
                        line.fill(pad);
                        continue;
                    };
                    line[..valid.start].fill(pad);
                    line[valid.end..].fill(pad);
                    // A tap that reads only padding for every output column (a dilated
                    // window wider than the padded row's inside) has nothing to copy.
                    if valid.is_empty() {
                        continue;
                    }
                    let src = &image[iy * g.w..(iy + 1) * g.w];
                    // First input column read (`valid.start` maps inside the row).
                    let first = valid.start * sw + kx * dw - pw;
                    let dst = &mut line[valid.clone()];
                    if sw == 1 {
                        dst.copy_from_slice(&src[first..first + dst.len()]);
                    } else {
                        for (v, &s) in dst.iter_mut().zip(src[first..].iter().step_by(sw)) {
                            *v = s;
                        }
                    }
                }
            }
        }
    }
}

/// Whether the unrolled matrix of a group is its input channels as they are: a 1x1 window
/// with unit strides and no padding.
pub(super) fn is_pointwise(g: &Geometry, conv: &Convolution) -> bool {
    pointwise_window(&[g.kh, g.kw], conv)
}

/// [`is_pointwise`] for a filter window of extents `kernel` (any rank), before the
/// geometry is known (packing at compile time).
pub(super) fn pointwise_window(kernel: &[usize], conv: &Convolution) -> bool {
    let w = &conv.window;
    kernel.iter().all(|&k| k == 1)
        && w.strides.iter().all(|&s| s == 1)
        && w.pads_begin.iter().chain(&w.pads_end).all(|&p| p == 0)
}
