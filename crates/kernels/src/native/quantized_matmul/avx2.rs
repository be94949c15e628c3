//! `QuantizedMatMul` on the AVX2 integer tile (`int_avx2`, weights widened to `i16` when
//! the executable was compiled). The rows are quantized and widened a chunk at a time,
//! then multiplied by blocks of columns (`int_avx2::wide_product`). The sums are
//! dequantized in vector code as each tile row is stored, and the epilogue runs on each
//! chunk's rows while they are still in L2.

use std::arch::x86_64::*;

use super::{portable_rows, x86::quantize_row_avx2, Problem};
use crate::native::epilogue::Epilogue;
use crate::native::int_avx2::{self, COLUMNS, ROWS};

/// Bytes of widened rows in one chunk, read again for every block of columns.
const CHUNK_BYTES: usize = 192 << 10;

/// Bytes of one chunk's results, which the epilogue reads back after the chunk.
const CHUNK_OUT_BYTES: usize = 256 << 10;

/// Rows `first..first + c.len() / n` of `p`'s result into `c` (rows of `n`): the whole
/// blocks of eight columns on the tile, the last `n mod 8` in portable code; each chunk
/// of rows handed to `epilogue` once written.
///
/// # Safety
/// The host has AVX2; `p.panels` holds the `⌊n/8⌋` panels of `⌈k/4⌉` groups (64 bytes
/// each), and `p.x` the rows `first..first + c.len() / n` of `k` values.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn rows(
    p: &Problem<'_>,
    first: usize,
    c: &mut [f32],
    epilogue: Option<&Epilogue<'_>>,
) {
    let (n, k) = (p.n, p.k);
    let kp = k.div_ceil(4) * 4;
    let rows = c.len() / n;
    let chunk = (CHUNK_BYTES / (2 * kp))
        .min(CHUNK_OUT_BYTES / (4 * n))
        .max(ROWS)
        / ROWS
        * ROWS;
    let full = n - n % COLUMNS;
    // Quantized rows, zero past `k` (never written), and the same widened.
    let mut a = vec![0u8; chunk.min(rows) * kp];
    let mut a16 = vec![0i16; a.len()];
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
        let store = |r: usize, col: usize, sums: __m256i| {
            // SAFETY: AVX2 (this function's contract); columns `col..col + 8 <= n` of
            // `offset`, `scale` and of row `r < mr` of `c` (`mr` rows of `n`), as
            // `wide_product` hands them.
            unsafe {
                let off = _mm256_loadu_si256(p.offset[col..col + 8].as_ptr().cast());
                let sc = _mm256_loadu_ps(p.scale[col..col + 8].as_ptr());
                let y = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(sums, off)), sc);
                _mm256_storeu_ps(c[r * n + col..r * n + col + 8].as_mut_ptr(), y);
            }
        };
        // SAFETY: AVX2 (this function's contract).
        unsafe { int_avx2::wide_product(&a16, (mr, kp), (&p.panels, full), store) };
        if full < n {
            portable_rows(&a, mr, kp, p, (full..n, c));
        }
        if let Some(e) = epilogue {
            e.run(r0 * n, c);
        }
    }
}
