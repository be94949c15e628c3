//! The geometry of a 2-D window op over `[N, C, H, W]` data (convolution, its backprops,
//! the integer convolution): extents, and the runs of output columns each filter column
//! reads inside the row, so kernels loop over contiguous memory instead of testing every
//! tap for padding.

use graphlift_ir::{Convolution, Shape, Window};

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
