//! `QuantizedMatMul` on the AVX2 integer tile (`int_avx2`, weights widened to `i16` when
//! the executable was compiled). The rows are quantized and widened a chunk at a time;
//! then each block of columns, whose widened panels stay in L2, is multiplied by every
//! row tile of the chunk, which stays in L1 while it passes over the block's panels. The
//! sums are dequantized in vector code as each tile is stored.

use super::{portable_rows, x86::quantize_row_avx2, Problem};
use crate::native::int_avx2::{self, ColumnQuads, Operands, Wide16, COLUMNS, ROWS};

/// Bytes of widened weights in one block of columns, read again by every row tile of a
/// chunk (from L2).
const BLOCK_BYTES: usize = 128 << 10;

/// Bytes of widened rows in one chunk, read again for every block of columns.
const CHUNK_BYTES: usize = 192 << 10;

/// Rows `first..first + c.len() / n` of `p`'s result into `c` (rows of `n`): the whole
/// blocks of eight columns on the tile, the last `n mod 8` in portable code.
///
/// # Safety
/// The host has AVX2; `p.panels` holds the `⌊n/8⌋` panels of `⌈k/4⌉` groups (64 bytes
/// each), and `p.x` the rows `first..first + c.len() / n` of `k` values.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn rows(p: &Problem<'_>, first: usize, c: &mut [f32]) {
    let (n, k) = (p.n, p.k);
    let kp = k.div_ceil(4) * 4;
    let rows = c.len() / n;
    let chunk = (CHUNK_BYTES / (2 * kp)).max(ROWS) / ROWS * ROWS;
    let block = (BLOCK_BYTES / (2 * kp)).max(COLUMNS) / COLUMNS * COLUMNS;
    let full = n - n % COLUMNS;
    // Quantized rows, zero past `k` (never written), and the same widened.
    let mut a = vec![0u8; chunk.min(rows) * kp];
    let mut a16 = vec![0i16; a.len()];
    let mut sums = [[0i32; COLUMNS]; ROWS];
    for (t, c) in c.chunks_mut(chunk * n).enumerate() {
        let mr = c.len() / n;
        let r0 = first + t * chunk;
        for i in 0..mr {
            let x = &p.x[(r0 + i) * k..(r0 + i + 1) * k];
            // SAFETY: the host has AVX2 (this function's contract); `x` and the row are
            // slices of one length, all the function reads and writes.
            unsafe {
                quantize_row_avx2(x, p.q.x_scale, p.q.x_zero_point, &mut a[i * kp..i * kp + k])
            };
        }
        for (w, &v) in a16.iter_mut().zip(&a[..mr * kp]) {
            *w = i16::from(v);
        }
        for cols in (0..full).step_by(block) {
            for r in (0..mr).step_by(ROWS) {
                let h = (mr - r).min(ROWS);
                for col in (cols..(cols + block).min(full)).step_by(COLUMNS) {
                    let o = Operands {
                        rows: a16[r * kp..].as_ptr(),
                        row_stride: kp,
                        columns: p.panels[col / COLUMNS * kp * COLUMNS..].as_ptr().cast(),
                        group_stride: Wide16::BYTES,
                        groups: kp / 4,
                    };
                    // SAFETY: AVX2 (this function's contract); `a16` holds rows `r..r + h`
                    // of `kp` values (`r + h <= mr`); the panel of columns `col..col + 8
                    // <= full` is `kp / 4` groups of 64 bytes inside the panels (as the
                    // contract says they are laid out).
                    unsafe { int_avx2::tile_rows::<Wide16>(&o, h, &mut sums) };
                    let at = r * n + col;
                    // SAFETY: AVX2; columns `col..col + 8 <= n` of `offset`, `scale` and of
                    // rows `r..r + h <= mr` of `c` (`mr` rows of `n`).
                    unsafe {
                        dequantize(
                            &sums[..h],
                            (&p.offset[col..], &p.scale[col..]),
                            &mut c[at..],
                            n,
                        )
                    };
                }
            }
        }
        if full < n {
            portable_rows(&a, mr, kp, p, (full..n, c));
        }
    }
}

/// `c[i · n + j] = (sums[i][j] + offset[j]) · scale[j]` for the rows of `sums` and eight
/// columns `j`, in vector code.
///
/// # Safety
/// The host has AVX2; `offset` and `scale` hold eight values, `c` at least `(sums.len() −
/// 1) · n + 8` (unchecked).
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn dequantize(
    sums: &[[i32; COLUMNS]],
    (offset, scale): (&[i32], &[f32]),
    c: &mut [f32],
    n: usize,
) {
    use std::arch::x86_64::*;
    // SAFETY: eight values of `offset` and `scale`, eight of each row of `sums`, and
    // `c[i · n..i · n + 8]` for each row `i` (this function's contract).
    unsafe {
        let off = _mm256_loadu_si256(offset.as_ptr().cast());
        let sc = _mm256_loadu_ps(scale.as_ptr());
        for (i, s) in sums.iter().enumerate() {
            let v = _mm256_add_epi32(_mm256_loadu_si256(s.as_ptr().cast()), off);
            let y = _mm256_mul_ps(_mm256_cvtepi32_ps(v), sc);
            _mm256_storeu_ps(c.as_mut_ptr().add(i * n), y);
        }
    }
}
