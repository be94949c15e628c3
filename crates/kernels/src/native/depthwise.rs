//! Depthwise 2-D convolution of one channel (`groups == C == M`, MobileNet's and PP-OCR's
//! 3x3 and 5x5 layers): a direct loop, since its products are too thin for a GEMM.
//! Output rows of at most half a vector run with the channels in the lanes instead
//! ([`super::depthwise_lanes`]).

use graphlift_ir::Convolution;
use multiversion::multiversion;

use super::conv_geometry::{column_runs, Geometry};
use super::depthwise_lanes;
use super::depthwise_tiles::{self, Input, RowTaps};
use super::lanes::FloatTiles;
use super::packed::Element;
use super::phases::PhaseSplit;
use super::scratch::{with_scratch, Scratch};

/// Output columns summed at once by [`depthwise_blocked`]: the sums stay in registers
/// over every tap of the window (four zmm registers of `f32`).
pub(super) const BLOCK: usize = 16;

/// The fewest window taps [`depthwise_blocked`] runs in portable code (3x3): with 1x3
/// windows (DeepFilterNet) the padded copy cost what the blocks saved.
const MIN_TAPS: usize = 9;

/// The fewest window taps [`depthwise_blocked`] runs on the vector tiles: on AVX2 they
/// halved DeepFilterNet's 1x3 layers, while its 1x1 ones (a scale per channel) ran 1.5x
/// slower blocked than as runs (BENCHMARKS.md).
const MIN_TILE_TAPS: usize = 3;

/// The most elements of a padded plane [`depthwise_blocked`] builds in portable code (32
/// KiB of `f32`, in L1 with its output rows): there the PP-OCR classifier's planes (up to 24
/// x 96) ran 6 % faster blocked, PP-PicoDet's layout model's (up to 160 x 160) 15 % slower.
/// The vector tiles (`super::depthwise_tiles`, AVX-512 or AVX2) are faster on planes of
/// every size (a 5x5 window over 160 x 160: 3x on AVX-512).
const PADDED_BUDGET: usize = 8192;

/// How one depthwise convolution runs, decided once per call of the convolution and shared
/// by its blocks of channels: whether it runs with the channels in the lanes
/// ([`depthwise_lanes`], on AVX-512 tiles for output rows of at most half a vector), whether
/// it runs [`depthwise_blocked`], and that loop's tap layout (the same for every channel).
///
/// Windows of at least [`MIN_TILE_TAPS`] taps run [`depthwise_blocked`] where its vector
/// tiles run; in portable code, windows of at least [`MIN_TAPS`] taps over output rows of
/// at least one block (four, past 3x3 windows) whose padded plane fits [`PADDED_BUDGET`].
/// Other shapes run [`depthwise_runs`], and so does a channel with a tap that is infinite
/// or NaN: that loop skips the padding instead of multiplying it (`inf · 0` would be NaN
/// where the window reads padding only).
pub(super) struct Depthwise {
    /// Whether `f32` blocks run with the channels in the lanes (a block with an infinite or
    /// NaN tap still takes the loops below).
    lanes: bool,
    /// The blocked loop's layout, `None` where the shape runs [`depthwise_runs`].
    blocked: Option<Blocked>,
}

/// The layout of [`depthwise_blocked`]: where a filter row's taps start in a padded row, the
/// taps each output row reads, and the vector tiles that sum them (`None`: portable code).
struct Blocked {
    starts: Vec<usize>,
    row_taps: RowTaps,
    tiles: Option<FloatTiles>,
}

impl Depthwise {
    /// The plan for convolution `conv` over geometry `g` (`groups == C`, one filter each)
    /// on elements of type `T`, on the widest tiles the host runs.
    pub(super) fn new<T: Element>(g: &Geometry, conv: &Convolution) -> Depthwise {
        let tiles = FloatTiles::host().filter(|_| T::as_f32(&[]).is_some());
        Depthwise::with_tiles(g, conv, tiles)
    }

    /// The plan on `tiles` (`f32` only; `None`: portable code), which the host must run.
    fn with_tiles(g: &Geometry, conv: &Convolution, tiles: Option<FloatTiles>) -> Depthwise {
        let taps_n = g.kh * g.kw;
        let padded = g.h * padded_row(g, conv).1;
        // The vector tiles take rows of any width (a masked block), two at a time, from a
        // padded plane of any size. In portable code a block's sum is one chain of `taps_n`
        // additions: past 3x3 windows, only rows of four blocks (four chains at a time)
        // hide its latency.
        let chains = taps_n <= MIN_TAPS || g.ow >= 4 * BLOCK;
        let portable = g.ow >= BLOCK && chains && padded <= PADDED_BUDGET;
        let on_tiles = tiles.is_some() && taps_n >= MIN_TILE_TAPS;
        let blocked = on_tiles || (taps_n >= MIN_TAPS && portable);
        let blocked = blocked.then(|| {
            let starts = tap_starts(g, conv);
            let row_taps = RowTaps::of(g, conv, &starts);
            Blocked {
                starts,
                row_taps,
                tiles,
            }
        });
        let lanes = tiles == Some(FloatTiles::Avx512) && depthwise_lanes::takes_lanes(g);
        Depthwise { lanes, blocked }
    }

    /// Each output channel of the block `out` (`[channels, oH, oW]`) = the sum over window
    /// positions of its filter taps times the shifted input plane of its channel
    /// (`planes`, `[channels, H, W]`), accumulated in the element type in window order (row
    /// by row, then column by column; a fused multiply-add on the vector tiles). Channel
    /// `i` of the block is group `(first + i) mod groups`, whose taps are `filters[group]`
    /// (`filters`, `[groups, kH, kW]`). `g` and `conv` are the ones the plan was made for.
    pub(super) fn run<T>(
        &self,
        planes: &[T],
        (filters, first): (&[T], usize),
        g: &Geometry,
        conv: &Convolution,
        out: &mut [T],
    ) where
        T: Element + Scratch + PartialEq + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
    {
        let (hw, ohw, taps_n) = (g.h * g.w, g.oh * g.ow, g.kh * g.kw);
        if hw == 0 || ohw == 0 || taps_n == 0 {
            out.fill(T::default());
            return;
        }
        let taps = |i: usize| {
            let grp = (first + i) % g.groups.max(1);
            filters
                .get(grp * taps_n..(grp + 1) * taps_n)
                .unwrap_or_default()
        };
        if let (true, Some(p), Some(f), Some(o)) = (
            self.lanes,
            T::as_f32(planes),
            T::as_f32(filters),
            T::as_f32_mut(out),
        ) {
            if depthwise_lanes::run(p, (f, first), g, conv, o) {
                return;
            }
        }
        match &self.blocked {
            Some(layout) => depthwise_blocked(planes, &taps, layout, g, conv, out),
            None => {
                for (i, (plane, out)) in planes.chunks(hw).zip(out.chunks_mut(ohw)).enumerate() {
                    depthwise_runs(plane, taps(i), g, conv, out);
                }
            }
        }
    }
}

/// The length of one column phase of a padded input row of [`depthwise_blocked`] (every
/// output column plus the window's reach, in strides), and of the row (its `sw` phases).
pub(super) fn padded_row(g: &Geometry, conv: &Convolution) -> (usize, usize) {
    let (sw, dw) = (conv.window.strides[1], conv.window.dilations[1]);
    let phase_len = g.ow + (g.kw.saturating_sub(1) * dw) / sw;
    (phase_len, sw * phase_len)
}

/// [`depthwise`] by blocks of [`BLOCK`] output columns whose sums stay in registers over all
/// taps (one load and one multiply-add per tap and column, one store per column). Every
/// input row is first zero-padded as far as any tap reads and split into its `sw` column
/// phases (phase `p` holds padded columns `p, p + sw, ...`): tap `kx` of output column `ox`
/// reads padded column `ox · sw + kx · dw`, which is phase `(kx · dw) mod sw` at
/// `ox + (kx · dw) div sw`, so each tap is one contiguous run of every output row. The
/// AVX-512 shifted tiles (`depthwise_tiles::shifts`) read the input rows themselves and
/// take no padded copy.
fn depthwise_blocked<'f, T>(
    planes: &[T],
    taps: &dyn Fn(usize) -> &'f [T],
    layout: &Blocked,
    g: &Geometry,
    conv: &Convolution,
    out: &mut [T],
) where
    T: Element + Scratch + PartialEq + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let win = &conv.window;
    let (sw, pw) = (win.strides[1], win.pads_begin[1]);
    let (phase_len, row_len) = padded_row(g, conv);
    let (hw, ohw) = (g.h * g.w, g.oh * g.ow);
    let mut live = Vec::with_capacity(g.kh * g.kw);
    let zero = T::default();
    // A padded row's padding is the same columns for every row of every plane: the buffer
    // is zeroed once, then each row copies in its input columns only, at unit column stride
    // in one run (small planes, PP-OCR's two-row ones and a stride-2 layer's 20 x 20, spent
    // a fifth to two fifths of their time padding row by row).
    let unit = sw == 1 && pw + g.w <= row_len;
    let split = PhaseSplit::new(g.w, (pw, sw), (phase_len, phase_len));
    let direct = layout
        .tiles
        .is_some_and(|tiles| depthwise_tiles::shifts(tiles, g, conv));
    with_scratch(g.h * row_len, |padded| {
        // Zeroed when a plane is first padded (planes the shifted tiles take are not).
        let mut zeroed = false;
        for (i, (plane, out)) in planes.chunks(hw).zip(out.chunks_mut(ohw)).enumerate() {
            let taps = taps(i);
            // Folded without a short cut, so the check vectorizes.
            if !taps.iter().fold(true, |all, &t| all & (t * zero == zero)) {
                depthwise_runs(plane, taps, g, conv, out);
                continue;
            }
            // The shifted tiles read the plane itself, its padding as masked lanes.
            if let (true, Some(tiles), (Some(p), Some(t), Some(o))) = (
                direct,
                layout.tiles,
                (T::as_f32(plane), T::as_f32(taps), T::as_f32_mut(out)),
            ) {
                if depthwise_tiles::rows(
                    tiles,
                    Input::Plane(p),
                    (g, conv),
                    (t, &layout.row_taps),
                    o,
                ) {
                    continue;
                }
            }
            if !zeroed {
                padded.fill(zero);
                zeroed = true;
            }
            for (src, row) in plane
                .chunks_exact(g.w)
                .zip(padded.chunks_exact_mut(row_len))
            {
                if unit {
                    row[pw..pw + g.w].copy_from_slice(src);
                    continue;
                }
                match (T::as_f32(src), T::as_f32_mut(row)) {
                    (Some(src), Some(row)) => split.split_f32(src, row),
                    _ => split.split(src, row),
                }
            }
            blocked_rows(padded, (taps, layout), (g, conv), out, &mut live);
        }
    });
}

/// Where the runs of the taps of one row of a filter start in a padded input row (its
/// column phases: [`depthwise_blocked`]), in column order.
fn tap_starts(g: &Geometry, conv: &Convolution) -> Vec<usize> {
    let (sw, dw) = (conv.window.strides[1], conv.window.dilations[1]);
    let phase_len = padded_row(g, conv).0;
    (0..g.kw)
        .map(|kx| {
            let off = kx * dw;
            (off % sw) * phase_len + off / sw
        })
        .collect()
}

/// Writes into `live` the taps of output row `oy` whose window rows lie inside the input,
/// as (where the tap's run starts in the padded rows of `row_len` elements, the tap), in
/// window order; returns whether that is the whole window.
pub(super) fn live_taps<T: Copy>(
    oy: usize,
    (g, conv): (&Geometry, &Convolution),
    (taps, starts, row_len): (&[T], &[usize], usize),
    live: &mut Vec<(usize, T)>,
) -> bool {
    let win = &conv.window;
    let (sh, dh, ph) = (win.strides[0], win.dilations[0], win.pads_begin[0]);
    live.clear();
    for ky in 0..g.kh {
        // Rows of the padding add nothing.
        let Some(iy) = (oy * sh + ky * dh).checked_sub(ph).filter(|&y| y < g.h) else {
            continue;
        };
        for (kx, &start) in starts.iter().enumerate() {
            live.push((iy * row_len + start, taps[ky * g.kw + kx]));
        }
    }
    live.len() == g.kh * g.kw
}

/// The output rows of [`depthwise_blocked`] from the padded phases of the input rows: on the
/// vector tiles for `f32` where the host has them, else row by row in portable code.
fn blocked_rows<T>(
    padded: &[T],
    (taps, layout): (&[T], &Blocked),
    (g, conv): (&Geometry, &Convolution),
    out: &mut [T],
    live: &mut Vec<(usize, T)>,
) where
    T: Element + Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let f32s = (T::as_f32(padded), T::as_f32(taps), T::as_f32_mut(out));
    if let (Some(tiles), (Some(p), Some(t), Some(o))) = (layout.tiles, f32s) {
        if depthwise_tiles::rows(tiles, Input::Padded(p), (g, conv), (t, &layout.row_taps), o) {
            return;
        }
    }
    portable_rows(padded, (g, conv), (taps, &layout.starts), out, live);
}

/// [`blocked_rows`] in portable code: four blocks of a row at a time (four independent
/// chains of additions), then single blocks and the tail.
#[multiversion(targets = "simd")]
fn portable_rows<T>(
    padded: &[T],
    (g, conv): (&Geometry, &Convolution),
    (taps, starts): (&[T], &[usize]),
    out: &mut [T],
    live: &mut Vec<(usize, T)>,
) where
    T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let row_len = padded_row(g, conv).1;
    for (oy, dst) in out.chunks_exact_mut(g.ow).enumerate().take(g.oh) {
        live_taps(oy, (g, conv), (taps, starts, row_len), live);
        // Each column's sum is still taken tap by tap, in window order.
        let mut x0 = 0;
        while x0 + 4 * BLOCK <= g.ow {
            let mut a = [[T::default(); BLOCK]; 4];
            let [a0, a1, a2, a3] = &mut a;
            for &(at, t) in live.iter() {
                let run = &padded[at + x0..at + x0 + 4 * BLOCK];
                for l in 0..BLOCK {
                    a0[l] = a0[l] + t * run[l];
                    a1[l] = a1[l] + t * run[BLOCK + l];
                    a2[l] = a2[l] + t * run[2 * BLOCK + l];
                    a3[l] = a3[l] + t * run[3 * BLOCK + l];
                }
            }
            for (q, acc) in a.iter().enumerate() {
                dst[x0 + q * BLOCK..x0 + (q + 1) * BLOCK].copy_from_slice(acc);
            }
            x0 += 4 * BLOCK;
        }
        let mut blocks = dst[x0..].chunks_exact_mut(BLOCK);
        for block in &mut blocks {
            let mut acc = [T::default(); BLOCK];
            for &(at, t) in live.iter() {
                let run = &padded[at + x0..at + x0 + BLOCK];
                for (a, &v) in acc.iter_mut().zip(run) {
                    *a = *a + t * v;
                }
            }
            block.copy_from_slice(&acc);
            x0 += BLOCK;
        }
        let tail = blocks.into_remainder();
        let n = tail.len();
        if n > 0 {
            let mut acc = [T::default(); BLOCK];
            for &(at, t) in live.iter() {
                let run = &padded[at + x0..at + x0 + n];
                for (a, &v) in acc[..n].iter_mut().zip(run) {
                    *a = *a + t * v;
                }
            }
            tail.copy_from_slice(&acc[..n]);
        }
    }
}

/// [`depthwise`] one contiguous run of valid columns at a time: window positions in the
/// padding are skipped, not multiplied by zero. Output rows are finished one by one (they
/// stay in L1); with a column stride `s > 1` each input row is first split into its `s`
/// phases (columns `p, p + s, ...`), so every tap's run reads contiguous memory.
#[multiversion(targets = "simd")]
fn depthwise_runs<T>(plane: &[T], taps: &[T], g: &Geometry, conv: &Convolution, out: &mut [T])
where
    T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let win = &conv.window;
    let (sh, sw) = (win.strides[0], win.strides[1]);
    let (dh, ph) = (win.dilations[0], win.pads_begin[0]);
    let runs = column_runs(g, win);
    // The phases of one input row: phase p (columns p, p + s, ...) at `p * phase_len`.
    let phase_len = g.w.div_ceil(sw);
    let mut phases = vec![T::default(); if sw > 1 { sw * phase_len } else { 0 }];
    out.fill(T::default());
    for oy in 0..g.oh {
        let dst_row = &mut out[oy * g.ow..(oy + 1) * g.ow];
        for ky in 0..g.kh {
            let Some(iy) = (oy * sh + ky * dh).checked_sub(ph).filter(|&y| y < g.h) else {
                continue;
            };
            let src = &plane[iy * g.w..(iy + 1) * g.w];
            if sw > 1 {
                for p in 0..sw.min(g.w) {
                    let dst = &mut phases[p * phase_len..];
                    for (d, &v) in dst.iter_mut().zip(src[p..].iter().step_by(sw)) {
                        *d = v;
                    }
                }
            }
            for (kx, (valid, first)) in runs.iter().enumerate() {
                if valid.is_empty() {
                    continue;
                }
                let tap = taps[ky * g.kw + kx];
                let run = if sw > 1 {
                    let at = (first % sw) * phase_len + first / sw;
                    &phases[at..at + valid.len()]
                } else {
                    &src[*first..first + valid.len()]
                };
                for (d, &v) in dst_row[valid.clone()].iter_mut().zip(run) {
                    *d = *d + tap * v;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphlift_ir::{Shape, TensorData, Window};

    /// A `k x k` window with these strides, dilations and pads (begin, then end) over
    /// `groups` groups.
    fn square(
        k: usize,
        (stride, dilation, pads): ([usize; 2], [usize; 2], [usize; 4]),
        groups: usize,
    ) -> Convolution {
        window([k, k], (stride, dilation, pads), groups)
    }

    /// A `kh x kw` window, as [`square`].
    fn window(
        [kh, kw]: [usize; 2],
        (stride, dilation, pads): ([usize; 2], [usize; 2], [usize; 4]),
        groups: usize,
    ) -> Convolution {
        Convolution {
            window: Window {
                shape: vec![kh, kw],
                strides: stride.to_vec(),
                dilations: dilation.to_vec(),
                pads_begin: pads[..2].to_vec(),
                pads_end: pads[2..].to_vec(),
            },
            groups,
        }
    }

    /// `Depthwise::run` on one `[h, w]` channel against the reference convolution (`f64`
    /// sums), on every kind of tiles the host runs and in portable code.
    fn check(
        h: usize,
        w: usize,
        k: usize,
        stride: [usize; 2],
        dilation: [usize; 2],
        pads: [usize; 4],
        taps: &[f32],
    ) {
        check_window(h, w, [k, k], (stride, dilation, pads), taps);
    }

    /// [`check`] for a `kh x kw` window.
    fn check_window(
        h: usize,
        w: usize,
        [kh, kw]: [usize; 2],
        (stride, dilation, pads): ([usize; 2], [usize; 2], [usize; 4]),
        taps: &[f32],
    ) {
        let k = format!("{kh}x{kw}");
        let conv = window([kh, kw], (stride, dilation, pads), 1);
        let (sx, sf) = (Shape::new([1, 1, h, w]), Shape::new([1, 1, kh, kw]));
        let g = Geometry::of(&sx, &sf, &conv).unwrap();
        let plane: Vec<f32> = (0..h * w)
            .map(|i| ((i * 37 % 101) as f32) / 50.0 - 1.0)
            .collect();
        let want = graphlift_runtime::reference::convolution(
            &TensorData::F32(plane.clone()),
            &sx,
            &TensorData::F32(taps.to_vec()),
            &sf,
            &conv,
        )
        .unwrap();
        let TensorData::F32(want) = want else {
            panic!("f32")
        };
        for tiles in FloatTiles::on_host().into_iter().map(Some).chain([None]) {
            let mut out = vec![f32::NAN; g.oh * g.ow];
            let plan = Depthwise::with_tiles(&g, &conv, tiles);
            plan.run(&plane, (taps, 0), &g, &conv, &mut out);
            assert_eq!(out.len(), want.len());
            for (i, (a, b)) in out.iter().zip(&want).enumerate() {
                let close =
                    (a - b).abs() <= 1e-5 * (1.0 + b.abs()) || (a.is_nan() && b.is_nan()) || a == b;
                assert!(
                    close,
                    "{tiles:?} {h}x{w} k{k} s{stride:?} d{dilation:?} p{pads:?}: [{i}] {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn blocks_tails_strides_dilations_and_pads_agree_with_the_reference() {
        let taps3: Vec<f32> = (0..9).map(|i| i as f32 * 0.25 - 1.0).collect();
        let taps5: Vec<f32> = (0..25).map(|i| (i % 7) as f32 * 0.3 - 0.9).collect();
        // Output widths of several blocks and a tail, one block exactly (of either tile
        // width), under a block, and tiles of every count of blocks, whole and masked.
        for w in [5, 8, 16, 40, 97, 24, 56, 57, 63, 72, 89, 96] {
            check(6, w, 3, [1, 1], [1, 1], [1, 1, 1, 1], &taps3);
            check(7, w, 3, [2, 2], [1, 1], [1, 1, 0, 1], &taps3);
            check(9, w, 5, [1, 2], [2, 1], [2, 0, 1, 2], &taps5);
            check(4, w, 3, [1, 3], [1, 2], [0, 3, 0, 0], &taps3);
            // Unit strides (runs shifted in registers): whole and partial windows, tiles of
            // one to four rows, planes of two rows, asymmetric padding.
            check(9, w, 5, [1, 1], [1, 1], [2, 2, 2, 2], &taps5);
            check(7, w, 5, [1, 1], [1, 1], [2, 2, 2, 2], &taps5);
            check(12, w, 3, [1, 1], [1, 1], [1, 1, 1, 1], &taps3);
            check(2, w, 5, [1, 1], [1, 1], [2, 2, 2, 2], &taps5);
            check(5, w, 3, [1, 1], [1, 1], [0, 1, 2, 0], &taps3);
            // Windows one row high (DeepFilterNet's 1x3, frequency strides of 1 and 2, the
            // right edge padded) and one column wide.
            check_window(5, w, [1, 3], ([1, 2], [1, 1], [0, 1, 0, 1]), &taps3[..3]);
            check_window(5, w, [1, 3], ([1, 1], [1, 1], [0, 1, 0, 1]), &taps3[..3]);
            check_window(6, w, [3, 1], ([2, 1], [1, 1], [1, 0, 1, 0]), &taps3[..3]);
        }
    }

    /// The portable rows (`f64`, which the vector tiles do not take) give what the tiles
    /// give in `f32`, on shapes the portable loop blocks (rows of at least one block, 3x3
    /// windows) and on the ones it leaves to the run loop (narrow rows, 5x5 windows).
    #[test]
    fn portable_rows_and_run_loop_agree_with_the_tiles() {
        for (h, w, k) in [(6, 40, 3), (7, 97, 3), (9, 10, 5), (5, 40, 5)] {
            let p = k / 2;
            let conv = square(k, ([1, 1], [1, 1], [p, p, p, p]), 1);
            let g =
                Geometry::of(&Shape::new([1, 1, h, w]), &Shape::new([1, 1, k, k]), &conv).unwrap();
            let plane: Vec<f32> = (0..h * w)
                .map(|i| ((i * 37 % 101) as f32) / 50.0 - 1.0)
                .collect();
            let taps: Vec<f32> = (0..k * k).map(|i| (i % 7) as f32 * 0.3 - 0.9).collect();
            let mut want = vec![f32::NAN; g.oh * g.ow];
            Depthwise::new::<f32>(&g, &conv).run(&plane, (&taps, 0), &g, &conv, &mut want);
            let wide = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
            let mut got = vec![f64::NAN; g.oh * g.ow];
            let (plane, taps) = (wide(&plane), wide(&taps));
            Depthwise::new::<f64>(&g, &conv).run(&plane, (&taps, 0), &g, &conv, &mut got);
            for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                let b = f64::from(*b);
                assert!(
                    (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                    "{h}x{w} k{k}: [{i}] {a} vs {b}"
                );
            }
        }
    }

    /// A block of channels in one call: each channel `i` takes group `(first + i) mod
    /// groups`'s taps (wrapping past the last group, as a block spanning two images does),
    /// and one channel's infinite tap sends only that channel to the run loop; at unit and
    /// at column stride 2 (whose padded rows share their zeroed padding from plane to
    /// plane).
    #[test]
    fn a_block_of_channels_takes_each_channel_its_group() {
        let (h, w, groups, first, channels) = (6, 40, 3, 2, 4);
        for stride in [[1, 1], [2, 2]] {
            let conv = square(3, (stride, [1, 1], [1, 1, 1, 1]), groups);
            let (sx, sf) = (Shape::new([1, groups, h, w]), Shape::new([groups, 1, 3, 3]));
            let g = Geometry::of(&sx, &sf, &conv).unwrap();
            let ohw = g.oh * g.ow;
            let planes: Vec<f32> = (0..channels * h * w)
                .map(|i| ((i * 29 % 97) as f32) / 40.0 - 1.0)
                .collect();
            let mut filters: Vec<f32> = (0..groups * 9)
                .map(|i| (i % 5) as f32 * 0.2 - 0.4)
                .collect();
            filters[9] = f32::INFINITY;
            let mut out = vec![f32::NAN; channels * ohw];
            Depthwise::new::<f32>(&g, &conv).run(&planes, (&filters, first), &g, &conv, &mut out);
            let one = Convolution {
                groups: 1,
                ..conv.clone()
            };
            let (s1, f1) = (Shape::new([1, 1, h, w]), Shape::new([1, 1, 3, 3]));
            for i in 0..channels {
                let grp = (first + i) % groups;
                let want = graphlift_runtime::reference::convolution(
                    &TensorData::F32(planes[i * h * w..(i + 1) * h * w].to_vec()),
                    &s1,
                    &TensorData::F32(filters[grp * 9..(grp + 1) * 9].to_vec()),
                    &f1,
                    &one,
                )
                .unwrap();
                let TensorData::F32(want) = want else {
                    panic!("f32")
                };
                assert_eq!(want.len(), ohw);
                for (a, b) in out[i * ohw..(i + 1) * ohw].iter().zip(&want) {
                    let close = (a - b).abs() <= 1e-5 * (1.0 + b.abs())
                        || (a.is_nan() && b.is_nan())
                        || a == b;
                    assert!(
                        close,
                        "stride {stride:?}, channel {i} (group {grp}): {a} vs {b}"
                    );
                }
            }
        }
    }

    /// An infinite tap is multiplied only by real input, never by the padding (the
    /// reference's window skips padding), so the outputs whose windows hold it only in the
    /// padding stay finite.
    #[test]
    fn a_non_finite_tap_skips_the_padding_as_the_reference_does() {
        let mut taps: Vec<f32> = (0..9).map(|i| i as f32 * 0.25 - 1.0).collect();
        taps[0] = f32::INFINITY;
        check(5, 20, 3, [1, 1], [1, 1], [1, 1, 1, 1], &taps);
        taps[0] = f32::NAN;
        check(5, 20, 3, [2, 1], [1, 1], [1, 1, 1, 1], &taps);
    }
}
