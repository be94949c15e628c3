//! The exact 8-bit integer product on AVX2 hosts without VNNI: the one register tile that
//! `ConvolutionInteger`, `QuantizedMatMul` and the narrowed recurrent products run where
//! `vpdpbusd` is missing, and [`IntegerPath`], the one choice among the integer kernels'
//! paths (VNNI, this tile, portable loops) for this host.
//!
//! The kernels keep their operands in the VNNI layout, each "column" a little-endian quad
//! of four values of consecutive `k` (`[ceil(K / 4), columns, 4]`). Here the quads of eight
//! columns, 8-bit ones widened to 16 bits in the tile (`vpmovzxbw` / `vpmovsxbw`) or
//! widened when the weights were packed ([`ColumnQuads`]), are multiplied by a row's quad,
//! also 16-bit, with `vpmaddwd`, which sums adjacent products into `i32` lanes: two lanes
//! per column, added at the end (`vphaddd`). A product of a UINT8 and an INT8 value, and
//! the sum of two, fit 16 and 32 bits, so every step is exact and the sums wrap modulo 2³²
//! exactly as the reference's do. (`vpmaddubsw`, which onnxruntime's AVX2 kernels use,
//! saturates the pair sum to 16 bits and is inexact beyond ±32767.)

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use crate::target::CpuFeatures;

mod layout;
pub(super) use layout::{narrow_rows, wide_panels};

/// Columns of one tile: eight quads, 32 bytes.
pub(super) const COLUMNS: usize = 8;

/// Rows of the tallest tile: 12 accumulators, two widened column vectors and a broadcast
/// fill 15 of the 16 `ymm` registers.
pub(super) const ROWS: usize = 6;

/// Which 8-bit product the integer kernels run on this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IntegerPath {
    /// AVX-512 VNNI tiles (`vpdpbusd`).
    Vnni,
    /// The AVX2 tile of this module.
    Avx2,
    /// A portable loop (other hosts).
    Portable,
}

impl IntegerPath {
    /// The fastest path this host runs: VNNI where it has AVX-512F and AVX-512 VNNI, else
    /// AVX2 where it has that, else the portable loop.
    pub(super) fn host() -> IntegerPath {
        let f = CpuFeatures::host();
        if cfg!(target_arch = "x86_64") && f.avx512f && f.avx512vnni {
            IntegerPath::Vnni
        } else if available() {
            IntegerPath::Avx2
        } else {
            IntegerPath::Portable
        }
    }
}

/// Whether [`tile`] runs on this host (AVX2).
pub(super) fn available() -> bool {
    cfg!(target_arch = "x86_64") && CpuFeatures::host().avx2
}

/// How a tile reads a group of eight column quads.
#[cfg(target_arch = "x86_64")]
pub(super) trait ColumnQuads {
    /// Bytes of one group: eight quads of this kind.
    const BYTES: usize;
    /// The group at `p` as two vectors of 16-bit values: columns 0-3 and 4-7, each a quad
    /// of `k` values.
    ///
    /// # Safety
    /// The host has AVX2; `Self::BYTES` bytes at `p` are readable.
    unsafe fn load(p: *const u8) -> (__m256i, __m256i);
}

/// Quads of 8-bit values, widened in the tile: INT8 where `SIGNED`, else UINT8.
#[cfg(target_arch = "x86_64")]
pub(super) struct Quads8<const SIGNED: bool>;

/// Quads of UINT8 values (a `ConvolutionInteger`'s fields).
#[cfg(target_arch = "x86_64")]
pub(super) type Unsigned8 = Quads8<false>;

/// Quads of INT8 values (narrowed recurrent weights).
#[cfg(target_arch = "x86_64")]
pub(super) type Signed8 = Quads8<true>;

/// Quads already widened to `i16` when the weights were packed (a `QuantizedMatMul`'s
/// panels): twice the bytes, two instructions fewer per group.
#[cfg(target_arch = "x86_64")]
pub(super) struct Wide16;

#[cfg(target_arch = "x86_64")]
impl<const SIGNED: bool> ColumnQuads for Quads8<SIGNED> {
    const BYTES: usize = 4 * COLUMNS;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> (__m256i, __m256i) {
        // SAFETY: 32 readable bytes at `p`, on an AVX2 host (the contract).
        unsafe {
            let (a, b) = (_mm_loadu_si128(p.cast()), _mm_loadu_si128(p.add(16).cast()));
            if SIGNED {
                (_mm256_cvtepi8_epi16(a), _mm256_cvtepi8_epi16(b))
            } else {
                (_mm256_cvtepu8_epi16(a), _mm256_cvtepu8_epi16(b))
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl ColumnQuads for Wide16 {
    const BYTES: usize = 8 * COLUMNS;
    #[inline(always)]
    unsafe fn load(p: *const u8) -> (__m256i, __m256i) {
        // SAFETY: 64 readable bytes at `p`, on an AVX2 host (the contract).
        unsafe {
            (
                _mm256_loadu_si256(p.cast()),
                _mm256_loadu_si256(p.add(32).cast()),
            )
        }
    }
}

/// The operands of one tile: `R` rows of 16-bit quads and eight columns of quads.
#[derive(Clone, Copy)]
pub(super) struct Operands {
    /// Row `r`'s quads from `rows + r · row_stride` (in `i16`): `4 · groups` values.
    pub rows: *const i16,
    pub row_stride: usize,
    /// Group `g`'s eight column quads at `columns + g · group_stride` (in bytes):
    /// [`ColumnQuads::BYTES`] bytes, read as the tile's column kind says.
    pub columns: *const u8,
    pub group_stride: usize,
    /// Groups of four `k` values.
    pub groups: usize,
}

/// `out[r][c] = Σ_g Σ_j rows[r][4g + j] · columns[g][c][j]` in wrapping `i32`, for the `R`
/// (`1..=ROWS`) rows and eight columns of `o`, the columns read as `C` says: row `r`'s
/// eight sums in order in vector `r`.
///
/// # Safety
/// The host has AVX2 ([`available`]); `o.rows` has `R` rows of `4 · o.groups` values at
/// stride `o.row_stride`; `o.columns` has `o.groups` groups of `C::BYTES` readable bytes at
/// stride `o.group_stride`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(super) unsafe fn tile<const R: usize, C: ColumnQuads>(o: &Operands) -> [__m256i; R] {
    let mut lo = [_mm256_setzero_si256(); R];
    let mut hi = [_mm256_setzero_si256(); R];
    for g in 0..o.groups {
        // SAFETY: the group's bytes are readable (this function's contract).
        let (x0, x1) = unsafe { C::load(o.columns.wrapping_add(g * o.group_stride)) };
        for (r, (lo, hi)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
            // SAFETY: values `4g..4g + 4` of row `r < R` are within the rows.
            let quad = unsafe {
                o.rows
                    .add(r * o.row_stride + 4 * g)
                    .cast::<i64>()
                    .read_unaligned()
            };
            let b = _mm256_set1_epi64x(quad);
            *lo = _mm256_add_epi32(*lo, _mm256_madd_epi16(x0, b));
            *hi = _mm256_add_epi32(*hi, _mm256_madd_epi16(x1, b));
        }
    }
    // Lanes hold column halves [c0 c0 c1 c1 | c2 c2 c3 c3] and [c4 .. | c6 ..]: the pairwise
    // sums come out as [c0 c1 c4 c5 | c2 c3 c6 c7], put in order by 64-bit lanes 0, 2, 1, 3.
    std::array::from_fn(|r| {
        _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_hadd_epi32(lo[r], hi[r]))
    })
}

/// [`tile`] for `rows` (`1..=ROWS`) rows, written into the first `rows` entries of `out`.
///
/// # Safety
/// As [`tile`] for `R = rows`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn tile_rows<C: ColumnQuads>(
    o: &Operands,
    rows: usize,
    out: &mut [[i32; COLUMNS]; ROWS],
) {
    #[target_feature(enable = "avx2")]
    fn put<const R: usize>(t: [__m256i; R], out: &mut [[i32; COLUMNS]; ROWS]) {
        for (o, v) in out.iter_mut().zip(t) {
            // SAFETY: `o` is eight `i32`.
            unsafe { _mm256_storeu_si256(o.as_mut_ptr().cast(), v) };
        }
    }
    // SAFETY: as this function's contract, `R` never above `rows`.
    unsafe {
        match rows {
            6.. => put(tile::<6, C>(o), out),
            5 => put(tile::<5, C>(o), out),
            4 => put(tile::<4, C>(o), out),
            3 => put(tile::<3, C>(o), out),
            2 => put(tile::<2, C>(o), out),
            _ => put(tile::<1, C>(o), out),
        }
    }
    const _: () = assert!(ROWS == 6);
}

/// Bytes of widened weights in one block of columns of [`wide_product`], read again by
/// every row tile (from L2).
const BLOCK_BYTES: usize = 128 << 10;

/// The product of `mr` rows of `a16` (`kp` values each, a multiple of 4, zero past `k`) by
/// the first `full` columns (a multiple of 8) of [`Wide16`] panels (`[full / 8, kp / 4, 8,
/// 4]`), each row of each tile handed to `store(row, col, sums)` (columns `col..col + 8`,
/// in order): by blocks of columns whose panels stay in L2, every row tile passing over a
/// block while it stays in L1.
///
/// # Panics
/// If `kp` is no multiple of 4, or `a16` or `panels` is shorter than that says.
///
/// # Safety
/// The host has AVX2 ([`available`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn wide_product(
    a16: &[i16],
    (mr, kp): (usize, usize),
    (panels, full): (&[i16], usize),
    mut store: impl FnMut(usize, usize, __m256i),
) {
    /// One tile of `R` rows from row `r`, column `col`, stored.
    ///
    /// # Safety
    /// As [`tile`] for `o`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn run<const R: usize>(
        o: &Operands,
        (r, col): (usize, usize),
        store: &mut impl FnMut(usize, usize, __m256i),
    ) {
        // SAFETY: as this function's contract.
        let sums = unsafe { tile::<R, Wide16>(o) };
        for (i, v) in sums.into_iter().enumerate() {
            store(r + i, col, v);
        }
    }
    assert!(kp % 4 == 0 && full % COLUMNS == 0);
    assert!(a16.len() >= mr * kp && panels.len() >= full * kp);
    let block = (BLOCK_BYTES / (2 * kp).max(1)).max(COLUMNS) / COLUMNS * COLUMNS;
    for cols in (0..full).step_by(block) {
        for r in (0..mr).step_by(ROWS) {
            for col in (cols..(cols + block).min(full)).step_by(COLUMNS) {
                let o = Operands {
                    rows: a16[r * kp..].as_ptr(),
                    row_stride: kp,
                    columns: panels[col * kp..].as_ptr().cast(),
                    group_stride: Wide16::BYTES,
                    groups: kp / 4,
                };
                let at = (r, col);
                // SAFETY: AVX2 (this function's contract); `a16` holds rows `r..r + R <= mr`
                // of `kp` values, and the panel of columns `col..col + 8 <= full` is `kp /
                // 4` groups of 64 bytes from `panels[col · kp]` (both checked above).
                unsafe {
                    match mr - r {
                        6.. => run::<6>(&o, at, &mut store),
                        5 => run::<5>(&o, at, &mut store),
                        4 => run::<4>(&o, at, &mut store),
                        3 => run::<3>(&o, at, &mut store),
                        2 => run::<2>(&o, at, &mut store),
                        _ => run::<1>(&o, at, &mut store),
                    }
                }
            }
        }
    }
    const _: () = assert!(ROWS == 6);
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// The tile of every height against the plain sum, for unsigned and signed columns (and
    /// the same widened beforehand), at the extremes (255 · -128 pairs, where a saturating 16-bit pair sum would be wrong)
    /// and at random.
    #[test]
    fn tile_equals_the_plain_sum() {
        if !available() {
            return;
        }
        let groups = 37;
        let mut s = 12345u64;
        let mut next = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
            (s >> 33) as u32
        };
        // (extreme row value, extreme column byte) for unsigned and for signed columns: the
        // largest magnitudes of a UINT8 x INT8 product either way round.
        for (signed, (row_max, col_max)) in [(false, (-128i16, 255u8)), (true, (255, 0x80))] {
            for extreme in [true, false] {
                let rows: Vec<i16> = (0..ROWS * 4 * groups)
                    .map(|_| {
                        if extreme {
                            row_max
                        } else {
                            (next() % 384) as i16 - 128
                        }
                    })
                    .collect();
                let cols: Vec<u8> = (0..groups * 32)
                    .map(|_| if extreme { col_max } else { next() as u8 })
                    .collect();
                let o = Operands {
                    rows: rows.as_ptr(),
                    row_stride: 4 * groups,
                    columns: cols.as_ptr(),
                    group_stride: 32,
                    groups,
                };
                for height in 1..=ROWS {
                    let mut got = [[0; COLUMNS]; ROWS];
                    let mut wide = [[0; COLUMNS]; ROWS];
                    let widened: Vec<i16> = cols
                        .iter()
                        .map(|&b| {
                            if signed {
                                i16::from(b as i8)
                            } else {
                                i16::from(b)
                            }
                        })
                        .collect();
                    let w = Operands {
                        columns: widened.as_ptr().cast(),
                        group_stride: Wide16::BYTES,
                        ..o
                    };
                    // SAFETY: AVX2 checked above; the buffers hold what `o` and `w` say.
                    unsafe {
                        if signed {
                            tile_rows::<Signed8>(&o, height, &mut got);
                        } else {
                            tile_rows::<Unsigned8>(&o, height, &mut got);
                        }
                        tile_rows::<Wide16>(&w, height, &mut wide);
                    }
                    assert_eq!(wide, got, "widened columns, signed {signed}");
                    for (r, row) in got.iter().enumerate().take(height) {
                        for (c, &v) in row.iter().enumerate() {
                            let want: i32 = (0..groups * 4)
                                .map(|k| {
                                    let b = cols[(k / 4) * 32 + c * 4 + k % 4];
                                    let b = if signed {
                                        i32::from(b as i8)
                                    } else {
                                        i32::from(b)
                                    };
                                    i32::from(rows[r * 4 * groups + k]) * b
                                })
                                .sum();
                            assert_eq!(v, want, "row {r} column {c} signed {signed}");
                        }
                    }
                }
            }
        }
    }
}
