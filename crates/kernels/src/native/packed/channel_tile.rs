//! The AVX-512 tile of a convolution with its output channels in the lanes: eight output
//! positions (rows, each broadcast from its own window of the padded image) by up to 48
//! output channels (three vectors of one panel of filters packed for the right side), over
//! all of `k`, then stored transposed into the channels' planes. Where a convolution's
//! output rows are narrower than a few vectors (13, 26 or 52 positions), the tiles of
//! [`super::microkernel`], whose lanes run along a row, leave the last vector of each row
//! partly masked; here the lanes run along the filters, which come in multiples of 16, and
//! eight consecutive positions of the plane fill a tile whatever the row length (the idea
//! of onnxruntime's NCHWc convolutions, without their blocked layout).

use super::microkernel::{MR, NR};
use super::PackedWeights;
use crate::native::lanes::FloatTiles;

/// Sixteen `f32` lanes.
const LANES: usize = 16;

/// The channels' planes a [`channel_product`] writes, and where.
pub(in crate::native) struct ChannelOut<'a, 'b> {
    /// One slice per output channel of the panel: its positions `first..first + len` of
    /// the plane (the slice holds at least `len` elements).
    pub planes: &'a mut [&'b mut [f32]],
    /// The first position the slices start at (`positions` are counted from 0 in the
    /// plane; the slices hold `positions.start - first..`).
    pub first: usize,
}

/// `c(j, i) = Σ_p a(i, p) · b(p, j)` for the output positions `positions` (`i`) and the
/// channels of panel `panel` of matrix `matrix` of `w` (filters `[k, channels]` packed for
/// the right side; `j < out.planes.len() ≤ 48`, the panel's live columns): `a(i, p)` is
/// `image[bases[i] + offsets[p]]` (the padded image read in place, `bases` each
/// position's window, `offsets` each tap's), and `c(j, i)` is stored at
/// `out.planes[j][i − out.first]`. Sums run in `f32` in order of `p`.
///
/// Returns `false`, writing nothing, where the host lacks AVX-512F or an operand does not
/// hold its extents (a window past the image, a plane slice shorter than the positions, a
/// panel past the weights); the caller then takes another path.
pub(in crate::native) fn channel_product(
    out: ChannelOut<'_, '_>,
    (image, bases, offsets): (&[f32], &[usize], &[usize]),
    (w, matrix, panel): (&PackedWeights, usize, usize),
    positions: std::ops::Range<usize>,
) -> bool {
    let (count, k, cols) = w.extents();
    let channels = out.planes.len();
    let panel_cols = cols.saturating_sub(panel * NR).min(NR);
    let reach = offsets.iter().max().copied().unwrap_or(0);
    let fits = FloatTiles::Avx512.runs()
        && w.side() == super::Side::Right
        && matrix < count
        && offsets.len() == k
        && channels <= panel_cols
        && positions.start >= out.first
        && positions.start <= positions.end
        && positions.end <= bases.len()
        && bases[positions.clone()]
            .iter()
            .all(|&b| b.checked_add(reach).is_some_and(|e| e < image.len()))
        && out
            .planes
            .iter()
            .all(|p| p.len() >= positions.end - out.first);
    if !fits {
        return false;
    }
    if k == 0 {
        // Empty sums: zeros.
        let span = positions.start - out.first..positions.end - out.first;
        out.planes
            .iter_mut()
            .for_each(|p| p[span.clone()].fill(0.0));
        return true;
    }
    // The panel's `k × 48` values, zero-padded past `cols` (`PackedWeights::pack`).
    let panel_at = w.matrix_offset(matrix) + panel * NR * k;
    if w.data.len() < panel_at + NR * k {
        return false;
    }
    let b = w.data[panel_at..].as_ptr();
    let planes: Vec<*mut f32> = out.planes.iter_mut().map(|p| p.as_mut_ptr()).collect();
    for i0 in positions.clone().step_by(MR) {
        let rows = MR.min(positions.end - i0);
        // A tile's missing rows repeat its last position (not read).
        let bases: [*const f32; MR] =
            std::array::from_fn(|i| image.as_ptr().wrapping_add(bases[i0 + i.min(rows - 1)]));
        let tile = Tile {
            bases,
            offsets: offsets.as_ptr(),
            b,
            planes: planes.as_ptr(),
            col: i0 - out.first,
            rows,
            channels,
            k,
        };
        // SAFETY: the host has AVX-512F (checked). For every row `i < MR` and step `p < k`
        // the tile reads `image[bases[i] + offsets[p]]`, inside `image` (each base of
        // `positions` plus the largest offset is); `b(p, j)` for `p < k`, `j < 48`
        // inside the panel (checked against the weights' length); and writes `channels ≤
        // planes.len()` planes at `col..col + rows`, which each slice holds
        // (`positions.end − first ≤ len`), every slice borrowed exclusively from `out`.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            run(&tile)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = tile;
    }
    true
}

/// One tile's operands as addresses (see [`channel_product`]): `a(i, p)` at `bases[i] +
/// offsets[p]`, `b(p, j)` at `b + p · NR + j`, `c(j, i)` at `planes[j] + col + i`, for
/// `i < rows`, `j < channels`, `p < k`.
struct Tile {
    bases: [*const f32; MR],
    offsets: *const usize,
    b: *const f32,
    planes: *const *mut f32,
    col: usize,
    rows: usize,
    channels: usize,
    k: usize,
}

/// Runs `t` with its number of live vectors known.
///
/// # Safety
/// The host has AVX-512F; every address [`Tile`] names is inside an allocation, readable
/// for `a` and `b`, writable by this call alone for `c`.
#[cfg(target_arch = "x86_64")]
unsafe fn run(t: &Tile) {
    // SAFETY: as the caller guarantees.
    unsafe {
        match t.channels.div_ceil(LANES) {
            0 => {}
            1 => rows::<1>(t),
            2 => rows::<2>(t),
            _ => rows::<3>(t),
        }
    }
}

/// [`run`] with `V` vectors of channels and its number of rows known: a plane's last tile
/// (one position of a 7x7 plane's 49) computes only its own rows.
///
/// # Safety
/// As [`run`], with `V == ⌈channels / 16⌉ ≤ 3`.
#[cfg(target_arch = "x86_64")]
unsafe fn rows<const V: usize>(t: &Tile) {
    // SAFETY: as the caller guarantees; each arm's row count is `t.rows`.
    unsafe {
        match t.rows {
            1 => tile::<V, 1>(t),
            2 => tile::<V, 2>(t),
            3 => tile::<V, 3>(t),
            4 => tile::<V, 4>(t),
            5 => tile::<V, 5>(t),
            6 => tile::<V, 6>(t),
            7 => tile::<V, 7>(t),
            _ => tile::<V, MR>(t),
        }
    }
}

/// The tile with `V` vectors of channels and `R` rows (the rows past `R` transposed as
/// zeros and not stored).
///
/// # Safety
/// As [`run`], with `V == ⌈channels / 16⌉ ≤ 3` and `R == rows`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tile<const V: usize, const R: usize>(t: &Tile) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); V]; MR];
    for p in 0..t.k {
        // SAFETY: `p < k` offsets; `b(p, j)` for `j < 16 · V ≤ 48` and `a(i, p)` for `i <
        // MR` are readable (caller).
        unsafe {
            let off = t.offsets.add(p).read();
            let row = t.b.add(p * NR);
            let bv: [__m512; V] = std::array::from_fn(|v| _mm512_loadu_ps(row.add(v * LANES)));
            for (base, acc) in t.bases.iter().zip(acc.iter_mut()).take(R) {
                let av = _mm512_set1_ps(base.add(off).read());
                for (acc, &bv) in acc.iter_mut().zip(&bv) {
                    *acc = _mm512_fmadd_ps(av, bv, *acc);
                }
            }
        }
    }
    let rows: u16 = (1u16 << t.rows) - 1;
    for v in 0..V {
        let columns = transpose(acc.map(|row| row[v]));
        for (c, column) in columns.iter().enumerate() {
            // `column` holds channel `16v + CHANNELS[c].0` in its low eight lanes and
            // `16v + CHANNELS[c].1` in its high eight, positions 0..8 each.
            let (low, high) = CHANNELS[c];
            for (j, lanes, back) in [(low, rows, 0), (high, rows << 8, MR)] {
                let j = v * LANES + j;
                if j < t.channels {
                    // SAFETY: `j < channels`: plane `j` is writable at `col..col + rows`,
                    // the lanes `lanes` sets (masked-off lanes are not accessed; `back`
                    // moves the high half's lanes onto the plane's positions).
                    unsafe {
                        let at = t
                            .planes
                            .add(j)
                            .read()
                            .wrapping_add(t.col)
                            .wrapping_sub(back);
                        _mm512_mask_storeu_ps(at, lanes, *column);
                    }
                }
            }
        }
    }
}

/// The channels (of sixteen) whose eight positions [`transpose`]'s vector `c` holds in its
/// low and high halves.
const CHANNELS: [(usize, usize); 8] = [
    (0, 4),
    (8, 12),
    (1, 5),
    (9, 13),
    (2, 6),
    (10, 14),
    (3, 7),
    (11, 15),
];

/// The 8 × 16 block `r` (eight positions, sixteen channels each) as eight vectors, each
/// two channels' eight positions ([`CHANNELS`]): pairs interleaved within 128-bit lanes,
/// then quads, then the lanes of two quads gathered.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn transpose(r: [std::arch::x86_64::__m512; MR]) -> [std::arch::x86_64::__m512; MR] {
    use std::arch::x86_64::*;
    // Per 128-bit lane `L`: `a[2q]` = `[r_{2q}[4L], r_{2q+1}[4L], r_{2q}[4L+1],
    // r_{2q+1}[4L+1]]`, `a[2q+1]` the same for `4L + 2` and `4L + 3`.
    let a: [__m512; MR] = std::array::from_fn(|i| {
        let (x, y) = (r[i / 2 * 2], r[i / 2 * 2 + 1]);
        if i % 2 == 0 {
            _mm512_unpacklo_ps(x, y)
        } else {
            _mm512_unpackhi_ps(x, y)
        }
    });
    // `b[4h + j]`: positions `4h..4h + 4` of channel `4L + j`, in lane `L`.
    let b: [__m512; MR] = std::array::from_fn(|i| {
        let (h, j) = (i / 4, i % 4);
        let (x, y) = (a[4 * h + j / 2], a[4 * h + 2 + j / 2]);
        if j % 2 == 0 {
            _mm512_shuffle_ps::<0x44>(x, y)
        } else {
            _mm512_shuffle_ps::<0xEE>(x, y)
        }
    });
    // Lanes 0 and 1 (channels `j`, `4 + j`), or 2 and 3 (`8 + j`, `12 + j`), of
    // `b[j]` (positions 0..4) and `b[4 + j]` (4..8), interleaved by halves.
    let low = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    let high = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    std::array::from_fn(|c| {
        let j = c / 2;
        let idx = if c % 2 == 0 { low } else { high };
        _mm512_permutex2var_ps(b[j], idx, b[4 + j])
    })
}
