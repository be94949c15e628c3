//! Depthwise 2-D convolution on `f32` with sixteen channels in the AVX-512 lanes (the NCHWc
//! layout of oneDNN's and onnxruntime's depthwise kernels), for output rows of at most half
//! a vector: the row-wise tiles of [`super::depthwise`] leave most lanes of a 7-wide row
//! idle, while here every lane is a channel. Each group of sixteen
//! channels is transposed into a zero-padded `[Hp, Wp, 16]` block (in L1 or L2), every
//! output position sums its window's taps in window order with one fused multiply-add per
//! tap (as the row-wise tiles do), and the `[oH · oW, 16]` sums are transposed back into
//! the channels' planes.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{
    __m512, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_setzero_ps, _mm512_storeu_ps,
};

use graphlift_ir::Convolution;

use super::conv_geometry::Geometry;
use super::lanes::FloatTiles;
use super::scratch::with_scratch;
use super::transpose::transpose_into;

/// Channels of one group: the lanes of a zmm register of `f32`.
const LANES: usize = 16;

/// Output positions of a row summed at once: independent chains of multiply-adds that hide
/// the FMA latency.
const CHAINS: usize = 8;

/// The widest output rows that run in the lanes ([`takes_lanes`]): at most half a vector,
/// which the row-wise tiles leave more than half idle. Measured on MobileNetV2's layers
/// (BENCHMARKS.md): 7-wide rows ran 1.8-2.4x faster here, 14-wide ones 1.06-1.38x slower
/// (the two transposes cost more than the lanes 14 of 16 leave).
const MAX_WIDTH: usize = LANES / 2;

/// Whether depthwise convolution `g` runs here: an AVX-512 host, output rows of at most
/// [`MAX_WIDTH`], at least one group of channels.
pub(super) fn takes_lanes(g: &Geometry) -> bool {
    FloatTiles::Avx512.runs() && g.ow <= MAX_WIDTH && g.c >= LANES && g.oh * g.ow > 0
}

/// The padded block's extents: every position a window reads, and the whole image.
fn padded_extents(g: &Geometry, conv: &Convolution) -> (usize, usize) {
    let w = &conv.window;
    let reach = |o: usize, s: usize, k: usize, d: usize| (o - 1) * s + (k - 1) * d + 1;
    let hp = reach(g.oh, w.strides[0], g.kh, w.dilations[0]).max(w.pads_begin[0] + g.h);
    let wp = reach(g.ow, w.strides[1], g.kw, w.dilations[1]).max(w.pads_begin[1] + g.w);
    (hp, wp)
}

/// Each output channel of `out` (`[channels, oH, oW]`) from its input plane of `planes`
/// (`[channels, H, W]`), channel `i` being group `(first + i) mod groups` with taps
/// `filters[group]` (`filters`, `[groups, kH, kW]`), as
/// [`super::depthwise::Depthwise::run`] computes them; `false`, writing nothing, where this
/// does not run ([`takes_lanes`] fails, the slices disagree with `g`, or a tap is infinite
/// or NaN, which must not meet the padding).
pub(super) fn run(
    planes: &[f32],
    (filters, first): (&[f32], usize),
    g: &Geometry,
    conv: &Convolution,
    out: &mut [f32],
) -> bool {
    let (hw, ohw, taps_n, groups) = (g.h * g.w, g.oh * g.ow, g.kh * g.kw, g.groups.max(1));
    let channels = out.len() / ohw.max(1);
    let fits = planes.len() == channels * hw
        && out.len() == channels * ohw
        && filters.len() == groups * taps_n;
    if !takes_lanes(g) || !fits || taps_n == 0 {
        return false;
    }
    // Channel `c`'s group, wrapping past the last group where the channels run into the
    // next image.
    let group = |c: usize| (first + c) % groups;
    let start = group(0);
    // The taps the call reads: one run of groups, or all of them where the channels wrap.
    let read = match start + channels <= groups {
        true => &filters[start * taps_n..(start + channels) * taps_n],
        false => filters,
    };
    if !read.iter().fold(true, |all, v| all & v.is_finite()) {
        return false;
    }
    let (hp, wp) = padded_extents(g, conv);
    let (dh, dw) = (conv.window.dilations[0], conv.window.dilations[1]);
    // Where each tap reads relative to its output's window origin, in elements.
    let offsets: Vec<usize> = (0..g.kh)
        .flat_map(|ky| (0..g.kw).map(move |kx| (ky * dh * wp + kx * dw) * LANES))
        .collect();
    let sizes = [taps_n * LANES, hp * wp * LANES, hw * LANES, ohw * LANES];
    let (top, left) = (conv.window.pads_begin[0], conv.window.pads_begin[1]);
    with_scratch(sizes.iter().sum(), |buffer: &mut [f32]| {
        let (weights, rest) = buffer.split_at_mut(sizes[0]);
        let (padded, rest) = rest.split_at_mut(sizes[1]);
        let (block, sums) = rest.split_at_mut(sizes[2]);
        padded.fill(0.0);
        let blocks = planes.chunks(LANES * hw).zip(out.chunks_mut(LANES * ohw));
        for (b, (src, dst)) in blocks.enumerate() {
            let n = dst.len() / ohw;
            // Tap `t` of the block's channels in the lanes: a whole block of consecutive
            // groups transposed at once, else channel by channel (zero past `n`).
            let grp = group(b * LANES);
            let whole = n == LANES && grp + LANES <= groups;
            if !(whole
                && transpose_into(&filters[grp * taps_n..], (LANES, taps_n, taps_n), weights))
            {
                weights.fill(0.0);
                for c in 0..n {
                    let grp = group(b * LANES + c);
                    for (t, &v) in filters[grp * taps_n..(grp + 1) * taps_n].iter().enumerate() {
                        weights[t * LANES + c] = v;
                    }
                }
            }
            // The block's planes as `[H · W, n]`, each position's channels into the lanes
            // of its place in the padded block (lanes past `n` are not read out).
            transpose_into(src, (n, hw, hw), block);
            for (y, row) in block[..hw * n].chunks_exact(g.w * n).enumerate() {
                let at = ((top + y) * wp + left) * LANES;
                let places = padded[at..at + g.w * LANES].chunks_exact_mut(LANES);
                if n == LANES {
                    for (place, channels) in places.zip(row.as_chunks::<LANES>().0) {
                        place.copy_from_slice(channels);
                    }
                } else {
                    for (place, channels) in places.zip(row.chunks_exact(n)) {
                        place[..n].copy_from_slice(channels);
                    }
                }
            }
            sum_windows(padded, (weights, &offsets), (g, conv, wp), sums);
            transpose_into(sums, (ohw, n, LANES), dst);
        }
    });
    true
}

/// `sums[(oy · oW + ox) · 16 + c]` = the window of output `(oy, ox)` over `padded` (`[Hp,
/// Wp, 16]`) times the taps `weights` (`[kH · kW, 16]`, tap `t` reading `offsets[t]`
/// past the window's origin), in window order from zero.
fn sum_windows(
    padded: &[f32],
    (weights, offsets): (&[f32], &[usize]),
    (g, conv, wp): (&Geometry, &Convolution, usize),
    sums: &mut [f32],
) {
    let (sh, sw) = (conv.window.strides[0], conv.window.strides[1]);
    let reach = offsets.last().copied().unwrap_or(0) + LANES;
    if weights.len() < offsets.len() * LANES {
        return;
    }
    for (oy, row) in sums.chunks_exact_mut(g.ow * LANES).enumerate() {
        for (c, chunk) in row.chunks_mut(CHAINS * LANES).enumerate() {
            // The chunk's outputs' window origins, the last repeated to fill the chains.
            let live = chunk.len() / LANES;
            let origins: [usize; CHAINS] = std::array::from_fn(|j| {
                (oy * sh * wp + (c * CHAINS + j.min(live - 1)) * sw) * LANES
            });
            if origins.iter().any(|&o| o + reach > padded.len()) {
                return;
            }
            #[cfg(target_arch = "x86_64")]
            // SAFETY: AVX-512F (`takes_lanes`, checked by `run`); every read lies in
            // `padded` (each origin plus the furthest tap's sixteen lanes, checked above)
            // or in `weights` (one vector per tap, checked above); `chunk` holds sixteen
            // lanes for each of its `live` outputs.
            unsafe {
                chains(padded, weights, offsets, &origins, (chunk, live))
            };
        }
    }
}

/// The [`CHAINS`] outputs at `origins` (each's window origin in `padded`), sixteen lanes
/// each, the first `live` of them into `out`.
///
/// # Safety
/// AVX-512F; `padded[o + offsets[t]..][..16]` readable for every origin `o` and tap `t`,
/// `weights` at least `16 · offsets.len()` long, and `out` at least `16 · live`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn chains(
    padded: &[f32],
    weights: &[f32],
    offsets: &[usize],
    origins: &[usize; CHAINS],
    (out, live): (&mut [f32], usize),
) {
    let mut acc: [__m512; CHAINS] = [_mm512_setzero_ps(); CHAINS];
    let (src, wts) = (padded.as_ptr(), weights.as_ptr());
    for (t, &off) in offsets.iter().enumerate() {
        // SAFETY: within the bounds the caller guarantees.
        let w = unsafe { _mm512_loadu_ps(wts.add(t * LANES)) };
        for j in 0..CHAINS {
            // SAFETY: as above.
            let x = unsafe { _mm512_loadu_ps(src.add(origins[j] + off)) };
            acc[j] = _mm512_fmadd_ps(x, w, acc[j]);
        }
    }
    for (j, a) in acc.iter().enumerate().take(live) {
        // SAFETY: `out` holds sixteen lanes for each of the `live` outputs.
        unsafe { _mm512_storeu_ps(out.as_mut_ptr().add(j * LANES), *a) };
    }
}

#[cfg(test)]
mod tests {
    use graphlift_ir::{Convolution, Shape, TensorData, Window};

    use super::{run, takes_lanes};
    use crate::native::conv_geometry::Geometry;

    /// Channels in the lanes agree with the reference, channel by channel (each its group's
    /// taps, wrapping past the last group as a block spanning two images does, a partial
    /// last group of lanes), over strides, dilations, uneven padding and windows up to
    /// 5x5; and decline a call with an infinite tap, writing nothing.
    #[test]
    fn channels_in_the_lanes_agree_with_the_reference() {
        let cases = [
            // (h, w, k, strides, dilations, pads [top, left, bottom, right])
            (7, 7, 3, [1, 1], [1, 1], [1, 1, 1, 1]),
            (14, 14, 3, [2, 2], [1, 1], [0, 0, 1, 1]),
            (9, 6, 5, [1, 1], [1, 1], [2, 2, 2, 2]),
            (8, 8, 3, [1, 2], [2, 1], [2, 1, 0, 2]),
            (3, 5, 3, [1, 1], [1, 1], [0, 1, 0, 1]),
        ];
        let (groups, first, channels) = (40, 30, 37);
        for (h, w, k, strides, dilations, pads) in cases {
            let conv = Convolution {
                window: Window {
                    shape: vec![k, k],
                    strides: strides.to_vec(),
                    dilations: dilations.to_vec(),
                    pads_begin: vec![pads[0], pads[1]],
                    pads_end: vec![pads[2], pads[3]],
                },
                groups,
            };
            let (sx, sf) = (Shape::new([1, groups, h, w]), Shape::new([groups, 1, k, k]));
            let g = Geometry::of(&sx, &sf, &conv).unwrap();
            assert!(takes_lanes(&g) || !crate::native::lanes::FloatTiles::Avx512.runs());
            let (hw, ohw, taps) = (h * w, g.oh * g.ow, k * k);
            let planes: Vec<f32> = (0..channels * hw)
                .map(|i| ((i * 29 % 97) as f32) / 40.0 - 1.0)
                .collect();
            let mut filters: Vec<f32> = (0..groups * taps)
                .map(|i| (i % 11) as f32 * 0.2 - 1.0)
                .collect();
            let mut out = vec![f32::NAN; channels * ohw];
            if !run(&planes, (&filters, first), &g, &conv, &mut out) {
                assert!(!takes_lanes(&g), "declined a shape it takes");
                continue;
            }
            let one = Convolution {
                groups: 1,
                ..conv.clone()
            };
            let (s1, f1) = (Shape::new([1, 1, h, w]), Shape::new([1, 1, k, k]));
            for i in 0..channels {
                let grp = (first + i) % groups;
                let want = graphlift_runtime::reference::convolution(
                    &TensorData::F32(planes[i * hw..(i + 1) * hw].to_vec()),
                    &s1,
                    &TensorData::F32(filters[grp * taps..(grp + 1) * taps].to_vec()),
                    &f1,
                    &one,
                )
                .unwrap();
                let TensorData::F32(want) = want else {
                    panic!("type")
                };
                for (j, (a, b)) in out[i * ohw..(i + 1) * ohw].iter().zip(&want).enumerate() {
                    let tol = 4.0 * taps as f32 * f32::EPSILON * (1.0 + b.abs());
                    assert!(
                        (a - b).abs() <= tol,
                        "{h}x{w} k{k} channel {i} [{j}]: {a} vs {b}"
                    );
                }
            }
            // An infinite tap among the call's channels: declined, nothing written.
            filters[((first + 3) % groups) * taps] = f32::INFINITY;
            let mut untouched = vec![f32::NAN; channels * ohw];
            assert!(!run(&planes, (&filters, first), &g, &conv, &mut untouched));
            assert!(untouched.iter().all(|v| v.is_nan()));
        }
    }
}
