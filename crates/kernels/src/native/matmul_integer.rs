//! Integer `MatMul` (`i32`, wrapping, as the reference defines it) of operands computed at
//! run time: attention's products of quantized values less their zero points (`[-255,
//! 255]`), as the QDQ lowering writes them, and the `i32` products of imported integer
//! ops. Where every value of both operands fits 16 bits and the host has AVX2, each right
//! operand is laid out in the integer tile's widened panels (`int_avx2::wide_panels`) and
//! multiplied by the left one's rows narrowed to `i16`: `vpmaddwd`'s pair sums and the
//! tile's additions wrap modulo 2³² as the reference's sums do, so the result equals it bit
//! for bit. Other operands run in portable code, also exact.

use std::ops::Range;

use multiversion::multiversion;

use super::int_avx2::{self, COLUMNS};
use super::matmul::{batched, Problem};
use super::scratch::with_scratch;
use super::Epilogue;
use crate::parallel::Parallel;

/// Every product of `p` (`a` and `b` the left and right operands) into `c` (`batch · m ·
/// n`), each block handed to `epilogue` once written. Returns `false`, writing nothing,
/// where `k` is 0 or an operand is shorter than `p` says (the caller then runs the
/// reference).
pub(super) fn integer_matmul(
    c: &mut [i32],
    (a, b): (&[i32], &[i32]),
    p: &Problem,
    parallel: &Parallel,
    epilogue: Option<Epilogue<'_>>,
) -> bool {
    let (m, k, n) = (p.m, p.k, p.n);
    let count = p.offsets_a.len();
    let fits = k > 0
        && c.len() == count * m * n
        && p.offsets_a.iter().all(|&o| o + m * k <= a.len())
        && p.offsets_b.iter().all(|&o| o + k * n <= b.len());
    if !fits {
        return false;
    }
    batched(c, p, parallel, epilogue, |i, row0, c| {
        let rows = c.len() / n.max(1);
        let bi = &b[p.offsets_b[i]..p.offsets_b[i] + k * n];
        let ai = &a[p.offsets_a[i] + row0 * k..p.offsets_a[i] + (row0 + rows) * k];
        let done = wide_rows(ai, bi, (k, n), c);
        portable_rows(ai, bi, (k, n), done..n, c);
    });
    true
}

/// The whole blocks of eight columns of `a · b` (`a` `[rows, k]`, `b` `[k, n]`) into `c`
/// (`[rows, n]`) on the AVX2 tile, the operands narrowed to `i16` in this thread's scratch
/// buffers; returns how many columns it wrote (0 where the host lacks AVX2 or a value of
/// `a` or `b` does not fit 16 bits).
fn wide_rows(a: &[i32], b: &[i32], (k, n): (usize, usize), c: &mut [i32]) -> usize {
    let full = n - n % COLUMNS;
    let kp = k.div_ceil(4) * 4;
    let rows = c.len() / n.max(1);
    if !int_avx2::available() || full == 0 {
        return 0;
    }
    with_scratch(full * kp, |panels: &mut [i16]| {
        if !int_avx2::wide_panels(b, (k, n), panels) {
            return 0;
        }
        with_scratch(rows * kp, |a16: &mut [i16]| {
            if !int_avx2::narrow_rows(a, k, a16) {
                return 0;
            }
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the host has AVX2 (checked above).
            unsafe {
                wide_into(a16, (rows, kp), (panels, full), (c, n))
            };
            full
        })
    })
}

/// [`int_avx2::wide_product`] into `c` (rows of `n`), each tile row stored as it is.
///
/// # Safety
/// The host has AVX2; `c` holds `rows` rows of `n ≥ full` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn wide_into(
    a16: &[i16],
    (rows, kp): (usize, usize),
    (panels, full): (&[i16], usize),
    (c, n): (&mut [i32], usize),
) {
    use std::arch::x86_64::{__m256i, _mm256_storeu_si256};
    let store = |r: usize, col: usize, sums: __m256i| {
        // SAFETY: columns `col..col + 8 <= full <= n` of row `r < rows` are within `c`.
        unsafe { _mm256_storeu_si256(c[r * n + col..r * n + col + 8].as_mut_ptr().cast(), sums) }
    };
    // SAFETY: AVX2 (this function's contract).
    unsafe { int_avx2::wide_product(a16, (rows, kp), (panels, full), store) };
}

/// Columns `cols` of `a · b` (`a` `[rows, k]`, `b` `[k, n]`) into `c` (`[rows, n]`), in
/// wrapping `i32`.
#[multiversion(targets = "simd")]
fn portable_rows(a: &[i32], b: &[i32], (k, n): (usize, usize), cols: Range<usize>, c: &mut [i32]) {
    if cols.is_empty() {
        return;
    }
    for (out, a) in c.chunks_exact_mut(n).zip(a.chunks_exact(k)) {
        let out = &mut out[cols.clone()];
        out.fill(0);
        for (p, &x) in a.iter().enumerate() {
            let row = &b[p * n + cols.start..p * n + cols.end];
            for (o, &y) in out.iter_mut().zip(row) {
                *o = o.wrapping_add(x.wrapping_mul(y));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use graphlift_ir::{Shape, TensorData};
    use proptest::prelude::*;

    use crate::native::matmul::matmul;
    use crate::parallel::{Parallel, ThreadConfig};

    /// The native product of `a` `[da]` and `b` `[db]` and the reference's.
    fn both(
        (a, da): (Vec<i32>, &[usize]),
        (b, db): (Vec<i32>, &[usize]),
        threads: usize,
    ) -> (TensorData, TensorData) {
        let (sa, sb) = (Shape::new(da), Shape::new(db));
        let (a, b) = (TensorData::I32(a), TensorData::I32(b));
        let want = graphlift_runtime::reference::matmul(&a, &sa, &b, &sb).unwrap();
        let parallel = Parallel::new(ThreadConfig::with_threads(threads));
        let got = matmul((&a, &sa), (&b, &sb), None, &parallel, None, None).unwrap();
        (got, want)
    }

    /// Values at the ends of the 16-bit range (every pair sum `2 · 32768²` wraps), values
    /// just beyond it and far beyond it (the portable path), batches with a broadcast `b`,
    /// row, column and depth tails (depths past 16 and not, for the vector narrowing), on
    /// one thread and two.
    #[test]
    fn products_equal_the_reference_bit_for_bit() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[2, 3, 37, 70], &[2, 3, 70, 45]),
            (&[6, 400, 64], &[6, 64, 19]),
            (&[1, 9], &[9, 16]),
            (&[4, 13, 5], &[5, 8]),
        ];
        for threads in [1, 2] {
            for &(da, db) in cases {
                let (la, lb) = (da.iter().product::<usize>(), db.iter().product::<usize>());
                let ranges = [
                    (-32768i64, 65536i64),
                    (-32768, 2),
                    (-32769, 65538),
                    (-(1 << 40), 1 << 41),
                ];
                for (lo, span) in ranges {
                    let value = |i: usize| (lo + (i as i64 * 7919) % span) as i32;
                    let a = (0..la).map(value).collect();
                    let b = (0..lb).map(|i| value(i + 13)).collect();
                    let (got, want) = both((a, da), (b, db), threads);
                    assert_eq!(got, want, "{da:?} x {db:?}, from {lo}, {threads} threads");
                }
            }
        }
    }

    /// A single value out of the 16-bit range, in `a` or in `b`, at a vector lane or in a
    /// scalar tail, sends the product to the exact portable path.
    #[test]
    fn one_value_out_of_range_is_still_exact() {
        let (da, db): (&[usize], &[usize]) = (&[5, 37], &[37, 24]);
        for (in_a, at) in [(true, 3), (true, 36), (false, 5), (false, 36 * 24 + 17)] {
            let mut a: Vec<i32> = (0..5 * 37).map(|i| i % 511 - 255).collect();
            let mut b: Vec<i32> = (0..37 * 24).map(|i| (i * 3) % 511 - 255).collect();
            let v = if in_a { &mut a[at] } else { &mut b[at] };
            *v = 40000;
            let (got, want) = both((a, da), (b, db), 1);
            assert_eq!(got, want, "in a {in_a}, at {at}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// Random shapes of quantized values less their zero points equal the reference.
        #[test]
        fn quantized_differences_equal_the_reference(
            m in 1usize..20,
            k in 1usize..40,
            n in 1usize..40,
            batch in 1usize..4,
            seed in any::<u32>(),
        ) {
            let value = |i: usize| ((i as u32).wrapping_mul(2654435761) ^ seed) as i32 % 256;
            let a = (0..batch * m * k).map(value).collect();
            let b = (0..batch * k * n).map(|i| value(i + 1)).collect();
            let threads = 1 + (seed % 2) as usize;
            let (got, want) = both((a, &[batch, m, k]), (b, &[batch, k, n]), threads);
            prop_assert_eq!(got, want);
        }
    }
}
