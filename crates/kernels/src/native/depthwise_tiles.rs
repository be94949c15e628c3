//! The blocked depthwise loop's `f32` tiles where the host has vector registers for them:
//! output rows summed a block of columns at a time in registers over every tap, in window
//! order (one fused multiply-add per tap: half the instructions of a multiply and an add,
//! one rounding fewer than the reference per tap). This module walks the rows and picks the
//! tiles: 16-lane AVX-512 ones (`super::depthwise_avx512`, and `super::depthwise_shift` for
//! unit strides and 3- or 5-wide windows), else 8-lane AVX2 ones
//! (`super::depthwise_avx2`). Output rows whose windows lie wholly inside the input run
//! together, two at a time (four in the shifted tiles, whose shifts then serve four rows),
//! so a row of four blocks keeps eight or more independent chains of sums in flight.

use std::ops::Range;

use graphlift_ir::Convolution;

use super::conv_geometry::Geometry;
use super::depthwise::{live_taps, padded_row};
use super::depthwise_shift::RowsAt;
use super::lanes::FloatTiles;
#[cfg(target_arch = "x86_64")]
use super::{depthwise_avx2, depthwise_avx512, depthwise_shift};

/// The taps every output row reads inside the input, as (where the tap's run starts in the
/// padded rows, the tap's index in the window), in window order: the same for every channel
/// of a depthwise convolution, so made once per block of channels.
pub(super) struct RowTaps {
    entries: Vec<(usize, usize)>,
    /// Per output row: its entries, whether its window is whole (every window row inside
    /// the input), and the furthest of its runs' starts.
    rows: Vec<(Range<usize>, bool, usize)>,
}

impl RowTaps {
    /// The rows' taps of `conv` over geometry `g`, the runs of a filter row's taps starting
    /// at `starts` in a padded row.
    pub(super) fn of(g: &Geometry, conv: &Convolution, starts: &[usize]) -> RowTaps {
        let row_len = padded_row(g, conv).1;
        let indices: Vec<usize> = (0..g.kh * g.kw).collect();
        let (mut entries, mut rows, mut live) = (Vec::new(), Vec::new(), Vec::new());
        for oy in 0..g.oh {
            let whole = live_taps(oy, (g, conv), (&indices, starts, row_len), &mut live);
            let last = live.iter().map(|&(at, _)| at).max().unwrap_or(0);
            rows.push((entries.len()..entries.len() + live.len(), whole, last));
            entries.extend_from_slice(&live);
        }
        RowTaps { entries, rows }
    }
}

/// Whether every output row of `conv` over `g` runs on the shifted runs' tiles
/// (`super::depthwise_shift`) on `tiles`: AVX-512, unit strides and dilations, windows 3 or 5
/// wide. Those read the input plane itself ([`Input::Plane`]).
pub(super) fn shifts(tiles: FloatTiles, g: &Geometry, conv: &Convolution) -> bool {
    let w = &conv.window;
    tiles == FloatTiles::Avx512
        && w.strides.iter().chain(&w.dilations).all(|&v| v == 1)
        && matches!(g.kw, 3 | 5)
}

/// The input rows [`rows`] reads.
#[derive(Clone, Copy)]
pub(super) enum Input<'a> {
    /// The padded phases of the input rows, as `super::depthwise` lays them out.
    Padded(&'a [f32]),
    /// The input plane itself (`[H, W]`), where [`shifts`] holds: its tiles read the
    /// columns left and right of a row as padding.
    Plane(&'a [f32]),
}

/// Every output row of one channel (`out`, `[oH, oW]`) from its input rows (`input`) and its
/// taps (`taps`, `[kH, kW]`, read where `row_taps` says), on `tiles`. Returns `false` where
/// the host does not run `tiles`, where the input is the plane but [`shifts`] does not hold,
/// or when a slice is shorter than the geometry says (having written some rows or none:
/// the caller then computes every row).
pub(super) fn rows(
    tiles: FloatTiles,
    input: Input<'_>,
    (g, conv): (&Geometry, &Convolution),
    (taps, row_taps): (&[f32], &RowTaps),
    out: &mut [f32],
) -> bool {
    let shifts = shifts(tiles, g, conv);
    if !tiles.runs()
        || out.len() < g.oh * g.ow
        || taps.len() < g.kh * g.kw
        || row_taps.rows.len() < g.oh
        || matches!(input, Input::Plane(_)) && !shifts
    {
        return false;
    }
    let row_len = padded_row(g, conv).1;
    let step = conv.window.strides[0] * row_len;
    // The rows read (`data`), and where the shifted tiles' rows lie in them: every padded
    // row, or every input row with its padding left of it.
    let (data, at) = match input {
        Input::Padded(p) => (
            p,
            RowsAt {
                stride: row_len,
                left: 0,
                width: row_len,
            },
        ),
        Input::Plane(p) => (
            p,
            RowsAt {
                stride: g.w,
                left: conv.window.pads_begin[1],
                width: g.w,
            },
        ),
    };
    let mut oy = 0;
    while oy < g.oh {
        let (span, whole, last) = row_taps.rows[oy].clone();
        let live = &row_taps.entries[span];
        // Rows with whole windows read the same taps `step` elements apart: the shifted
        // runs' tiles take up to four such rows at once, the others two.
        let most = if shifts { 4 } else { 2 };
        let rows = if whole {
            (oy..g.oh.min(oy + most))
                .take_while(|&y| row_taps.rows[y].1)
                .count()
        } else {
            1
        };
        if live.is_empty() {
            out[oy * g.ow..(oy + 1) * g.ow].fill(0.0);
            oy += 1;
            continue;
        }
        let dst = &mut out[oy * g.ow..(oy + rows) * g.ow];
        // Unit strides and dilations, windows 3 or 5 wide: the rows' runs shifted in
        // registers (`super::depthwise_shift`). The window rows inside the input are
        // consecutive, `kh` of them from `ky0` (all of them for several rows), read from the
        // first live tap's row on (its run starts at column 0 of a padded row, so that row
        // is `live[0].0 / row_len`). (Worked out only there: their divisions showed in the
        // profile of two-row planes.)
        let (first, ky0, kh) = if shifts {
            (
                live[0].0 / row_len * at.stride,
                live[0].1 / g.kw,
                live.len() / g.kw,
            )
        } else {
            (0, 0, 0)
        };
        let shift = shifts
            && first + (kh + rows - 1) * at.stride <= data.len()
            && (ky0 + kh) * g.kw <= taps.len();
        #[cfg(target_arch = "x86_64")]
        if shift {
            let (p, o, t) = (
                data[first..].as_ptr(),
                dst.as_mut_ptr(),
                taps[ky0 * g.kw..].as_ptr(),
            );
            let at = (at, kh);
            // SAFETY: the host has AVX-512F (`tiles`); the `kh + rows − 1` rows of
            // `at.stride` (each of `at.width ≤ at.stride` elements) from `first` lie inside
            // `data` and window rows `ky0..ky0 + kh` inside `taps` (checked just above);
            // `dst` holds `rows` output rows.
            unsafe {
                match (rows, g.kw) {
                    (4, 3) => depthwise_shift::row_tiles::<4, 3>(p, at, t, g.ow, o),
                    (4, _) => depthwise_shift::row_tiles::<4, 5>(p, at, t, g.ow, o),
                    (3, 3) => depthwise_shift::row_tiles::<3, 3>(p, at, t, g.ow, o),
                    (3, _) => depthwise_shift::row_tiles::<3, 5>(p, at, t, g.ow, o),
                    (2, 3) => depthwise_shift::row_tiles::<2, 3>(p, at, t, g.ow, o),
                    (2, _) => depthwise_shift::row_tiles::<2, 5>(p, at, t, g.ow, o),
                    (_, 3) => depthwise_shift::row_tiles::<1, 3>(p, at, t, g.ow, o),
                    _ => depthwise_shift::row_tiles::<1, 5>(p, at, t, g.ow, o),
                }
            }
            oy += rows;
            continue;
        }
        // The other tiles read padded rows only. A row outside the slice leaves the whole
        // plane to the portable loop.
        if matches!(input, Input::Plane(_)) || last + (rows - 1) * step + g.ow > data.len() {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        {
            let (p, o) = (data.as_ptr(), dst.as_mut_ptr());
            // SAFETY: the host has the `tiles`' features (`FloatTiles::host`). Every tap run
            // read is `data + at + r · step + x` for `x < oW`, `r < rows` and the row's
            // taps `live` (for two rows with whole windows, the second row's taps are
            // exactly the first's `step` further on), so it lies at or before `data +
            // last + (rows − 1) · step + oW − 1`, checked inside `data` just above; each
            // tap index is below `kH · kW ≤ taps.len()` (checked above); every output
            // written is a column `< oW` of the `rows` rows of `dst`.
            unsafe {
                match (tiles, rows) {
                    (FloatTiles::Avx512, 2) => {
                        depthwise_avx512::row_tiles::<2>(p, (live, taps), step, g.ow, o)
                    }
                    (FloatTiles::Avx512, _) => {
                        depthwise_avx512::row_tiles::<1>(p, (live, taps), step, g.ow, o)
                    }
                    (FloatTiles::Avx2, 2) => {
                        depthwise_avx2::row_tiles::<2>(p, (live, taps), step, g.ow, o)
                    }
                    (FloatTiles::Avx2, _) => {
                        depthwise_avx2::row_tiles::<1>(p, (live, taps), step, g.ow, o)
                    }
                }
            }
        }
        oy += rows;
    }
    true
}
