//! Convolutions with their output channels in the vector lanes
//! ([`packed::channel_product`]): the decision of which convolutions take them (one owner,
//! asked when the filters are packed and when the convolution runs), and the loop that
//! runs them: each (image, group) task's padded image read in place, every panel of 48
//! filters over blocks of output positions, spread over the threads.
//!
//! Why: the packed product's lanes run along an output row, so a row of 13, 26 or 52
//! positions leaves about a fifth of every tile's lanes masked off (and rows narrower than
//! 16 are unrolled first); onnxruntime's NCHWc convolutions put 16 filters in the lanes
//! instead. Here the filters are packed for the right side (`[C/g · kH · kW, M/g]`) and
//! eight consecutive positions of the plane fill a tile whatever the row length.

use graphlift_ir::{Convolution, Shape};

use super::conv_dense::{depth, field_offsets, Dense, Implicit};
use super::conv_geometry::{geometry_of, is_pointwise, Geometry};
use super::packed::{self, ChannelOut, PackedWeights, Side, PANEL_COLUMNS};
use super::scratch::with_scratch;
use super::Epilogue;
use crate::parallel::{for_each, Parallel};

/// Lanes of a vector of filters, and output positions of a tile.
const LANES: usize = 16;
const POSITIONS: usize = 8;

/// Cycles a tile spends storing its sums transposed, against one multiply-add step of `k`
/// per cycle: about 24 shuffles and 48 stores for each of its three vectors.
const TRANSPOSE_STEPS: usize = 6;

/// The share of a row-wise tile's lanes that does useful work where the fields are
/// unrolled first (output rows narrower than 16, or rows whose padding would waste more
/// than a fifth of a tile): every field is written and read again, and deep windows run
/// in several blocks of `k`. Set so that the 3x3 convolutions on 7x7 and 13x13 planes
/// measured take the channel lanes (1.07-1.18x faster, BENCHMARKS.md).
const UNROLLED_SHARE: f64 = 0.75;

/// The share of a pointwise product's panels below which it runs in the channel lanes:
/// on 7x7 planes (49 positions: one full panel and one of a single column, a share of 0.51)
/// the lanes measured 1.02-1.14x faster and on 5x5 as fast, on 8x8 to 20x20 (0.67-0.93)
/// 1.04-1.11x slower, the copy of the image and the transposed stores outweighing the idle
/// lanes (BENCHMARKS.md).
const POINTWISE_ROW_SHARE: f64 = 0.6;

/// The least share of the channel lanes' panels of 48 filters that the filters fill for a
/// pointwise product to take them: 160 filters (0.83) ran 1.15x slower there on a 7x7
/// plane, 320 to 2048 (0.95-1.0) 1.02-1.14x faster.
const POINTWISE_PANEL_SHARE: f64 = 0.9;

/// Blocks of output positions per thread when the (task, panel) pairs are fewer than two a
/// thread.
const BLOCKS_PER_THREAD: usize = 2;

/// Whether convolution `g` (on an AVX-512 host: `avx512`) runs with its output channels in
/// the lanes: a window read in place from the padded image (no window covering the whole
/// image, every tap inside its stride phase; a 1x1 window at unit strides only where its
/// plane wastes most of a panel, [`POINTWISE_ROW_SHARE`]), and a larger share
/// of useful lanes than the row-wise tiles': the filters of a group over whole vectors and
/// the plane over tiles of eight positions (less the transposed stores), against each
/// output row over whole vectors (or over its padded row, the wrapped positions dropped,
/// where the fields are read in place that way), or [`UNROLLED_SHARE`] where they are
/// unrolled.
pub(super) fn takes_channel_lanes(g: &Geometry, conv: &Convolution, avx512: bool) -> bool {
    let mg = g.m / g.groups.max(1);
    let (plane, k) = (g.oh * g.ow, depth(g));
    if !avx512 || mg < LANES || plane == 0 || k == 0 {
        return false;
    }
    let share = |used: usize, of: usize| used as f64 / of.max(1) as f64;
    if g.covers_images(conv) || g.phase_extents(conv).is_none() {
        return false;
    }
    if is_pointwise(g, conv) {
        // The image is its own fields, read in place as one run of the plane in panels of
        // NR positions: the lanes only where that wastes most of a panel.
        let rows = share(plane, plane.next_multiple_of(PANEL_COLUMNS));
        let panels = share(mg, mg.next_multiple_of(PANEL_COLUMNS));
        return rows < POINTWISE_ROW_SHARE && panels >= POINTWISE_PANEL_SHARE;
    }
    let lanes = share(mg, mg.next_multiple_of(LANES))
        * share(plane, plane.next_multiple_of(POSITIONS))
        * share(k, k + TRANSPOSE_STEPS);
    let rows = share(g.ow, g.ow.next_multiple_of(LANES));
    let row_wise = match g.phases(conv) {
        Some((_, wq)) => rows.max(share(g.ow, wq)),
        None => UNROLLED_SHARE,
    };
    lanes > row_wise
}

/// The filters `f` (`[M, C/g, kH, kW]` or 1-D, `f32`, shape `sf`) of a convolution of data
/// of shape `sx` packed for the channel lanes (each group's `[C/g · kH · kW, M/g]`, node
/// input 1), where [`takes_channel_lanes`] says so.
pub(super) fn pack(
    f: &[f32],
    sx: &Shape,
    sf: &Shape,
    conv: &Convolution,
    avx512: bool,
) -> Option<PackedWeights> {
    let (g, conv) = geometry_of(sx, sf, conv)?;
    if !takes_channel_lanes(&g, &conv, avx512) {
        return None;
    }
    PackedWeights::pack_transposed(f, 1, (g.groups, g.m / g.groups, depth(&g)))
}

/// Whether `w` holds the channel-lane filters of `g`.
pub(super) fn holds(w: &PackedWeights, g: &Geometry) -> bool {
    w.side() == Side::Right && w.extents() == (g.groups, depth(g), g.m / g.groups)
}

/// One item of work: task `k`'s panel `panel`, output positions `positions`, and the
/// output it writes: the panel's whole planes in one slice, or a piece of each plane.
struct Item<'a> {
    task: usize,
    panel: usize,
    positions: std::ops::Range<usize>,
    out: Region<'a>,
}

enum Region<'a> {
    Planes(&'a mut [f32]),
    Pieces(Vec<&'a mut [f32]>),
}

/// Runs `d` (`f32`) with the channel-lane filters `w` into `y` (`[N, M, oH, oW]`), the
/// epilogue on each finished block (a panel's whole planes, or a block of positions of each
/// of its planes); `false`, writing nothing, where it does not run (the host lacks
/// AVX-512F, the filters do not fit, no phases): the caller then takes another path.
pub(super) fn convolve(
    d: &Dense<'_, f32>,
    w: &PackedWeights,
    parallel: &Parallel,
    y: &mut [f32],
    epilogue: Option<Epilogue<'_>>,
) -> bool {
    let g = d.g;
    let (mg, plane, tasks) = (d.mg(), d.plane(), d.tasks());
    let Some((hq, wq)) = g.phase_extents(d.conv) else {
        return false;
    };
    if !holds(w, g) || y.len() != tasks * mg * plane {
        return false;
    }
    let imp = Implicit {
        hq,
        wq,
        rows: field_offsets(g, d.conv, (hq, wq)),
    };
    // Each output position's window: where its first tap lies in a task's phases.
    let bases: Vec<usize> = (0..plane).map(|i| i / g.ow * wq + i % g.ow).collect();
    let team = parallel.team(tasks * mg * plane * depth(g));
    let threads = team.map_or(1, |t| t.threads());
    let panels = mg.div_ceil(PANEL_COLUMNS);
    let blocks = match team {
        Some(_) if tasks * panels < 2 * threads => {
            (BLOCKS_PER_THREAD * threads).div_ceil(tasks * panels)
        }
        _ => 1,
    };
    let block = plane
        .div_ceil(blocks)
        .next_multiple_of(POSITIONS)
        .min(plane);
    let items = items(y, (mg, plane, block));
    // A pointwise image is its own padded image: read in place (a tile reads the positions
    // of its own rows only, none past the plane).
    let in_place = is_pointwise(g, d.conv);
    let per_task = if in_place { 0 } else { d.padded_len(&imp) };
    with_scratch(tasks * per_task, |padded: &mut [f32]| {
        for (k, out) in padded.chunks_mut(per_task.max(1)).enumerate() {
            d.padded(k, &imp, out, team);
        }
        let image_of = |task: usize| match in_place {
            true => d.task_image(task),
            false => &padded[task * per_task..(task + 1) * per_task],
        };
        let ran = std::sync::atomic::AtomicBool::new(true);
        let run = |item: Item<'_>| {
            let Item {
                task,
                panel,
                positions,
                out,
            } = item;
            let image = image_of(task);
            let (grp, at) = (task % g.groups, (panel, positions.clone()));
            let first = (task * mg + panel * PANEL_COLUMNS) * plane;
            let done = match out {
                Region::Planes(out) => {
                    let mut planes: Vec<&mut [f32]> = out.chunks_mut(plane).collect();
                    let out_planes = ChannelOut {
                        planes: &mut planes,
                        first: 0,
                    };
                    let done = product(out_planes, (image, &bases, &imp), (w, grp), at);
                    if let (true, Some(e)) = (done, &epilogue) {
                        e.run(first, out);
                    }
                    done
                }
                Region::Pieces(mut pieces) => {
                    let out_pieces = ChannelOut {
                        planes: &mut pieces,
                        first: positions.start,
                    };
                    let done = product(out_pieces, (image, &bases, &imp), (w, grp), at);
                    if let (true, Some(e)) = (done, &epilogue) {
                        for (c, piece) in pieces.iter().enumerate() {
                            e.run(first + c * plane + positions.start, piece);
                        }
                    }
                    done
                }
            };
            if !done {
                ran.store(false, std::sync::atomic::Ordering::Relaxed);
            }
        };
        match team {
            Some(team) => for_each(team, items.into_iter(), run),
            None => items.into_iter().for_each(run),
        }
        ran.into_inner()
    })
}

/// [`packed::channel_product`] of panel `panel` of group `grp`'s filters over `positions`
/// of the task image `image`.
fn product(
    out: ChannelOut<'_, '_>,
    (image, bases, imp): (&[f32], &[usize], &Implicit),
    (w, grp): (&PackedWeights, usize),
    (panel, positions): (usize, std::ops::Range<usize>),
) -> bool {
    let operands = (image, bases, &imp.rows[..]);
    packed::channel_product(out, operands, (w, grp, panel), positions)
}

/// Every (task, panel, block of `block` positions) of `y` (`[tasks, mg, plane]`), with the
/// output it writes: whole planes where a block is the whole plane.
fn items(y: &mut [f32], (mg, plane, block): (usize, usize, usize)) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    for (task, out) in y.chunks_mut((mg * plane).max(1)).enumerate() {
        for (panel, out) in out.chunks_mut((PANEL_COLUMNS * plane).max(1)).enumerate() {
            if block >= plane {
                items.push(Item {
                    task,
                    panel,
                    positions: 0..plane,
                    out: Region::Planes(out),
                });
                continue;
            }
            let first = items.len();
            for channel in out.chunks_mut(plane.max(1)) {
                for (b, piece) in channel.chunks_mut(block).enumerate() {
                    if first + b == items.len() {
                        let start = b * block;
                        items.push(Item {
                            task,
                            panel,
                            positions: start..(start + block).min(plane),
                            out: Region::Pieces(Vec::new()),
                        });
                    }
                    if let Region::Pieces(pieces) = &mut items[first + b].out {
                        pieces.push(piece);
                    }
                }
            }
        }
    }
    items
}

#[cfg(test)]
mod tests;
