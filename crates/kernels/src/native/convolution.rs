//! 2-D `Convolution` on `f32`/`f64` as a matrix product of the filters with the unrolled
//! receptive fields (im2col, or read in place from the padded image where the filters are
//! packed: `conv_dense`), with a direct loop for depthwise groups; and the one
//! decision of how a convolution splits over threads: by (image, group) tasks, by blocks of
//! filters, or by bands of output rows.

use std::ops::Range;

use graphlift_ir::{Convolution, TensorData};
use graphlift_runtime::Tensor;

use super::conv_channels;
use super::conv_dense::{depth, Dense, Fields, Float, Implicit};
use super::conv_geometry::{band_items, lift_1d, Geometry};
use super::depthwise::Depthwise;
use super::matmul::ROW_BLOCK_ALIGN;
use super::packed::PackedWeights;
use super::result_buffer;
use super::scratch::with_scratch;
use super::whole_image;
use super::Epilogue;
use crate::parallel::{for_each, Parallel, Team, MIN_MACS_PER_THREAD};

/// The most elements an unrolled field matrix holds at once (1 MiB of `f32`, within L2): a
/// larger one (many channels times a wide window, over a large image) is unrolled and
/// multiplied in bands of output rows, each band's product written in place.
const FIELD_BUDGET: usize = 1 << 18;

/// The fewest output elements an epilogue is handed at once (32 KiB of `f32`, in L1/L2
/// when the epilogue reads them), unless the whole output is smaller.
const EPILOGUE_BLOCK: usize = 8192;

/// The multiply-accumulates each thread of a depthwise convolution must get
/// ([`Parallel::team_of`]): about as long on one core as [`MIN_MACS_PER_THREAD`] of a
/// product's, as a depthwise tap costs a load, a multiply-add and its share of the padding
/// and transposes for one output (a product's, a sixteenth of a vector's FMA), measured at
/// 2.5-5 · 10⁹ a second against about 60 · 10⁹.
const MIN_DEPTHWISE_MACS_PER_THREAD: usize = MIN_MACS_PER_THREAD / 16;

/// Bands of output rows per thread when a convolution of fewer tasks than threads is split
/// by bands: a few, so a thread held up by another process leaves bands to the others.
const BANDS_PER_THREAD: usize = 2;

/// The fewest output columns per thread (an image's output plane over the threads) at which
/// a convolution of fewer tasks than threads is split by bands of output rows rather than
/// by blocks of filters: two of the packed microkernel's 48-column panels.
const BAND_MIN_COLUMNS: usize = 96;

fn convolve<T: Float>(
    (x, f): (&[T], &[T]),
    g: &Geometry,
    conv: &Convolution,
    parallel: &Parallel,
    y: &mut [T],
    (epilogue, packed): (Option<Epilogue<'_>>, Option<&PackedWeights>),
) {
    let d = Dense::new((x, f), g, conv, packed);
    let (mg, plane) = (d.mg(), d.plane());
    if plane == 0 || g.m == 0 || y.len() != g.n * g.m * plane {
        return;
    }
    let macs = g.n * g.m * plane * depth(g);
    let team = match d.depthwise_groups() {
        true => parallel.team_of(macs, MIN_DEPTHWISE_MACS_PER_THREAD),
        false => parallel.team(macs),
    };
    let threads = team.map_or(1, |t| t.threads());
    let min_plane = threads * BAND_MIN_COLUMNS;
    if g.covers_images(conv) && whole_image::convolve((x, f), g, packed, y) {
        if let Some(e) = &epilogue {
            e.run(0, y);
        }
        return;
    }
    if packed.is_some_and(|w| conv_channels::holds(w, g))
        && channel_lanes((x, f), g, conv, parallel, y, (epilogue, packed))
    {
        return;
    }
    // A pointwise convolution whose result outgrows the budget hands its epilogue bands
    // of output rows while they are in cache (from scratch, for a sole reader), rather
    // than whole planes or blocks of filters written to memory and read back.
    let banded = d.pointwise && epilogue.is_some() && mg * plane > FIELD_BUDGET;
    match team {
        Some(team) if d.tasks() < threads && !d.depthwise_groups() => {
            let rows = mg.div_ceil(threads).next_multiple_of(ROW_BLOCK_ALIGN);
            // Bands need output rows to share out (a 1-D convolution has one).
            let few_rows = g.oh < threads;
            if rows < mg && d.pointwise && !banded {
                pointwise_by_filter_rows(&d, team, y, epilogue);
            } else if rows < mg && (plane < min_plane || few_rows) {
                by_filter_rows(&d, team, rows, y, epilogue);
            } else {
                let implicit = d.implicit(min_plane);
                by_bands(&d, implicit.as_ref(), Some(team), threads, y, epilogue);
            }
        }
        _ => match d.implicit(min_plane) {
            Some(imp) => by_bands(&d, Some(&imp), team, threads, y, epilogue),
            None if banded => by_bands(&d, None, team, threads, y, epilogue),
            None => by_tasks(&d, team.filter(|_| d.tasks() > 1), threads, y, epilogue),
        },
    }
}

/// [`conv_channels::convolve`] on `f32` operands; `false` where it does not run.
fn channel_lanes<T: Float>(
    (x, f): (&[T], &[T]),
    g: &Geometry,
    conv: &Convolution,
    parallel: &Parallel,
    y: &mut [T],
    (epilogue, packed): (Option<Epilogue<'_>>, Option<&PackedWeights>),
) -> bool {
    let (Some(x), Some(f), Some(y), Some(w)) =
        (T::as_f32(x), T::as_f32(f), T::as_f32_mut(y), packed)
    else {
        return false;
    };
    conv_channels::convolve(&Dense::new((x, f), g, conv, None), w, parallel, y, epilogue)
}

/// Output rows per band of unrolled fields, at most `FIELD_BUDGET` elements of them (all
/// rows for a pointwise convolution, whose fields are the image itself).
fn band_rows<T: Float>(d: &Dense<'_, T>) -> usize {
    let g = d.g;
    if d.pointwise {
        return g.oh.max(1);
    }
    (FIELD_BUDGET / (depth(g) * g.ow).max(1)).clamp(1, g.oh.max(1))
}

/// The bands of `0..oh` of at most `rows` rows each.
fn bands(oh: usize, rows: usize) -> Vec<Range<usize>> {
    (0..oh)
        .step_by(rows.max(1))
        .map(|r| r..(r + rows).min(oh))
        .collect()
}

/// One task (image, group) after another, on the calling thread or spread over `team`:
/// the tasks' output planes are contiguous, so the epilogue sees blocks of whole planes.
fn by_tasks<T: Float>(
    d: &Dense<'_, T>,
    team: Option<Team<'_>>,
    threads: usize,
    y: &mut [T],
    epilogue: Option<Epilogue<'_>>,
) {
    let g = d.g;
    let (mg, plane) = (d.mg(), d.plane());
    let bands = bands(g.oh, band_rows(d));
    let tasks = d.tasks();
    let convolve_task = |k: usize, out: &mut [T]| {
        let grp = k % g.groups;
        for band in &bands {
            let span = band.start * g.ow..band.end * g.ow;
            with_scratch(d.fields_len(band), |buffer| {
                let cols = d.fields(k, band, buffer);
                d.product(
                    (grp, 0..mg),
                    cols,
                    span.len(),
                    (&mut out[span.start..], plane),
                );
            });
        }
    };
    // Tasks per block: an epilogue, and the depthwise loop (which sets up its taps and
    // padded rows once per call), see blocks of at least EPILOGUE_BLOCK elements, split
    // over the threads.
    let per_task = mg * plane;
    let mut per_block = if epilogue.is_some() || d.depthwise_groups() {
        EPILOGUE_BLOCK.div_ceil(per_task).max(1)
    } else {
        1
    };
    if team.is_some() {
        per_block = per_block.min(tasks.div_ceil(threads).max(1));
    }
    let depthwise = d.depthwise_groups().then(|| Depthwise::new::<T>(g, d.conv));
    let block = |(blk, out): (usize, &mut [T])| {
        let first = blk * per_block;
        if let Some(depthwise) = &depthwise {
            // Task `k` is channel `k` of the flattened `[N · C]` planes, all in one call.
            let hw = g.h * g.w;
            let planes = &d.x[first * hw..(first + out.len() / per_task) * hw];
            depthwise.run(planes, (d.f, first), g, d.conv, out);
        } else {
            for (i, out) in out.chunks_mut(per_task).enumerate() {
                convolve_task(first + i, out);
            }
        }
        if let Some(e) = &epilogue {
            e.run(blk * per_block * per_task, out);
        }
    };
    let blocks = y.chunks_mut(per_block * per_task).enumerate();
    match team {
        Some(team) => for_each(team, blocks, block),
        None => blocks.for_each(block),
    }
}

/// A pointwise convolution of fewer tasks than threads (a batch of a few images): its
/// fields are the images themselves, so every (task, block of filters) pair is one task of
/// a single fork-join, the filters of each image in the blocks whose busiest thread gets
/// the fewest filters (then the fewest blocks). (Image by image, as [`by_filter_rows`]
/// goes, the PP-OCR classifier at batch 6 made six fork-joins of a few µs each per
/// convolution.)
fn pointwise_by_filter_rows<T: Float>(
    d: &Dense<'_, T>,
    team: Team<'_>,
    y: &mut [T],
    epilogue: Option<Epilogue<'_>>,
) {
    let g = d.g;
    let (mg, plane) = (d.mg(), d.plane());
    let (tasks, threads) = (d.tasks().max(1), team.threads());
    let rows = (threads.div_ceil(tasks)..=2 * threads)
        .map(|blocks| {
            mg.div_ceil(blocks)
                .next_multiple_of(ROW_BLOCK_ALIGN)
                .min(mg)
        })
        .min_by_key(|&rows| {
            let blocks = mg.div_ceil(rows);
            ((tasks * blocks).div_ceil(threads) * rows, blocks)
        })
        .unwrap_or(mg);
    let items = y.chunks_mut(mg * plane).enumerate().flat_map(|(k, out)| {
        out.chunks_mut(rows * plane)
            .enumerate()
            .map(move |(blk, out)| (k, blk, out))
    });
    for_each(team, items, |(k, blk, out)| {
        let cols = d.fields(k, &(0..g.oh), &mut []);
        let filters = blk * rows..blk * rows + out.len() / plane;
        d.product((k % g.groups, filters), cols, plane, (out, plane));
        if let Some(e) = &epilogue {
            e.run(k * mg * plane + blk * rows * plane, out);
        }
    });
}

/// Fewer tasks than threads, many filters: each band's fields are unrolled once (on the
/// calling thread) and shared by blocks of `rows` filters, one block per thread, as the
/// native MatMul splits few large products.
fn by_filter_rows<T: Float>(
    d: &Dense<'_, T>,
    team: Team<'_>,
    rows: usize,
    y: &mut [T],
    epilogue: Option<Epilogue<'_>>,
) {
    let g = d.g;
    let (mg, plane) = (d.mg(), d.plane());
    let bands = bands(g.oh, band_rows(d));
    for (k, out) in y.chunks_mut(mg * plane).enumerate() {
        for (b, band) in bands.iter().enumerate() {
            let span = band.start * g.ow..band.end * g.ow;
            let last = b + 1 == bands.len();
            with_scratch(d.fields_len(band), |buffer| {
                let cols = d.fields(k, band, buffer);
                for_each(
                    team,
                    out.chunks_mut(rows * plane).enumerate(),
                    |(blk, out)| {
                        let filters = blk * rows..blk * rows + out.len() / plane;
                        let at = &mut out[span.start..];
                        d.product((k % g.groups, filters), cols, span.len(), (at, plane));
                        if let (true, Some(e)) = (last, &epilogue) {
                            e.run(k * mg * plane + blk * rows * plane, out);
                        }
                    },
                );
            });
        }
    }
}

/// Bands of output rows (of every task) computed one by one or spread over `team`, each
/// product of all of the group's filters stored into the band's rows of each output
/// channel, on the packed path directly (`Dense::product_into`, where
/// `Dense::stores_in_place` says so for implicit fields), else through a buffer and a copy;
/// the epilogue then sees them channel by channel. Taken by
/// a convolution of fewer tasks than threads (few filters or a large image: the unrolling
/// runs in parallel too, as MLAS splits a convolution's output positions over threads), and
/// by every convolution with `implicit` fields, whose bands read the padded image in place,
/// and by a pointwise one with an epilogue whose result outgrows the field budget.
fn by_bands<T: Float>(
    d: &Dense<'_, T>,
    implicit: Option<&Implicit>,
    team: Option<Team<'_>>,
    threads: usize,
    y: &mut [T],
    epilogue: Option<Epilogue<'_>>,
) {
    let g = d.g;
    let (mg, plane) = (d.mg(), d.plane());
    let tasks = d.tasks();
    // Positions per output row in a product: the padded row for implicit fields.
    let width = implicit.map_or(g.ow, |imp| imp.wq);
    // Bands: within the budget (the product and any unrolled fields together) and, split
    // over threads, at least BANDS_PER_THREAD per thread in all.
    let unrolled = if d.pointwise || implicit.is_some() {
        0
    } else {
        depth(g)
    };
    let mut rows = FIELD_BUDGET / ((unrolled + mg) * width).max(1);
    if team.is_some() {
        rows = rows.min(g.oh.div_ceil((BANDS_PER_THREAD * threads).div_ceil(tasks.max(1))));
    }
    let bands = bands(g.oh, rows.max(1));
    // Every task's padded phases, one after another, for implicit fields.
    let per_task = implicit.map_or(0, |imp| d.padded_len(imp));
    with_scratch(tasks * per_task, |padded| {
        if let Some(imp) = implicit {
            for (k, out) in padded.chunks_mut(per_task.max(1)).enumerate() {
                d.padded(k, imp, out, team);
            }
        }
        let items = band_items(y, (mg, plane, g.ow), &bands);
        // Where the product does not store into the band's rows (`Dense::product_into`):
        // into a buffer, each output row then copied out.
        let through_buffer = |pieces: &mut [&mut [T]], n: usize, product: &dyn Fn(&mut [T])| {
            with_scratch(mg * n, |buffer| {
                product(buffer);
                for (piece, rows) in pieces.iter_mut().zip(buffer.chunks(n)) {
                    for (to, from) in piece.chunks_mut(g.ow).zip(rows.chunks(width)) {
                        to.copy_from_slice(&from[..g.ow]);
                    }
                }
            })
        };
        let in_place = implicit.is_some_and(|imp| d.stores_in_place(imp));
        // An epilogue that alone reads the result gets each band from a scratch buffer,
        // and the result is not written.
        let sole_reader = epilogue.as_ref().is_some_and(Epilogue::is_sole_reader);
        let band_product = |k: usize, b: usize, mut pieces: Vec<&mut [T]>| {
            let band = &bands[b];
            let (grp, n) = (k % g.groups, band.len() * width);
            match implicit {
                Some(imp) => {
                    let data = &padded[k * per_task + band.start * imp.wq..(k + 1) * per_task];
                    let fields = Fields::Implicit(data, &imp.rows, imp.wq);
                    if !(in_place && d.product_into(grp, fields, band.len(), &mut pieces)) {
                        through_buffer(&mut pieces, n, &|out| {
                            d.product_rows(grp, (data, &imp.rows), n, out)
                        });
                    }
                }
                None => with_scratch(d.fields_len(band), |buffer| {
                    let cols = d.fields(k, band, buffer);
                    let fields = Fields::Unrolled(cols.0, cols.1);
                    if !d.product_into(grp, fields, band.len(), &mut pieces) {
                        through_buffer(&mut pieces, n, &|out| {
                            d.product((grp, 0..mg), cols, n, (out, n))
                        });
                    }
                }),
            }
            if let Some(e) = &epilogue {
                for (m, piece) in pieces.iter_mut().enumerate() {
                    e.run((k * mg + m) * plane + band.start * g.ow, piece);
                }
            }
        };
        let band_task = |(k, b, pieces): (usize, usize, Vec<&mut [T]>)| {
            let band_len = bands[b].len() * g.ow;
            if !sole_reader || band_len == 0 {
                return band_product(k, b, pieces);
            }
            with_scratch(mg * band_len, |scratch| {
                band_product(k, b, scratch.chunks_mut(band_len.max(1)).take(mg).collect())
            })
        };
        match team {
            Some(team) => for_each(team, items.into_iter(), band_task),
            None => items.into_iter().for_each(band_task),
        }
    });
}

/// The convolution of `x` `[N, C, H, W]` with `filter` `[M, C/g, kH, kW]`, or `None` when
/// this kernel does not apply (other ranks or element types); the caller then runs the
/// reference. For each image and group, the receptive fields `[C/g · kH · kW, oH · oW]`
/// (zeros where the window reads padding) are multiplied by the group's filters `[M/g, C/g ·
/// kH · kW]`: unrolled (im2col) and multiplied with the `gemm` crate, or, with `packed` (the
/// filter as [`super::packed::prepare`] packed it), on the packed AVX-512 path, read in
/// place from the padded image where `Dense::implicit` takes them. `epilogue` runs on each
/// block of the output as soon as it is written (whole planes, blocks of filters' planes, or
/// a band's rows of each channel, by how the call is split over threads); a
/// [sole reader](Epilogue::sole_reader) gets a band's rows from a scratch buffer, and those
/// elements of the result are left unwritten.
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
    let mut y = result_buffer(out, x.element_type(), len);
    match (x, filter, &mut y) {
        (TensorData::F32(a), TensorData::F32(b), TensorData::F32(y)) => {
            convolve((a, b), &g, conv, parallel, y, (epilogue, packed))
        }
        (TensorData::F64(a), TensorData::F64(b), TensorData::F64(y)) => {
            convolve((a, b), &g, conv, parallel, y, (epilogue, packed))
        }
        _ => return None,
    }
    Some(y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::convolution_cases::{convolution_of, CASES};
    use crate::parallel::ThreadConfig;
    use graphlift_ir::Shape;

    #[test]
    fn agrees_with_the_reference() {
        for threads in [1, 2, 5, 16] {
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
