//! `ConvolutionInteger` natively (1-D and 2-D): for each image and group, bands of output rows
//! have their receptive fields unrolled (im2col, padding with the data's zero point) and
//! interleaved into the VNNI layout `[ceil(K / 4), pixels, 4]` of UINT8, then multiplied by
//! the group's filters as INT8 rows, accumulating in INT32: on `vpdpbusd` (16 pixels x 4 taps
//! per instruction) where the host has AVX-512 VNNI, on AVX2 by 16-bit pairs
//! ([`super::int_avx2`]) where it has that, else in a portable loop; all give the same
//! integers. The zero points enter as per-pixel and per-channel corrections (below), so any
//! UINT8/INT8 pairing is exact. `graphlift_runtime::reference::convolution_integer` defines
//! the result; every path equals it bit for bit.
//!
//! With the data in the UINT8 domain (`xu = x + 128` for INT8 data) and the filter in the
//! INT8 domain (`wi = w - 128` for a UINT8 filter), zero points shifted alike, over the
//! `K = C / groups · kH · kW` taps of a window (padding holding `xz`):
//!
//! ```text
//! Σ (xu - xz)(wi - wz[m]) = Σ xu·wi  -  wz[m] · Σ xu  +  (K · xz · wz[m] - xz · Σ wi)
//!                           (vpdpbusd)  (per pixel)     (per channel)
//! ```
//!
//! every term in wrapping INT32, which is exact modulo 2³², as the reference's sum is.

use std::borrow::Cow;
use std::ops::Range;

use graphlift_ir::{Convolution, TensorData};
use graphlift_runtime::Tensor;

use super::conv_geometry::{band_items, im2col, is_pointwise, lift_1d, Geometry};
use super::int_avx2::{self, IntegerPath};
use super::packed::PackedWeights;
use multiversion::multiversion;

use crate::parallel::{for_each, Parallel};

/// The most bytes of unrolled fields held at once (256 KiB, within L2): larger fields are
/// unrolled and multiplied in bands of output rows.
const FIELD_BUDGET: usize = 1 << 18;

/// Output channels of one AVX-512 register tile over 64 pixels (24 accumulators); channel
/// blocks split over threads are multiples of it.
const MR: usize = 6;

/// Output channels one call of the tile loop takes (tiles over fewer pixels hold more
/// channels: 12 over 32 pixels, 24 over 16).
const CHANNEL_BLOCK: usize = 24;

/// Pixels of one register tile; the interleaved fields are padded to a multiple of it.
const NC: usize = 64;

/// The filters of one group, in the INT8 domain: rows of `kp` taps (zero beyond `K`) and the
/// per-channel terms of the zero-point correction.
struct Filters<'a> {
    /// `[M / groups, kp]` (the filter itself when `kp == K`).
    w: Cow<'a, [i8]>,
    /// `w` widened to 16 bits for the AVX2 tile (empty on the other paths).
    w16: Cow<'a, [i16]>,
    /// `wz[m]`, the filter zero point in the INT8 domain.
    wz: Vec<i32>,
    /// `K · xz · wz[m] - xz · Σ_k wi[m, k]`.
    bias: Vec<i32>,
}

/// The operands of one call, checked against each other.
struct Problem<'a> {
    g: Geometry,
    conv: Convolution,
    /// The data in the UINT8 domain, `[N, C, H, W]`.
    x: &'a [u8],
    /// The data zero point in the UINT8 domain.
    xz: u8,
    /// One per group.
    filters: Vec<Filters<'a>>,
    /// Taps of a window (`C / groups · kH · kW`) and that rounded up to a multiple of 4.
    k: usize,
    kp: usize,
    /// The product's path (the host runs it).
    path: IntegerPath,
}

/// The values of an 8-bit tensor in the UINT8 domain (`x + 128` for INT8), borrowed when
/// already UINT8.
fn to_u8(d: &TensorData) -> Option<Cow<'_, [u8]>> {
    match d {
        TensorData::U8(v) => Some(Cow::Borrowed(v)),
        TensorData::I8(v) => Some(v.iter().map(|&b| (b as u8) ^ 0x80).collect()),
        _ => None,
    }
}

/// The values of an 8-bit tensor in the INT8 domain (`w - 128` for UINT8), borrowed when
/// already INT8.
fn to_i8(d: &TensorData) -> Option<Cow<'_, [i8]>> {
    match d {
        TensorData::U8(v) => Some(v.iter().map(|&b| (b ^ 0x80) as i8).collect()),
        TensorData::I8(v) => Some(Cow::Borrowed(v)),
        _ => None,
    }
}

/// [`graphlift_ir::Op::ConvolutionInteger`] of `x` `[N, C, (H,) W]`, `x_zero_point` (one
/// element), `w` `[M, C / groups, (kH,) kW]` and `w_zero_point` (one element or `[M]`), all
/// 8-bit, each zero point of its operand's type: INT32 `[N, M, (oH,) oW]`, written into
/// `out` when it is an INT32 buffer of the result's size (else a new one). `None` when this
/// kernel does not apply (other ranks or types, operands that do not fit): the caller then
/// runs the reference, whose error names the node. `packed`, the filters
/// [`super::packed::prepare`] made from a constant `w` (`Side::IntegerFilters`), spares
/// each call their padding, widening and row sums.
pub(super) fn convolution_integer(
    conv: &Convolution,
    operands: [&Tensor; 4],
    out: Option<TensorData>,
    parallel: &Parallel,
    packed: Option<&PackedWeights>,
) -> Option<TensorData> {
    convolution_integer_on(conv, operands, out, parallel, (IntegerPath::host(), packed))
}

/// As [`convolution_integer`], on `path` (which the caller has checked the host runs).
fn convolution_integer_on(
    conv: &Convolution,
    [x, xz, w, wz]: [&Tensor; 4],
    out: Option<TensorData>,
    parallel: &Parallel,
    (path, packed): (IntegerPath, Option<&PackedWeights>),
) -> Option<TensorData> {
    let lifted = lift_1d(x.shape(), w.shape(), conv);
    let (sx, sw, conv) = match &lifted {
        Some((sx, sw, c)) => (sx, sw, c),
        None => (x.shape(), w.shape(), conv),
    };
    let g = Geometry::of(sx, sw, conv)?;
    if x.data().element_type() != xz.data().element_type()
        || w.data().element_type() != wz.data().element_type()
    {
        return None;
    }
    let (xu, xzu, wi, wzi) = (
        to_u8(x.data())?,
        to_u8(xz.data())?,
        to_i8(w.data())?,
        to_i8(wz.data())?,
    );
    let (cg, mg) = (g.c / g.groups, g.m / g.groups);
    let k = cg * g.kh * g.kw;
    if k == 0
        || xu.len() != g.n * g.c * g.h * g.w
        || wi.len() != g.m * k
        || xzu.len() != 1
        || (wzi.len() != 1 && wzi.len() != g.m)
    {
        return None;
    }
    let kp = k.div_ceil(4) * 4;
    let xz0 = i32::from(xzu[0]);
    let prepared = packed.and_then(|p| p.integer_rows(g.m, k));
    let filters = (0..g.groups)
        .map(|grp| {
            let (rows, taps) = (grp * mg..(grp + 1) * mg, grp * mg * kp..(grp + 1) * mg * kp);
            let w: Cow<'_, [i8]> = match prepared {
                Some((w8, ..)) => Cow::Borrowed(&w8[taps.clone()]),
                None => padded_rows(&wi[grp * mg * k..(grp + 1) * mg * k], k, kp),
            };
            let w16: Cow<'_, [i16]> = match (path, prepared) {
                (IntegerPath::Avx2, Some((_, w16, _))) if !w16.is_empty() => {
                    Cow::Borrowed(&w16[taps])
                }
                (IntegerPath::Avx2, _) => w.iter().map(|&v| i16::from(v)).collect(),
                _ => Cow::Borrowed(&[]),
            };
            let mut f = Filters {
                w16,
                w,
                wz: Vec::with_capacity(mg),
                bias: Vec::with_capacity(mg),
            };
            for (r, row) in f.w.chunks_exact(kp).enumerate() {
                let m = rows.start + r;
                let z = i32::from(wzi[if wzi.len() == 1 { 0 } else { m }]);
                let sum = match prepared {
                    Some((.., sums)) => sums[m],
                    None => row.iter().fold(0i32, |s, &v| s.wrapping_add(i32::from(v))),
                };
                f.wz.push(z);
                f.bias.push(
                    (k as i32)
                        .wrapping_mul(xz0)
                        .wrapping_mul(z)
                        .wrapping_sub(xz0.wrapping_mul(sum)),
                );
            }
            f
        })
        .collect();
    let len = g.n * g.m * g.oh * g.ow;
    let mut y = match out {
        Some(TensorData::I32(v)) if v.len() == len => v,
        _ => vec![0i32; len],
    };
    let p = Problem {
        conv: conv.clone(),
        x: &xu,
        xz: xzu[0],
        filters,
        k,
        kp,
        g,
        path,
    };
    convolve(&p, parallel, &mut y);
    Some(TensorData::I32(y))
}

/// The filter rows `own` (`k` taps each) padded with zeros to `kp` taps (borrowed when `kp
/// == k`).
fn padded_rows(own: &[i8], k: usize, kp: usize) -> Cow<'_, [i8]> {
    if kp == k {
        return Cow::Borrowed(own);
    }
    let mut w = vec![0; own.len() / k * kp];
    for (row, src) in w.chunks_exact_mut(kp).zip(own.chunks_exact(k)) {
        row[..k].copy_from_slice(src);
    }
    Cow::Owned(w)
}

/// Bands of output rows per thread when fewer (image, group) tasks than threads are split
/// by bands: a few, so a thread held up by another process leaves bands to the others.
const BANDS_PER_THREAD: usize = 2;

/// Every (image, group) of `p` into `y` (`[N, M, oH · oW]`): over the threads by tasks, or,
/// with fewer tasks than threads, by bands of output rows, each unrolled and multiplied by
/// the thread that takes it (the fields of a band unrolled on one thread for all would
/// leave the others waiting), or, with too few rows for that (a product lowered to a 1 x N
/// image), by blocks of channels over each band's shared fields.
fn convolve(p: &Problem<'_>, parallel: &Parallel, y: &mut [i32]) {
    let g = &p.g;
    let mg = g.m / g.groups;
    let plane = g.oh * g.ow;
    if plane == 0 || g.m == 0 {
        return;
    }
    let tasks = g.n * g.groups;
    let team = parallel.team(g.n * g.m * plane * p.k);
    let threads = team.map_or(1, |t| t.threads());
    let mut band_rows = (FIELD_BUDGET / (p.kp * g.ow).max(1)).clamp(1, g.oh);
    if team.is_some() && tasks < threads {
        band_rows = band_rows.min(g.oh.div_ceil(BANDS_PER_THREAD * threads).max(1));
    }
    let bands: Vec<Range<usize>> = (0..g.oh)
        .step_by(band_rows)
        .map(|r| r..(r + band_rows).min(g.oh))
        .collect();
    let rows = mg.div_ceil(threads).next_multiple_of(MR);
    match team {
        Some(team) if tasks < threads && bands.len() >= threads => {
            let items = band_items(y, (mg, plane, g.ow), &bands);
            for_each(team, items.into_iter(), |(t, b, mut pieces)| {
                let band = &bands[b];
                let pixels = band.len() * g.ow;
                let mut fields = Fields::kept();
                fields.unroll(p, t, band);
                let mut product_buf = vec![0i32; mg * pixels];
                product(
                    p,
                    t % g.groups,
                    &fields,
                    0..mg,
                    (&mut product_buf, pixels, 0),
                );
                for (piece, from) in pieces.iter_mut().zip(product_buf.chunks(pixels)) {
                    piece.copy_from_slice(from);
                }
            });
        }
        Some(team) if tasks < threads && rows < mg => {
            let mut fields = Fields::kept();
            for (t, out) in y.chunks_mut(mg * plane).enumerate() {
                for band in &bands {
                    fields.unroll(p, t, band);
                    let first = band.start * g.ow;
                    for_each(
                        team,
                        out.chunks_mut(rows * plane).enumerate(),
                        |(b, out)| {
                            let channels = b * rows..b * rows + out.len() / plane;
                            let grp = t % g.groups;
                            product(p, grp, &fields, channels, (out, plane, first));
                        },
                    );
                }
            }
        }
        Some(team) if tasks > 1 => {
            for_each(team, y.chunks_mut(mg * plane).enumerate(), |(t, out)| {
                let mut fields = Fields::kept();
                for band in &bands {
                    fields.unroll(p, t, band);
                    let first = band.start * g.ow;
                    product(p, t % g.groups, &fields, 0..mg, (out, plane, first));
                }
            });
        }
        _ => {
            let mut fields = Fields::kept();
            for (t, out) in y.chunks_mut(mg * plane).enumerate() {
                for band in &bands {
                    fields.unroll(p, t, band);
                    let first = band.start * g.ow;
                    product(p, t % g.groups, &fields, 0..mg, (out, plane, first));
                }
            }
        }
    }
}

/// The unrolled fields of one band in the VNNI layout: each pixel's 4 taps of a group one
/// little-endian 32-bit lane (`vpdpbusd`'s operand), UINT8, taps beyond `K` zero, pixels
/// padded to a multiple of [`NC`]; and each pixel's sum over its `K` taps. The lanes are
/// stored in panels of `panel` pixels: `[padded / panel, kp / 4, panel]`, so that lane
/// (tap group `g`, pixel `q`) sits at [`Fields::lane`]. The VNNI tiles take one panel of
/// the whole band (`[kp / 4, padded]`); the AVX2 tile reads eight pixels at a time, and
/// panels of eight keep each tile's lanes contiguous.
struct Fields {
    /// Pixels of the band (`rows · oW`) and that padded to a multiple of [`NC`].
    pixels: usize,
    padded: usize,
    /// Pixels of a panel (a divisor of `padded`).
    panel: usize,
    /// Tap groups: `kp / 4`.
    groups: usize,
    packed: Vec<u32>,
    sums: Vec<i32>,
    /// The row-major unrolled fields `[K, pixels]`, before interleaving.
    rows: Vec<u8>,
}

/// The buffers of a [`Fields`], kept by a thread between calls.
#[derive(Default)]
struct Buffers {
    packed: Vec<u32>,
    sums: Vec<i32>,
    rows: Vec<u8>,
}

thread_local! {
    /// The buffers of this thread's last [`Fields`], kept for the next call: fresh fields
    /// every call cost the allocator's page faults (a fifth of a pointwise convolution's
    /// time, measured with `perf`).
    static KEPT: std::cell::Cell<Option<Buffers>> = const { std::cell::Cell::new(None) };
}

impl Fields {
    /// Fields on this thread's kept buffers (to be filled by [`Fields::unroll`]), or new
    /// ones; the buffers go back to the thread when the fields are dropped.
    fn kept() -> Fields {
        let b = KEPT
            .try_with(std::cell::Cell::take)
            .ok()
            .flatten()
            .unwrap_or_default();
        Fields {
            pixels: 0,
            padded: 0,
            panel: 0,
            groups: 0,
            packed: b.packed,
            sums: b.sums,
            rows: b.rows,
        }
    }

    /// Unrolls task `t`'s (image `t / groups`, group `t % groups`) fields for output rows
    /// `band`, in the panels `p`'s path reads.
    fn unroll(&mut self, p: &Problem<'_>, t: usize, band: &Range<usize>) {
        let g = &p.g;
        let (b, grp) = (t / g.groups, t % g.groups);
        let cg = g.c / g.groups;
        let image = &p.x[b * g.c * g.h * g.w..(b + 1) * g.c * g.h * g.w];
        self.pixels = band.len() * g.ow;
        self.padded = self.pixels.next_multiple_of(NC);
        self.panel = match p.path {
            IntegerPath::Avx2 => int_avx2::COLUMNS,
            _ => self.padded,
        };
        self.groups = p.kp / 4;
        self.sums.clear();
        self.sums.resize(self.padded, 0);
        // Every pixel's lanes are written below; those of the padding pixels are read but
        // never stored, so the buffer is not cleared between bands.
        self.packed.resize(self.groups * self.padded, 0);
        if is_pointwise(g, &p.conv) {
            // The fields are the group's channels themselves (`oH · oW == H · W`).
            let plane = g.h * g.w;
            let first = grp * cg * plane + band.start * g.ow;
            self.interleave((&image[first..], plane), p.k);
            return;
        }
        let mut rows = std::mem::take(&mut self.rows);
        rows.resize(p.k * self.pixels, 0);
        im2col(
            image,
            g,
            &p.conv,
            (grp * cg, cg),
            band.clone(),
            &mut rows,
            p.xz,
        );
        self.interleave((&rows, self.pixels), p.k);
        self.rows = rows;
    }

    /// The index in `packed` of tap group `g`'s lane of pixel `q`.
    fn lane(&self, g: usize, q: usize) -> usize {
        q / self.panel * self.groups * self.panel + g * self.panel + q % self.panel
    }

    /// `k` rows of `pixels` bytes (row `kk` at `kk · stride` of `rows`) into the lanes:
    /// tap `kk` of pixel `q` in byte `kk % 4` (little-endian) of lane `(kk / 4, q)`; each
    /// pixel's sum over its `k` taps added into `sums`.
    fn interleave(&mut self, (rows, stride): (&[u8], usize), k: usize) {
        let zeros = vec![0u8; self.pixels];
        let row = |kk: usize| {
            if kk < k {
                &rows[kk * stride..kk * stride + self.pixels]
            } else {
                &zeros[..]
            }
        };
        for g in 0..self.groups {
            let taps = [row(4 * g), row(4 * g + 1), row(4 * g + 2), row(4 * g + 3)];
            for q0 in (0..self.pixels).step_by(self.panel) {
                let n = self.panel.min(self.pixels - q0);
                let at = self.lane(g, q0);
                let lanes = &mut self.packed[at..at + n];
                let sums = &mut self.sums[q0..q0 + n];
                let taps = taps.map(|t| &t[q0..q0 + n]);
                interleave_run(taps, lanes, sums);
            }
        }
    }
}

impl Drop for Fields {
    fn drop(&mut self) {
        let b = Buffers {
            packed: std::mem::take(&mut self.packed),
            sums: std::mem::take(&mut self.sums),
            rows: std::mem::take(&mut self.rows),
        };
        // (On a thread being torn down they are just freed.)
        let _ = KEPT.try_with(|k| k.set(Some(b)));
    }
}

/// Four runs of taps (`taps[j][q]`: tap `j` of pixel `q`) into one run of lanes, each
/// pixel's four taps added into its sum.
#[multiversion(targets = "simd")]
fn interleave_run(taps: [&[u8]; 4], lanes: &mut [u32], sums: &mut [i32]) {
    let [r0, r1, r2, r3] = taps;
    for ((((d, &a), &b), &c), (&e, s)) in lanes
        .iter_mut()
        .zip(r0)
        .zip(r1)
        .zip(r2)
        .zip(r3.iter().zip(sums))
    {
        let (a, b, c, e) = (u32::from(a), u32::from(b), u32::from(c), u32::from(e));
        *d = a | b << 8 | c << 16 | e << 24;
        *s = s.wrapping_add((a + b + c + e) as i32);
    }
}

/// Output channels `channels` (of group `grp`, indices within the group) for the pixels of
/// `fields` into `out`: those channels' planes of `plane` elements (from the block's first
/// channel), each written from element `first` on.
fn product(
    p: &Problem<'_>,
    grp: usize,
    fields: &Fields,
    channels: Range<usize>,
    (out, plane, first): (&mut [i32], usize, usize),
) {
    let f = &p.filters[grp];
    for (blk, c) in channels.clone().step_by(CHANNEL_BLOCK).enumerate() {
        let mr = CHANNEL_BLOCK.min(channels.end - c);
        let rows = Rows {
            w: &f.w[c * p.kp..(c + mr) * p.kp],
            w16: f.w16.get(c * p.kp..(c + mr) * p.kp).unwrap_or_default(),
            wz: &f.wz[c..c + mr],
            bias: &f.bias[c..c + mr],
        };
        let out = &mut out[blk * CHANNEL_BLOCK * plane..];
        match p.path {
            #[cfg(target_arch = "x86_64")]
            IntegerPath::Vnni if fields.panel == fields.padded => {
                // SAFETY: the caller checked the host has AVX-512F and VNNI; `rows` holds
                // `mr` rows of `kp` taps, `fields` `kp / 4 · padded · 4` bytes in one panel
                // (`[kp / 4, padded]`) and `padded` sums, and `out` has `mr` planes of
                // `plane` elements from pixel `first` on, of which the tiles write only the
                // band's `fields.pixels`.
                unsafe { vnni::channels(&rows, mr, p.kp, fields, out, plane, first) }
            }
            #[cfg(target_arch = "x86_64")]
            IntegerPath::Avx2 if rows.w16.len() == mr * p.kp && fields.panel == 8 => {
                avx2(&rows, mr, p.kp, fields, (out, plane, first))
            }
            _ => portable(&rows, mr, p.kp, fields, out, plane, first),
        }
    }
}

/// `mr` channels' filter rows (`kp` taps each) and their correction terms.
struct Rows<'a> {
    w: &'a [i8],
    /// `w` widened (the AVX2 path's; empty on the others).
    w16: &'a [i16],
    wz: &'a [i32],
    bias: &'a [i32],
}

/// The product of `mr` channels by the band's fields into `out` (as [`portable`]) on the
/// AVX2 tile ([`int_avx2`]): eight pixels by up to six channels at a time, the zero-point
/// correction applied as each tile is stored. The caller has checked that the host has AVX2
/// and that `rows.w16` holds `mr` rows of `kp` taps.
#[cfg(target_arch = "x86_64")]
fn avx2(
    rows: &Rows<'_>,
    mr: usize,
    kp: usize,
    fields: &Fields,
    (out, plane, first): (&mut [i32], usize, usize),
) {
    let mut sums = [[0i32; int_avx2::COLUMNS]; int_avx2::ROWS];
    for q in (0..fields.pixels).step_by(int_avx2::COLUMNS) {
        let n = (fields.pixels - q).min(int_avx2::COLUMNS);
        for r0 in (0..mr).step_by(int_avx2::ROWS) {
            let h = (mr - r0).min(int_avx2::ROWS);
            let o = int_avx2::Operands {
                rows: rows.w16[r0 * kp..].as_ptr(),
                row_stride: kp,
                columns: fields.packed[fields.lane(0, q)..].as_ptr().cast(),
                group_stride: fields.panel * 4,
                groups: fields.groups,
            };
            // SAFETY: the host has AVX2 (the caller's check); rows `r0..r0 + h` of `w16`
            // hold `kp` taps each; the fields are in panels of 8 pixels (this path's) and
            // `q`, a multiple of 8 below `padded`, starts one: its `kp / 4` groups of 8 lanes
            // (32 bytes each, `group_stride` apart) lie inside `fields.packed`.
            unsafe { int_avx2::tile_rows::<int_avx2::Unsigned8>(&o, h, &mut sums) };
            // The fields' sums are padded to a multiple of NC pixels, so eight from `q`.
            let pixel_sums: &[i32; int_avx2::COLUMNS] = fields.sums[q..q + int_avx2::COLUMNS]
                .try_into()
                .expect("eight sums");
            for (r, s) in sums.iter().enumerate().take(h) {
                let c = r0 + r;
                let at = c * plane + first + q;
                // SAFETY: the host has AVX2 (the caller's check).
                let y = unsafe { corrected(s, pixel_sums, rows.wz[c], rows.bias[c]) };
                if n == int_avx2::COLUMNS {
                    // (A copy of constant length: one 32-byte move, not a `memmove` call.)
                    out[at..at + int_avx2::COLUMNS].copy_from_slice(&y);
                } else {
                    out[at..at + n].copy_from_slice(&y[..n]);
                }
            }
        }
    }
}

/// `acc - wz · sums + bias` on eight pixels of one channel, in wrapping INT32 (the
/// zero-point correction of the module's identity), in AVX2 registers.
///
/// # Safety
/// The host has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn corrected(
    acc: &[i32; int_avx2::COLUMNS],
    sums: &[i32; int_avx2::COLUMNS],
    wz: i32,
    bias: i32,
) -> [i32; int_avx2::COLUMNS] {
    std::array::from_fn(|i| {
        acc[i]
            .wrapping_sub(wz.wrapping_mul(sums[i]))
            .wrapping_add(bias)
    })
}

/// The portable product of `mr` channels by the band's fields into `out` (channel `r`'s
/// pixel `q` at `r · plane + first + q`), in wrapping INT32 as the reference.
fn portable(
    rows: &Rows<'_>,
    mr: usize,
    kp: usize,
    fields: &Fields,
    out: &mut [i32],
    plane: usize,
    first: usize,
) {
    for r in 0..mr {
        let w = &rows.w[r * kp..(r + 1) * kp];
        let line = &mut out[r * plane + first..r * plane + first + fields.pixels];
        for (q, y) in line.iter_mut().enumerate() {
            let mut acc = 0i32;
            for (k4, wq) in w.chunks_exact(4).enumerate() {
                let x = fields.packed[fields.lane(k4, q)].to_le_bytes();
                let dot: i32 = (0..4).map(|j| i32::from(x[j]) * i32::from(wq[j])).sum();
                acc = acc.wrapping_add(dot);
            }
            *y = acc
                .wrapping_sub(rows.wz[r].wrapping_mul(fields.sums[q]))
                .wrapping_add(rows.bias[r]);
        }
    }
}

/// The AVX-512 VNNI path.
#[cfg(target_arch = "x86_64")]
mod vnni;

#[cfg(test)]
mod tests;
