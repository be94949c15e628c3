//! The adjoints of 2-D `Convolution` on `f32`/`f64` (`ConvolutionBackpropData`,
//! `ConvolutionBackpropFilters`) as GEMM through the `gemm` crate beside the forward's
//! im2col: the data's adjoint is the filters' transpose times `dy`, folded back onto the
//! image (col2im); the filter's is `dy` times the unrolled image's transpose, summed over
//! the batch. Depthwise groups spread `dy` onto the image directly.

use std::ops::{Add, Mul};

use graphlift_ir::{Convolution, ConvolutionBackprop, TensorData};
use graphlift_runtime::Tensor;
use multiversion::multiversion;

use super::conv_geometry::{column_runs, im2col, is_pointwise, Geometry};
use super::matmul::{product_strided, Operand, ROW_BLOCK_ALIGN};
use super::phases::add_phases;
use super::result_buffer;
use super::scratch::{with_scratch, Scratch};
use crate::parallel::{for_each, Parallel};

/// Adds into `image` (`channels` planes `[H, W]`), for every channel `ci` and window
/// position `(ky, kx)`, the plane `scale · src` (`[oH, oW]`) that `source(row)` gives for
/// the row `row = (ci · kH + ky) · kW + kx` of the unrolled matrix, at the input positions
/// the forward convolution read (col2im; window positions in the padding are dropped).
/// Input rows are finished one by one (they stay in L1), each from the output rows that read
/// it; with a column stride `s > 1` a row is gathered in its `s` phases (columns `p, p + s,
/// ...`) first, so every run adds contiguous memory and vectorizes, as the forward's
/// depthwise kernel reads it.
#[multiversion(targets = "simd")]
fn spread<'s, T, F>(image: &mut [T], g: &Geometry, conv: &Convolution, channels: usize, source: F)
where
    T: Copy + Default + Add<Output = T> + Mul<Output = T> + 's,
    F: Fn(usize) -> (&'s [T], T),
{
    let win = &conv.window;
    let (sh, sw) = (win.strides[0], win.strides[1]);
    let (dh, ph) = (win.dilations[0], win.pads_begin[0]);
    let runs = column_runs(g, win);
    let phase_len = g.w.div_ceil(sw);
    let mut phases = vec![T::default(); if sw > 1 { sw * phase_len } else { 0 }];
    for ci in 0..channels {
        let plane = &mut image[ci * g.h * g.w..(ci + 1) * g.h * g.w];
        for (iy, dst_row) in plane.chunks_mut(g.w).enumerate() {
            phases.fill(T::default());
            for ky in 0..g.kh {
                // The output row whose window row `ky` reads input row `iy`, if any.
                let Some(oy) = (iy + ph)
                    .checked_sub(ky * dh)
                    .filter(|t| t % sh == 0)
                    .map(|t| t / sh)
                    .filter(|&oy| oy < g.oh)
                else {
                    continue;
                };
                for (kx, (valid, first)) in runs.iter().enumerate() {
                    if valid.is_empty() {
                        continue;
                    }
                    let (src, scale) = source((ci * g.kh + ky) * g.kw + kx);
                    let line = &src[oy * g.ow..(oy + 1) * g.ow][valid.clone()];
                    let run = if sw > 1 {
                        let at = (first % sw) * phase_len + first / sw;
                        &mut phases[at..at + line.len()]
                    } else {
                        &mut dst_row[*first..first + line.len()]
                    };
                    for (d, &v) in run.iter_mut().zip(line) {
                        *d = *d + scale * v;
                    }
                }
            }
            if sw > 1 {
                add_phases(&phases, (sw, phase_len), dst_row);
            }
        }
    }
}

/// Whether the windows of `conv` tile the image `g` exactly: strides equal to the window,
/// no dilation or padding, and `H = oH · kH`, `W = oW · kW` (a transposed convolution that
/// upsamples by its kernel size, as U-Net and detection heads use), so col2im writes every
/// input position once ([`place_tiled`]).
fn windows_tile(g: &Geometry, conv: &Convolution) -> bool {
    let w = &conv.window;
    w.strides[..] == [g.kh, g.kw]
        && w.dilations.iter().all(|&d| d == 1)
        && w.pads_begin.iter().chain(&w.pads_end).all(|&p| p == 0)
        && (g.h, g.w) == (g.oh * g.kh, g.ow * g.kw)
}

/// col2im where the windows tile the image ([`windows_tile`]): `image` (`channels` planes
/// `[H, W]`) from the unrolled rows `cols` (`[channels · kH · kW, oH · oW]`),
/// `image[ci][oy · kH + ky][ox · kW + kx] = cols[(ci · kH + ky) · kW + kx][oy · oW + ox]`,
/// every element written once (no clear, no additions: a depth-to-space). A window two
/// wide interleaves two rows, which vectorizes.
#[multiversion(targets = "simd")]
fn place_tiled<T: Copy>(image: &mut [T], g: &Geometry, channels: usize, cols: &[T]) {
    let plane = g.oh * g.ow;
    let row = |r: usize, oy: usize| &cols[r * plane + oy * g.ow..r * plane + (oy + 1) * g.ow];
    for (ci, img) in image.chunks_mut(g.h * g.w).take(channels).enumerate() {
        for (iy, dst) in img.chunks_mut(g.w).enumerate() {
            let (oy, ky) = (iy / g.kh, iy % g.kh);
            let first = (ci * g.kh + ky) * g.kw;
            if g.kw == 2 {
                let (a, b) = (row(first, oy), row(first + 1, oy));
                for ((d, &a), &b) in dst.chunks_exact_mut(2).zip(a).zip(b) {
                    d[0] = a;
                    d[1] = b;
                }
                continue;
            }
            for kx in 0..g.kw {
                for (ox, &v) in row(first + kx, oy).iter().enumerate() {
                    dst[ox * g.kw + kx] = v;
                }
            }
        }
    }
}

/// `dx` (`[N, C, H, W]`) of `dy` (`[N, M, oH, oW]`) and the filters: per (image, group),
/// and per block of the group's channels when there are fewer pairs than threads.
fn backprop_data<T>(
    dy: &[T],
    f: &[T],
    g: &Geometry,
    conv: &Convolution,
    parallel: &Parallel,
    dx: &mut [T],
) where
    T: Scratch + From<f32> + Send + Sync + Add<Output = T> + Mul<Output = T>,
{
    let (cg, mg) = (g.c / g.groups, g.m / g.groups);
    let (plane, hw, kk) = (g.oh * g.ow, g.h * g.w, g.kh * g.kw);
    let depth = cg * kk;
    if hw == 0 || cg == 0 || dx.len() != g.n * g.c * hw {
        dx.fill(T::default());
        return;
    }
    let depthwise = cg == 1 && mg == 1;
    let pointwise = is_pointwise(g, conv);
    let pairs = g.n * g.groups;
    let team = parallel.team(g.n * g.m * plane * depth);
    let threads = team.map_or(1, |t| t.threads());
    // Channels per task: a group's, or a share of them when the pairs cannot fill the
    // threads (a dense convolution at batch 1).
    let per_task = match team {
        Some(_) if pairs < threads => cg.div_ceil(threads.div_ceil(pairs)),
        _ => cg,
    };
    let one = T::from(1.0);
    let tiled = mg > 0 && !depthwise && !pointwise && windows_tile(g, conv);
    // Each task clears its own block of `dx` before adding into it, on its own thread (a
    // clear of all of `dx` first ran alone while the other threads waited); a pointwise
    // product of some depth, and windows that tile the image, overwrite it.
    let overwrites = tiled || (pointwise && mg > 0);
    // Channels `c0..` of (image, group) `k`, the block `out` of `dx`.
    let run = |(k, c0, out): (usize, usize, &mut [T])| {
        if !overwrites {
            out.fill(T::default());
        }
        let (b, grp) = (k / g.groups, k % g.groups);
        let dy_g = &dy[(b * g.m + grp * mg) * plane..(b * g.m + (grp + 1) * mg) * plane];
        let filters = &f[grp * mg * depth..(grp + 1) * mg * depth];
        let channels = out.len() / hw;
        if depthwise {
            spread(out, g, conv, 1, |row| (dy_g, filters[row]));
            return;
        }
        // The block's rows of the filters' transpose: `[channels · kH · kW, M/g]`.
        let lhs = Operand::transposed(&filters[c0 * kk..], depth);
        let rhs = Operand::rows(dy_g, plane);
        let dims = (channels * kk, mg, plane);
        if pointwise {
            product_strided(lhs, rhs, out, dims, (one, false), gemm::Parallelism::None);
            return;
        }
        // The product overwrites every element of the scratch buffer before it is read.
        with_scratch(channels * kk * plane, |cols| {
            product_strided(lhs, rhs, cols, dims, (one, false), gemm::Parallelism::None);
            if tiled {
                place_tiled(out, g, channels, cols);
                return;
            }
            spread(out, g, conv, channels, |row| {
                (&cols[row * plane..(row + 1) * plane], one)
            });
        });
    };
    let tasks = dx.chunks_mut(cg * hw).enumerate().flat_map(|(k, group)| {
        group
            .chunks_mut(per_task * hw)
            .enumerate()
            .map(move |(j, out)| (k, j * per_task, out))
    });
    match team {
        Some(team) => for_each(team, tasks, run),
        None => tasks.for_each(run),
    }
}

/// The filters' adjoint (`[M, C/g, kH, kW]`) of `x` (`[N, C, H, W]`) and `dy`: per group,
/// `Σ_images dy · im2col(x)ᵀ`; a group's rows (filters) are split over the threads when
/// there are fewer groups than threads.
fn backprop_filters<T>(
    x: &[T],
    dy: &[T],
    g: &Geometry,
    conv: &Convolution,
    parallel: &Parallel,
    df: &mut [T],
) where
    T: Copy + Default + From<f32> + Send + Sync + 'static + Add<Output = T> + Mul<Output = T>,
{
    let (cg, mg) = (g.c / g.groups, g.m / g.groups);
    let (plane, chw) = (g.oh * g.ow, g.c * g.h * g.w);
    let depth = cg * g.kh * g.kw;
    df.fill(T::default());
    if depth == 0 || mg == 0 || df.len() != g.m * depth {
        return;
    }
    let pointwise = is_pointwise(g, conv);
    let team = parallel.team(g.n * g.m * plane * depth);
    let threads = team.map_or(1, |t| t.threads());
    let one = T::from(1.0);
    // The unrolled fields of image `b`, group `grp`: `[C/g · kH · kW, oH · oW]`.
    let fields = |b: usize, grp: usize| {
        let image = &x[b * chw..(b + 1) * chw];
        if pointwise {
            std::borrow::Cow::Borrowed(&image[grp * cg * plane..(grp + 1) * cg * plane])
        } else {
            let mut cols = vec![T::default(); depth * plane];
            im2col(
                image,
                g,
                conv,
                (grp * cg, cg),
                0..g.oh,
                &mut cols,
                T::default(),
            );
            std::borrow::Cow::Owned(cols)
        }
    };
    // Rows `r0..` of group `grp`'s adjoint, `out`, += image `b`'s `dy` rows · fields'ᵀ.
    let accumulate = |b: usize, grp: usize, r0: usize, cols: &[T], out: &mut [T]| {
        let first = (b * g.m + grp * mg + r0) * plane;
        let lhs = Operand::rows(&dy[first..], plane);
        let rhs = Operand::transposed(cols, plane);
        let dims = (out.len() / depth, plane, depth);
        product_strided(lhs, rhs, out, dims, (one, b > 0), gemm::Parallelism::None);
    };
    let rows = mg.div_ceil(threads).next_multiple_of(ROW_BLOCK_ALIGN);
    match team {
        // Few groups (a dense convolution): each image's fields unrolled once and shared by
        // blocks of filters, one per thread.
        Some(team) if g.groups < threads && rows < mg => {
            for (grp, out) in df.chunks_mut(mg * depth).enumerate() {
                for b in 0..g.n {
                    let cols = fields(b, grp);
                    let blocks = out.chunks_mut(rows * depth).enumerate();
                    for_each(team, blocks, |(blk, out)| {
                        accumulate(b, grp, blk * rows, &cols, out)
                    });
                }
            }
        }
        _ => {
            let group = |(grp, out): (usize, &mut [T])| {
                for b in 0..g.n {
                    accumulate(b, grp, 0, &fields(b, grp), out);
                }
            };
            let tasks = df.chunks_mut(mg * depth).enumerate();
            match team {
                Some(team) => for_each(team, tasks, group),
                None => tasks.for_each(group),
            }
        }
    }
}

/// The adjoint of a 2-D convolution with respect to its data ([`ConvolutionBackprop`]):
/// `dy` `[N, M, oH, oW]` and `filter` `[M, C/g, kH, kW]` give `dx` of `b.shape`
/// `[N, C, H, W]`, written into `out` when it fits. `None` when this kernel does not apply
/// (other ranks or element types, operands that do not fit); the caller then runs the
/// reference, which reports what is wrong.
pub fn convolution_backprop_data(
    dy: &Tensor,
    filter: &Tensor,
    b: &ConvolutionBackprop,
    out: Option<TensorData>,
    parallel: &Parallel,
) -> Option<TensorData> {
    let g = Geometry::of(&b.shape, filter.shape(), &b.convolution)?;
    if dy.shape().dims() != [g.n, g.m, g.oh, g.ow] {
        return None;
    }
    let (dy, filter) = (dy.data(), filter.data());
    let mut dx = result_buffer(out, dy.element_type(), g.n * g.c * g.h * g.w);
    match (dy, filter, &mut dx) {
        (TensorData::F32(a), TensorData::F32(f), TensorData::F32(d)) => {
            backprop_data(a, f, &g, &b.convolution, parallel, d)
        }
        (TensorData::F64(a), TensorData::F64(f), TensorData::F64(d)) => {
            backprop_data(a, f, &g, &b.convolution, parallel, d)
        }
        _ => return None,
    }
    Some(dx)
}

/// The adjoint of a 2-D convolution with respect to its filter ([`ConvolutionBackprop`]):
/// `x` `[N, C, H, W]` and `dy` `[N, M, oH, oW]` give the filter's adjoint of `b.shape`
/// `[M, C/g, kH, kW]`, written into `out` when it fits. `None` when this kernel does not
/// apply, as for [`convolution_backprop_data`].
pub fn convolution_backprop_filters(
    x: &Tensor,
    dy: &Tensor,
    b: &ConvolutionBackprop,
    out: Option<TensorData>,
    parallel: &Parallel,
) -> Option<TensorData> {
    let g = Geometry::of(x.shape(), &b.shape, &b.convolution)?;
    if dy.shape().dims() != [g.n, g.m, g.oh, g.ow] || x.data().len() != g.n * g.c * g.h * g.w {
        return None;
    }
    let (x, dy) = (x.data(), dy.data());
    let mut df = result_buffer(out, x.element_type(), g.m * (g.c / g.groups) * g.kh * g.kw);
    match (x, dy, &mut df) {
        (TensorData::F32(a), TensorData::F32(d), TensorData::F32(o)) => {
            backprop_filters(a, d, &g, &b.convolution, parallel, o)
        }
        (TensorData::F64(a), TensorData::F64(d), TensorData::F64(o)) => {
            backprop_filters(a, d, &g, &b.convolution, parallel, o)
        }
        _ => return None,
    }
    Some(df)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::convolution_cases::{convolution_of, CASES};
    use crate::parallel::ThreadConfig;
    use graphlift_ir::Shape;
    use graphlift_testkit::uniform;

    fn close(got: &TensorData, want: &TensorData, depth: usize, what: &str) {
        let (TensorData::F32(g), TensorData::F32(w)) = (got, want) else {
            panic!("types")
        };
        assert_eq!(g.len(), w.len(), "{what}");
        for (a, b) in g.iter().zip(w) {
            assert!(
                (a - b).abs() <= depth as f32 * f32::EPSILON,
                "{what}: {a} vs {b}"
            );
        }
    }

    #[test]
    fn agree_with_the_reference() {
        for threads in [1, 2, 3] {
            let parallel = Parallel::new(ThreadConfig::with_threads(threads));
            for case in CASES {
                let (dx, df) = (case.0, case.1);
                let convolution = convolution_of(case);
                let out = convolution.window.output_extents(&dx[2..]).unwrap();
                let sy = Shape::new([dx[0], df[0], out[0], out[1]]);
                let (sx, sf) = (Shape::new(dx), Shape::new(df));
                let tensor = |s: &Shape, seed| {
                    let d = TensorData::F32(uniform(s.element_count().unwrap(), seed));
                    Tensor::from_data(d, s.clone()).unwrap()
                };
                let (x, f, dy) = (tensor(&sx, 1), tensor(&sf, 2), tensor(&sy, 3));
                let data = ConvolutionBackprop {
                    convolution: convolution.clone(),
                    shape: sx.clone(),
                };
                let want = graphlift_runtime::reference::convolution_backprop_data(
                    dy.data(),
                    &sy,
                    f.data(),
                    &sf,
                    &data,
                )
                .unwrap();
                // Into a new buffer, and into a stale one (every element is written).
                let stale = TensorData::F32(vec![f32::NAN; want.len()]);
                for out in [None, Some(stale)] {
                    let got = convolution_backprop_data(&dy, &f, &data, out, &parallel).unwrap();
                    let what = format!("data {dx:?} {df:?}, {threads} threads");
                    close(&got, &want, df[0] * df[2] * df[3], &what);
                }
                let filters = ConvolutionBackprop {
                    convolution,
                    shape: sf.clone(),
                };
                let got = convolution_backprop_filters(&x, &dy, &filters, None, &parallel).unwrap();
                let want = graphlift_runtime::reference::convolution_backprop_filters(
                    x.data(),
                    &sx,
                    dy.data(),
                    &sy,
                    &filters,
                )
                .unwrap();
                let what = format!("filters {dx:?} {df:?}, {threads} threads");
                close(&got, &want, dx[0] * sy.dims()[2] * sy.dims()[3], &what);
            }
        }
    }
}
