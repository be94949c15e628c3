//! 2-D `Convolution` on `f32`/`f64` as im2col + GEMM through the `gemm` crate, with a direct
//! loop for depthwise groups, so a convolution reuses the blocked SIMD matrix product instead
//! of the reference's nested loops.

use std::ops::Range;

use graphlift_ir::{Convolution, Shape, TensorData};
use graphlift_runtime::Tensor;
use multiversion::multiversion;

use super::conv_geometry::{valid_columns, Geometry};
use super::depthwise::depthwise;
use super::gemm_call::{gemm_into, Strided};
use super::matmul::ROW_BLOCK_ALIGN;
use super::packed::{self, Element, Lhs, PackedWeights, Rhs, Side};
use super::Epilogue;
use crate::parallel::{for_each, Parallel};

/// The most elements an unrolled field matrix holds at once (1 MiB of `f32`, within L2): a
/// larger one (many channels times a wide window, over a large image) is unrolled and
/// multiplied in bands of output rows, each band's product written in place.
const FIELD_BUDGET: usize = 1 << 18;

/// The fewest output elements an epilogue is handed at once (32 KiB of `f32`, in L1/L2
/// when the epilogue reads them), unless the whole output is smaller.
const EPILOGUE_BLOCK: usize = 8192;

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
                    let src = &image[iy * g.w..(iy + 1) * g.w];
                    // First input column read (`valid.start` maps inside the row).
                    let first = valid.start * sw + kx * dw - pw;
                    let dst = &mut line[valid.clone()];
                    if sw == 1 {
                        dst.copy_from_slice(&src[first..first + dst.len()]);
                    } else {
                        for (k, v) in dst.iter_mut().enumerate() {
                            *v = src[first + k * sw];
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
    let w = &conv.window;
    g.kh == 1
        && g.kw == 1
        && w.strides.iter().all(|&s| s == 1)
        && w.pads_begin.iter().chain(&w.pads_end).all(|&p| p == 0)
}

fn convolve<T>(
    x: &[T],
    f: &[T],
    g: &Geometry,
    conv: &Convolution,
    parallel: &Parallel,
    y: &mut [T],
    (epilogue, packed): (Option<Epilogue<'_>>, Option<&PackedWeights>),
) where
    T: Element
        + Default
        + From<f32>
        + Send
        + Sync
        + 'static
        + PartialEq
        + std::ops::Add<Output = T>
        + std::ops::Mul<Output = T>,
{
    let (cg, mg) = (g.c / g.groups, g.m / g.groups);
    let plane = g.oh * g.ow;
    let depth = cg * g.kh * g.kw;
    if plane == 0 || g.m == 0 || y.len() != g.n * g.m * plane {
        return;
    }
    let pointwise = is_pointwise(g, conv);
    // Output rows per band of unrolled fields (all of them for a pointwise convolution,
    // whose fields are the image itself).
    let band_rows = if pointwise {
        g.oh
    } else {
        (FIELD_BUDGET / (depth * g.ow).max(1)).clamp(1, g.oh.max(1))
    };
    let bands: Vec<Range<usize>> = (0..g.oh)
        .step_by(band_rows)
        .map(|r| r..(r + band_rows).min(g.oh))
        .collect();
    // The image of task `k` (image, group) and the group's filters.
    let operands = |k: usize| {
        let (b, grp) = (k / g.groups, k % g.groups);
        let image = &x[b * g.c * g.h * g.w..(b + 1) * g.c * g.h * g.w];
        let filters = &f[grp * mg * depth..(grp + 1) * mg * depth];
        (image, grp, filters)
    };
    // The unrolled receptive fields of task `k` for output rows `rows`:
    // `[C/g · kH · kW, rows.len() · oW]`, in `buffer` unless the image is that matrix.
    let fields = |k: usize, rows: &Range<usize>, buffer: &mut Vec<T>| {
        if pointwise {
            return;
        }
        let (image, grp, _) = operands(k);
        buffer.resize(depth * rows.len() * g.ow, T::default());
        im2col(
            image,
            g,
            conv,
            (grp * cg, cg),
            rows.clone(),
            buffer,
            T::default(),
        );
    };
    // A pointwise convolution's fields: the group's channels (`plane == H * W`).
    let image_fields = |k: usize| {
        let (b, grp) = (k / g.groups, k % g.groups);
        let channels = (b * g.c + grp * cg) * plane;
        &x[channels..channels + cg * plane]
    };
    // The weights packed for the left side from the groups' filters, when they are.
    let packed = packed.filter(|w| w.side() == Side::Left && w.extents() == (g.groups, mg, depth));
    // `out[.., columns of the band] = filters · fields` for rows `row0..row0 + r` of group
    // `grp`'s filters: on the packed path where it takes them, else through gemm.
    let band_product =
        |(grp, row0): (usize, usize), cols: &[T], out: &mut [T], r: usize, band: &Range<usize>| {
            let span = band.start * g.ow..band.end * g.ow;
            let on_packed = packed.is_some_and(|w| {
                let (Some(cols), Some(out)) =
                    (T::as_f32(cols), T::as_f32_mut(&mut out[span.start..]))
                else {
                    return false;
                };
                packed::product(
                    (out, plane),
                    Lhs::Packed {
                        w,
                        matrix: grp,
                        first_row: row0,
                    },
                    Rhs::Strided {
                        data: cols,
                        ks: span.len(),
                    },
                    (r, depth, span.len()),
                    false,
                )
            });
            let Some(filters) = f.get((grp * mg + row0) * depth..).filter(|_| !on_packed) else {
                return;
            };
            gemm_into(
                (
                    &mut out[span.start..],
                    Strided {
                        rows: r,
                        cols: span.len(),
                        row_stride: plane,
                        col_stride: 1,
                    },
                ),
                (filters, Strided::row_major(r, depth)),
                (cols, Strided::row_major(depth, span.len())),
                T::from(1.0),
                None,
                gemm::Parallelism::None,
            );
        };
    // Unroll the group's fields band by band, multiply by the group's filters.
    let convolve_group = |k: usize, out: &mut [T]| {
        let (image, grp, filters) = operands(k);
        if cg == 1 && mg == 1 {
            let channel = &image[grp * g.h * g.w..(grp + 1) * g.h * g.w];
            depthwise(channel, filters, g, conv, out);
            return;
        }
        let mut buffer = Vec::new();
        for band in &bands {
            fields(k, band, &mut buffer);
            let cols = if pointwise { image_fields(k) } else { &buffer };
            band_product((grp, 0), cols, out, mg, band);
        }
    };
    let threads = parallel.config().threads;
    let tasks = g.n * g.groups;
    let macs = g.n * g.m * plane * depth;
    // Fewer tasks than threads (one image, one group: every dense convolution at batch 1):
    // each band's product is split by rows of filters (output channels) over the threads,
    // the band's fields unrolled once and shared, as the native MatMul splits few large
    // products.
    let rows = mg.div_ceil(threads).next_multiple_of(ROW_BLOCK_ALIGN);
    if let Some(pool) = parallel
        .pool()
        .filter(|_| macs >= 1 << 18 && tasks < threads && rows < mg)
    {
        let mut buffer = Vec::new();
        for (k, out) in y.chunks_mut(mg * plane).enumerate() {
            let (_, grp, _) = operands(k);
            for (b, band) in bands.iter().enumerate() {
                fields(k, band, &mut buffer);
                let cols = if pointwise { image_fields(k) } else { &buffer };
                let last = b + 1 == bands.len();
                for_each(
                    pool,
                    out.chunks_mut(rows * plane).enumerate(),
                    |(blk, out)| {
                        let r = out.len() / plane;
                        band_product((grp, blk * rows), cols, out, r, band);
                        if let (true, Some(e)) = (last, &epilogue) {
                            e.run(k * mg * plane + blk * rows * plane, out);
                        }
                    },
                );
            }
        }
        return;
    }
    let pool = parallel.pool().filter(|_| macs >= 1 << 18 && tasks > 1);
    // Tasks per block: an epilogue sees blocks of at least EPILOGUE_BLOCK elements (one call
    // per depthwise plane would cost more than the pass it saves), split over the threads.
    let per_task = mg * plane;
    let mut per_block = match epilogue {
        Some(_) => EPILOGUE_BLOCK.div_ceil(per_task).max(1),
        None => 1,
    };
    if pool.is_some() {
        per_block = per_block.min(tasks.div_ceil(threads).max(1));
    }
    // One block of tasks (image, group), then the block's epilogue.
    let block = |(blk, out): (usize, &mut [T])| {
        for (i, out) in out.chunks_mut(per_task).enumerate() {
            convolve_group(blk * per_block + i, out);
        }
        if let Some(e) = &epilogue {
            e.run(blk * per_block * per_task, out);
        }
    };
    match pool {
        Some(pool) => for_each(pool, y.chunks_mut(per_block * per_task).enumerate(), block),
        None => y
            .chunks_mut(per_block * per_task)
            .enumerate()
            .for_each(block),
    }
}

/// The convolution of `x` `[N, C, H, W]` with `filter` `[M, C/g, kH, kW]`, or `None` when
/// this kernel does not apply (other ranks or element types); the caller then runs the
/// reference. For each image and group, the receptive fields are unrolled (im2col) into a
/// `[C/g · kH · kW, oH · oW]` matrix (zeros where the window reads padding) and multiplied
/// by the group's filters `[M/g, C/g · kH · kW]` with the `gemm` crate. `epilogue` runs on
/// blocks of whole output planes (those of one or more (image, group) pairs) as soon as
/// they are written. `packed`, the filter as [`super::packed::prepare`] packed it, runs the
/// `f32` products on the packed AVX-512 path.
pub fn convolution(
    x: &Tensor,
    filter: &Tensor,
    conv: &Convolution,
    out: Option<TensorData>,
    parallel: &Parallel,
    (epilogue, packed): (Option<Epilogue<'_>>, Option<&PackedWeights>),
) -> Option<TensorData> {
    let lifted = lift_1d(x.shape(), filter.shape(), conv);
    let (sx, sf, conv) = match &lifted {
        Some((sx, sf, c)) => (sx, sf, c),
        None => (x.shape(), filter.shape(), conv),
    };
    let g = Geometry::of(sx, sf, conv)?;
    let (x, filter) = (x.data(), filter.data());
    if x.len() != g.n * g.c * g.h * g.w || filter.len() != g.m * (g.c / g.groups) * g.kh * g.kw {
        return None;
    }
    let len = g.n * g.m * g.oh * g.ow;
    let mut y = match out {
        Some(d) if d.element_type() == x.element_type() && d.len() == len => d,
        _ => TensorData::zeros(x.element_type(), len),
    };
    match (x, filter, &mut y) {
        (TensorData::F32(a), TensorData::F32(b), TensorData::F32(y)) => {
            convolve(a, b, &g, conv, parallel, y, (epilogue, packed))
        }
        (TensorData::F64(a), TensorData::F64(b), TensorData::F64(y)) => {
            convolve(a, b, &g, conv, parallel, y, (epilogue, packed))
        }
        _ => return None,
    }
    Some(y)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::convolution_cases::{convolution_of, CASES};
    use crate::parallel::ThreadConfig;

    #[test]
    fn agrees_with_the_reference() {
        for threads in [1, 2] {
            let parallel = Parallel::new(ThreadConfig::with_threads(threads));
            for case in CASES {
                let (dx, df) = (case.0, case.1);
                let conv = convolution_of(case);
                let (sx, sf) = (Shape::new(dx), Shape::new(df));
                let lcg = |n: usize, seed: u64| -> TensorData {
                    let mut s = seed;
                    TensorData::F32(
                        (0..n)
                            .map(|_| {
                                s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                                (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                            })
                            .collect(),
                    )
                };
                let x = lcg(sx.element_count().unwrap(), 3);
                let f = lcg(sf.element_count().unwrap(), 4);
                let (xt, ft) = (
                    Tensor::from_data(x.clone(), sx.clone()).unwrap(),
                    Tensor::from_data(f.clone(), sf.clone()).unwrap(),
                );
                let got = convolution(&xt, &ft, &conv, None, &parallel, (None, None)).unwrap();
                let want =
                    graphlift_runtime::reference::convolution(&x, &sx, &f, &sf, &conv).unwrap();
                let (TensorData::F32(g), TensorData::F32(w)) = (&got, &want) else {
                    panic!("types")
                };
                assert_eq!(g.len(), w.len(), "{dx:?} {df:?}");
                let depth = (df[1] * df[2] * df[3]) as f32;
                for (a, b) in g.iter().zip(w) {
                    assert!(
                        (a - b).abs() <= depth * f32::EPSILON,
                        "{dx:?} {df:?}: {a} vs {b}"
                    );
                }
            }
        }
    }

    /// A 1-D convolution runs as the 2-D one over a unit height and agrees with the
    /// reference (strided, dilated, padded, grouped).
    #[test]
    fn one_dimensional_agrees_with_the_reference() {
        let parallel = Parallel::new(ThreadConfig::with_threads(2));
        let conv = Convolution {
            window: graphlift_ir::Window {
                shape: vec![3],
                strides: vec![2],
                dilations: vec![2],
                pads_begin: vec![2],
                pads_end: vec![1],
            },
            groups: 2,
        };
        let (sx, sf) = (Shape::new([2, 4, 11]), Shape::new([6, 2, 3]));
        let ramp =
            |n: usize, k: f32| TensorData::F32((0..n).map(|i| (i as f32 * k).sin()).collect());
        let (x, f) = (ramp(88, 0.37), ramp(36, 0.91));
        let xt = Tensor::from_data(x.clone(), sx.clone()).unwrap();
        let ft = Tensor::from_data(f.clone(), sf.clone()).unwrap();
        let got = convolution(&xt, &ft, &conv, None, &parallel, (None, None)).unwrap();
        let want = graphlift_runtime::reference::convolution(&x, &sx, &f, &sf, &conv).unwrap();
        let (TensorData::F32(g), TensorData::F32(w)) = (&got, &want) else {
            panic!("types")
        };
        assert_eq!(g.len(), w.len());
        for (a, b) in g.iter().zip(w) {
            assert!((a - b).abs() <= 6.0 * f32::EPSILON, "{a} vs {b}");
        }
    }
}
