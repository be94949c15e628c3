//! The operands of a dense (im2col or pointwise) `f32`/`f64` convolution and its one
//! product, `filters · fields`, on the packed AVX-512 path where the filter was packed, else
//! through the `gemm` crate: what every way of splitting a convolution over threads
//! ([`super::convolution`]) calls.

use std::ops::Range;

use graphlift_ir::Convolution;

use super::conv_geometry::{im2col, is_pointwise, Geometry};
use super::gemm_call::{gemm_into, Strided};
use super::packed::{self, Columns, Element, Lhs, Out, PackedWeights, Rhs, Side};
use super::phases::PhaseSplit;
use super::scratch::Scratch;
use crate::parallel::{for_each, Team};

/// An element type of the native convolution (`f32` or `f64`).
pub(super) trait Float:
    Element
    + Scratch
    + Default
    + From<f32>
    + Send
    + Sync
    + 'static
    + PartialEq
    + std::ops::Add<Output = Self>
    + std::ops::Mul<Output = Self>
{
}

impl<T> Float for T where
    T: Element
        + Scratch
        + Default
        + From<f32>
        + Send
        + Sync
        + 'static
        + PartialEq
        + std::ops::Add<Output = T>
        + std::ops::Mul<Output = T>
{
}

/// A convolution's data `x` `[N, C, H, W]` and filter `f` `[M, C/g, kH, kW]`, seen as
/// `N · groups` tasks (image, group), each the product of the group's filters
/// `[M/g, C/g · kH · kW]` with the image's unrolled receptive fields.
pub(super) struct Dense<'a, T> {
    pub x: &'a [T],
    pub f: &'a [T],
    pub g: &'a Geometry,
    pub conv: &'a Convolution,
    /// The filter packed for the left side, when it was and fits these extents.
    pub packed: Option<&'a PackedWeights>,
    /// Whether the fields are the image's channels as they are (a 1x1 window, unit
    /// strides, no padding): [`Dense::fields`] then reads the image instead of unrolling.
    pub pointwise: bool,
}

impl<'a, T: Float> Dense<'a, T> {
    /// The operands of `x` convolved with `f`, `packed` kept only if it holds exactly the
    /// groups' filter matrices.
    pub(super) fn new(
        (x, f): (&'a [T], &'a [T]),
        g: &'a Geometry,
        conv: &'a Convolution,
        packed: Option<&'a PackedWeights>,
    ) -> Dense<'a, T> {
        let packed = packed.filter(|w| {
            w.side() == Side::Left && w.extents() == (g.groups, g.m / g.groups, depth(g))
        });
        Dense {
            x,
            f,
            g,
            conv,
            packed,
            pointwise: is_pointwise(g, conv),
        }
    }

    /// (image, group) tasks: `N · groups`.
    pub(super) fn tasks(&self) -> usize {
        self.g.n * self.g.groups
    }

    /// Whether every group is one input and one output channel (a depthwise convolution
    /// with a multiplier of 1), which runs the direct depthwise loop.
    pub(super) fn depthwise_groups(&self) -> bool {
        self.g.c == self.g.groups && self.mg() == 1
    }

    /// Task `k`'s channels of the input, `[C/g, H, W]` (empty where `x` does not hold them).
    pub(super) fn task_image(&self, k: usize) -> &'a [T] {
        let (g, hw) = (self.g, self.g.h * self.g.w);
        let first = (k / g.groups * g.c + k % g.groups * self.cg()) * hw;
        self.x
            .get(first..first + self.cg() * hw)
            .unwrap_or_default()
    }

    /// Input channels per group.
    fn cg(&self) -> usize {
        self.g.c / self.g.groups
    }

    /// Filters (output channels) per group.
    pub(super) fn mg(&self) -> usize {
        self.g.m / self.g.groups
    }

    /// Output elements per channel.
    pub(super) fn plane(&self) -> usize {
        self.g.oh * self.g.ow
    }

    /// Elements of the buffer [`Dense::fields`] unrolls `rows` output rows into (none for a
    /// pointwise convolution).
    pub(super) fn fields_len(&self, rows: &Range<usize>) -> usize {
        if self.pointwise {
            0
        } else {
            depth(self.g) * rows.len() * self.g.ow
        }
    }

    /// The fields of task `k` (image `k / groups`, group `k % groups`) for output rows
    /// `rows`, as `(matrix, row stride)`: a `[C/g · kH · kW, rows.len() · oW]` matrix
    /// unrolled into `buffer` ([`Dense::fields_len`] elements), or for a pointwise
    /// convolution the group's channels of the image from the band's first column on (row
    /// stride `H · W`).
    pub(super) fn fields<'b>(
        &self,
        k: usize,
        rows: &Range<usize>,
        buffer: &'b mut [T],
    ) -> (&'b [T], usize)
    where
        'a: 'b,
    {
        let g = self.g;
        let (b, grp) = (k / g.groups, k % g.groups);
        if self.pointwise {
            let first = (b * g.c + grp * self.cg()) * self.plane() + rows.start * g.ow;
            return (&self.x[first..], self.plane());
        }
        let image = &self.x[b * g.c * g.h * g.w..(b + 1) * g.c * g.h * g.w];
        im2col(
            image,
            g,
            self.conv,
            (grp * self.cg(), self.cg()),
            rows.clone(),
            buffer,
            T::default(),
        );
        (buffer, rows.len() * g.ow)
    }

    /// `out = filters · fields` for filters `filters.start..filters.end` of group `grp` (a
    /// start on a multiple of [`super::matmul::ROW_BLOCK_ALIGN`]) and `n` columns of
    /// `fields` (`(matrix, row stride)` as [`Dense::fields`] gives it), `out` holding
    /// `filters.len()` rows of `n` with row stride `ldc`.
    pub(super) fn product(
        &self,
        (grp, filters): (usize, Range<usize>),
        (cols, ks): (&[T], usize),
        n: usize,
        (out, ldc): (&mut [T], usize),
    ) {
        let (r, depth) = (filters.len(), depth(self.g));
        let on_packed = self.packed.is_some_and(|w| {
            let (Some(cols), Some(out)) = (T::as_f32(cols), T::as_f32_mut(out)) else {
                return false;
            };
            packed::product(
                (out, ldc),
                Lhs::Packed {
                    w,
                    matrix: grp,
                    first_row: filters.start,
                },
                Rhs::Strided { data: cols, ks },
                (r, depth, n),
                false,
            )
        });
        if on_packed {
            return;
        }
        let Some(weights) = self.f.get((grp * self.mg() + filters.start) * depth..) else {
            return;
        };
        gemm_into(
            (
                out,
                Strided {
                    rows: r,
                    cols: n,
                    row_stride: ldc,
                    col_stride: 1,
                },
            ),
            (weights, Strided::row_major(r, depth)),
            (
                cols,
                Strided {
                    rows: depth,
                    cols: n,
                    row_stride: ks,
                    col_stride: 1,
                },
            ),
            T::from(1.0),
            None,
            gemm::Parallelism::None,
        );
    }
}

/// A band's receptive fields as [`Dense::product_into`] reads them.
pub(super) enum Fields<'f, T> {
    /// Unrolled: `(matrix, row stride)` as [`Dense::fields`] gives them.
    Unrolled(&'f [T], usize),
    /// Read in place ([`Implicit`]): the padded image from the band's first row on, the
    /// field rows' offsets, and the padded row's length.
    Implicit(&'f [T], &'f [usize], usize),
}

/// About as many multiply-adds as copying one output element out of a product's buffer
/// costs (a pointwise-sized `k` of 9 spent as long copying its output as computing it).
const COPY_MACS: usize = 12;

impl<T: Float> Dense<'_, T> {
    /// Whether a band of `imp`'s products is cheaper stored straight into the output rows
    /// ([`Dense::product_into`], each output row its own run of columns, whose last
    /// vectors are partly masked) than computed over the padded rows into a buffer and
    /// copied out (the columns that wrap past each output row computed and dropped): the
    /// masked columns per row against the wrapped ones plus the copy, in multiply-adds.
    pub(super) fn stores_in_place(&self, imp: &Implicit) -> bool {
        let (ow, k) = (self.g.ow, depth(self.g));
        let masked = ow.next_multiple_of(packed::COLUMN_GRAIN) - ow;
        masked * k <= (imp.wq - ow) * k + ow * COPY_MACS
    }

    /// `pieces[m] = filter m of group grp · fields` for every filter of the group, over a
    /// band of `rows` output rows, stored straight into each channel's rows of the band
    /// (`pieces[m]`: `rows · oW` elements, its output rows one after another; the columns
    /// of implicit fields that wrap past an output row are not computed). On the packed
    /// path only: `false`, writing nothing, where it does not run (the caller then
    /// multiplies into a buffer and copies).
    pub(super) fn product_into(
        &self,
        grp: usize,
        fields: Fields<'_, T>,
        rows: usize,
        pieces: &mut [&mut [T]],
    ) -> bool {
        let ow = self.g.ow;
        let Some(w) = self.packed else {
            return false;
        };
        let (rhs, columns) = match fields {
            Fields::Unrolled(cols, ks) => match T::as_f32(cols) {
                Some(data) => (Rhs::Strided { data, ks }, Columns::flat(rows * ow)),
                None => return false,
            },
            Fields::Implicit(data, offsets, wq) => match T::as_f32(data) {
                Some(data) => {
                    let columns = Columns {
                        runs: rows,
                        width: ow,
                        b_first: 0,
                        b_stride: wq,
                        c_stride: ow,
                    };
                    (
                        Rhs::Rows {
                            data,
                            rows: offsets,
                        },
                        columns,
                    )
                }
                None => return false,
            },
        };
        let Some(mut out) = pieces
            .iter_mut()
            .map(|p| T::as_f32_mut(p))
            .collect::<Option<Vec<&mut [f32]>>>()
        else {
            return false;
        };
        let lhs = Lhs::Packed {
            w,
            matrix: grp,
            first_row: 0,
        };
        packed::product_at(
            Out::Rows(&mut out),
            (lhs, rhs),
            (self.mg(), depth(self.g)),
            columns,
        )
    }
}

/// The fields of a convolution read in place from its zero-padded image (an implicit GEMM).
/// The padded image `[hp, wp]` of each channel is split into its `sH · sW` stride phases
/// (phase `(py, px)` holds the pixels `(i · sH + py, j · sW + px)`, `[hq, wq]`; one phase
/// when the strides are 1), so that field row `(ci, ky, kx)` over the output positions
/// `(oy, ox)` reads phase `(ky · dH mod sH, kx · dW mod sW)` of channel `ci` shifted by
/// `(⌊ky · dH / sH⌋, ⌊kx · dW / sW⌋)`: one window of one buffer, at `rows[ci · kH · kW +
/// ky · kW + kx] + oy · wq + ox`. The product runs over `oH × wq` positions, the last `wq −
/// oW` of each output row (which wrap into the next phase row) computed and dropped, and no
/// unrolled matrix is written.
pub(super) struct Implicit {
    /// Rows of a phase.
    pub hq: usize,
    /// Columns of a phase: the product's row stride.
    pub wq: usize,
    /// Where each field row starts in the phases.
    pub rows: Vec<usize>,
}

impl<T: Float> Dense<'_, T> {
    /// The implicit fields of this convolution, when it takes them: `f32` filters packed
    /// for the packed product, a geometry whose fields can be read in place
    /// ([`Geometry::phases`](super::conv_geometry::Geometry::phases)), and an output plane
    /// of at least `min_plane` positions (smaller ones keep the unrolled fields, whose
    /// products split by filters).
    pub(super) fn implicit(&self, min_plane: usize) -> Option<Implicit> {
        let g = self.g;
        if self.packed.is_none() || T::as_f32(&[]).is_none() || self.plane() < min_plane {
            return None;
        }
        let (hq, wq) = g.phases(self.conv)?;
        let rows = field_offsets(g, self.conv, (hq, wq));
        Some(Implicit { hq, wq, rows })
    }

    /// Elements of one task's padded phases ([`Dense::padded`]).
    pub(super) fn padded_len(&self, imp: &Implicit) -> usize {
        let w = &self.conv.window;
        let tail = self.g.kw.saturating_sub(1) * w.dilations[1] / w.strides[1] + 1;
        self.cg() * w.strides[0] * w.strides[1] * imp.hq * imp.wq + tail
    }

    /// Writes task `k`'s group of channels, zero-padded and split into stride phases, into
    /// `out` ([`Dense::padded_len`] elements: the phases channel by channel (see
    /// [`Implicit`]), then zeros for the dropped positions of the last row to read). With
    /// `team`, the channels are written by its threads (the copy would otherwise run on one
    /// thread while the others wait for the product).
    pub(super) fn padded(&self, k: usize, imp: &Implicit, out: &mut [T], team: Option<Team<'_>>) {
        let (g, w) = (self.g, &self.conv.window);
        let (sh, sw) = (w.strides[0], w.strides[1]);
        let (top, left) = (w.pads_begin[0], w.pads_begin[1]);
        let phase = imp.hq * imp.wq;
        let per_channel = sh * sw * phase;
        let (body, tail) = out.split_at_mut((self.cg() * per_channel).min(out.len()));
        tail.fill(T::default());
        let src = self.task_image(k);
        // Each phase row once: the image row it holds between zeros for the padding, or
        // zeros (the channel's buffer is not cleared first: that was a second pass over it).
        // A row is split into all its phases in one pass.
        let split = PhaseSplit::new(g.w, (left, sw), (phase, imp.wq));
        let channel = |(src, out): (&[T], &mut [T])| {
            for y in 0..sh * imp.hq {
                let image_row = y.checked_sub(top).filter(|&iy| iy < g.h);
                let first = (y % sh) * sw * phase + (y / sh) * imp.wq;
                for px in 0..sw {
                    let segment = &mut out[first + px * phase..][..imp.wq];
                    match image_row {
                        Some(_) => {
                            let held = split.held(px);
                            segment[..held.start].fill(T::default());
                            segment[held.end..].fill(T::default());
                        }
                        None => segment.fill(T::default()),
                    }
                }
                let Some(iy) = image_row else { continue };
                let (row, out) = (&src[iy * g.w..(iy + 1) * g.w], &mut out[first..]);
                match (T::as_f32(row), T::as_f32_mut(out)) {
                    (Some(row), Some(out)) => split.split_f32(row, out),
                    _ => split.split(row, out),
                }
            }
        };
        let channels = src.chunks(g.h * g.w).zip(body.chunks_mut(per_channel));
        match team {
            Some(team) if self.cg() > 1 => for_each(team, channels, channel),
            _ => channels.for_each(channel),
        }
    }

    /// `out = filters · fields` for all filters of group `grp` over `n` positions of the
    /// implicit fields, `data` the padded image from the first position on (row stride of
    /// `out`: `n`). On the packed path; else (a host without AVX-512F) the fields are
    /// written out and multiplied through gemm.
    pub(super) fn product_rows(
        &self,
        grp: usize,
        (data, rows): (&[T], &[usize]),
        n: usize,
        out: &mut [T],
    ) {
        let on_packed = self.packed.is_some_and(|w| {
            let (Some(data), Some(out)) = (T::as_f32(data), T::as_f32_mut(out)) else {
                return false;
            };
            packed::product(
                (out, n),
                Lhs::Packed {
                    w,
                    matrix: grp,
                    first_row: 0,
                },
                Rhs::Rows { data, rows },
                (self.mg(), rows.len(), n),
                false,
            )
        });
        if !on_packed {
            let fields: Vec<T> = rows.iter().flat_map(|&r| data[r..r + n].to_vec()).collect();
            self.product((grp, 0..self.mg()), (&fields, n), n, (out, n));
        }
    }
}

/// Where each field row `(ci, ky, kx)` of a group starts in a task's stride phases of
/// extents `(hq, wq)` (see [`Implicit`]).
pub(super) fn field_offsets(
    g: &Geometry,
    conv: &Convolution,
    (hq, wq): (usize, usize),
) -> Vec<usize> {
    let w = &conv.window;
    let (sh, sw) = (w.strides[0], w.strides[1]);
    let (dh, dw) = (w.dilations[0], w.dilations[1]);
    let phase = hq * wq;
    (0..g.c / g.groups.max(1))
        .flat_map(|ci| (0..g.kh).flat_map(move |ky| (0..g.kw).map(move |kx| (ci, ky, kx))))
        .map(|(ci, ky, kx)| {
            let (y, x) = (ky * dh, kx * dw);
            ((ci * sh + y % sh) * sw + x % sw) * phase + (y / sh) * wq + x / sw
        })
        .collect()
}

/// Rows of a group's unrolled fields: `C/g · kH · kW`.
pub(super) fn depth(g: &Geometry) -> usize {
    g.c / g.groups * g.kh * g.kw
}
