//! `ConvolutionInteger`'s product on AVX-512 VNNI: register tiles of up to 24 channels by
//! 64 pixels, `vpdpbusd` summing four UINT8 x INT8 products per lane (see the parent module
//! for the layouts and the zero-point correction applied as each tile is stored).

use std::arch::x86_64::*;

use super::{Fields, Rows, NC};
use crate::native::lanes::lane_mask;

/// `mr` (`<= CHANNEL_BLOCK`) channels by the band's pixels, 64 at a time (the last
/// tile over 16, 32 or 64 pixels, its stores masked to the band), each pixel tile split
/// into channel tiles of as many channels as the registers hold.
///
/// # Safety
/// AVX-512F and VNNI; `rows.w` has `mr · kp` taps, `rows.wz` and `rows.bias` `mr`
/// values; `fields.packed` is `kp / 4 · fields.padded` lanes, `fields.sums`
/// `fields.padded` values, `fields.padded` a multiple of 64; `out` has
/// `(mr - 1) · plane + first + fields.pixels` elements.
#[target_feature(enable = "avx512f,avx512vnni")]
pub(super) unsafe fn channels(
    rows: &Rows<'_>,
    mr: usize,
    kp: usize,
    fields: &Fields,
    out: &mut [i32],
    plane: usize,
    first: usize,
) {
    let mut q = 0;
    while q < fields.pixels {
        let left = fields.pixels - q;
        let vectors = match left {
            0..=16 => 1,
            17..=32 => 2,
            _ => 4,
        };
        let masks: [__mmask16; 4] = std::array::from_fn(|v| lane_mask(left, v));
        let mut r0 = 0;
        while r0 < mr {
            let t = Tile {
                x: fields.packed.as_ptr().wrapping_add(q).cast::<u8>(),
                padded: fields.padded,
                k4: kp / 4,
                w: rows.w.as_ptr().wrapping_add(r0 * kp),
                kp,
                wz: rows.wz.as_ptr().wrapping_add(r0),
                bias: rows.bias.as_ptr().wrapping_add(r0),
                sums: fields.sums.as_ptr().wrapping_add(q),
                masks,
                y: out.as_mut_ptr().wrapping_add(r0 * plane + first + q),
                plane,
            };
            let r = mr - r0;
            // SAFETY: as this function's contract; each tile reads pixels
            // `q..q + 16 · V` of the padded fields and sums (`q + 64 <= padded`), rows
            // `r0..r0 + R` (`R <= r`) of the filters, and writes only pixels under the
            // masks (below `fields.pixels`) of those `R` output planes.
            r0 += unsafe {
                match (vectors, r) {
                    (1, 24..) => tile::<24, 1>(&t),
                    (1, 16..) => tile::<16, 1>(&t),
                    (1, 8..) => tile::<8, 1>(&t),
                    (1, 4..) => tile::<4, 1>(&t),
                    (1, _) => tile::<1, 1>(&t),
                    (2, 12..) => tile::<12, 2>(&t),
                    (2, 8..) => tile::<8, 2>(&t),
                    (2, 4..) => tile::<4, 2>(&t),
                    (2, _) => tile::<1, 2>(&t),
                    (_, 6..) => tile::<6, 4>(&t),
                    (_, 4..) => tile::<4, 4>(&t),
                    (_, 2..) => tile::<2, 4>(&t),
                    (_, _) => tile::<1, 4>(&t),
                }
            };
        }
        q += 16 * vectors;
    }
    const _: () = assert!(super::CHANNEL_BLOCK == 24 && NC == 64);
}

/// One register tile: pointers at its first pixel and channel (computed with
/// `wrapping_add`, never dereferenced outside the contract).
struct Tile {
    x: *const u8,
    padded: usize,
    k4: usize,
    w: *const i8,
    kp: usize,
    wz: *const i32,
    bias: *const i32,
    sums: *const i32,
    masks: [__mmask16; 4],
    y: *mut i32,
    plane: usize,
}

/// `R` channels x `16 · V` pixels: for each group of 4 taps, `V` loads of 16 pixels'
/// taps, `R` broadcasts of 4 filter taps, `R · V` `vpdpbusd`; then
/// `acc - wz[r] · sums + bias[r]` stored under the masks. Returns `R`.
///
/// # Safety
/// AVX-512F and VNNI; `t.x` has `t.k4` rows of `t.padded · 4` bytes with `16 · V` pixels
/// from it; `t.w` has `R` rows of `t.kp` taps; `t.wz`, `t.bias` `R` values; `t.sums`
/// `16 · V`; `t.y` `R` rows (stride `t.plane`) with every pixel under the masks in
/// bounds.
#[target_feature(enable = "avx512f,avx512vnni")]
#[inline]
unsafe fn tile<const R: usize, const V: usize>(t: &Tile) -> usize {
    let mut acc = [[_mm512_setzero_si512(); V]; R];
    let mut xv = [_mm512_setzero_si512(); V];
    for k4 in 0..t.k4 {
        let xp = t.x.wrapping_add(k4 * t.padded * 4);
        for (v, x) in xv.iter_mut().enumerate() {
            // SAFETY: 64 bytes of pixels `16v..16v + 16` of tap group `k4`, inside the
            // padded fields.
            *x = unsafe { _mm512_loadu_si512(xp.wrapping_add(64 * v).cast()) };
        }
        for (r, acc) in acc.iter_mut().enumerate() {
            // SAFETY: taps `4·k4..4·k4 + 4` of row `r < R` are within `w`.
            let quad = unsafe { t.w.add(r * t.kp + 4 * k4).cast::<i32>().read_unaligned() };
            let wb = _mm512_set1_epi32(quad);
            for (a, &x) in acc.iter_mut().zip(&xv) {
                *a = _mm512_dpbusd_epi32(*a, x, wb);
            }
        }
    }
    for (v, &m) in t.masks.iter().take(V).enumerate() {
        // SAFETY: the 16 sums from pixel `16v` lie within the padded sums; the lanes
        // under the mask are pixels of the band in each of the `R` output rows.
        unsafe {
            let sums = _mm512_loadu_si512(t.sums.wrapping_add(16 * v).cast());
            for (r, acc) in acc.iter().enumerate() {
                let wz = _mm512_set1_epi32(t.wz.add(r).read());
                let bias = _mm512_set1_epi32(t.bias.add(r).read());
                let yv =
                    _mm512_add_epi32(_mm512_sub_epi32(acc[v], _mm512_mullo_epi32(wz, sums)), bias);
                _mm512_mask_storeu_epi32(t.y.wrapping_add(r * t.plane + 16 * v).cast(), m, yv);
            }
        }
    }
    R
}
