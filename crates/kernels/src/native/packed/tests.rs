//! The packed path against a naive triple loop (f64 sums) over random shapes that cover
//! every tail in `m`, `n` and `k`, both sides packed, strided and offset operands, row
//! blocks that start inside the weights, and accumulation.

use proptest::prelude::*;

use super::*;
use graphlift_testkit::uniform;

/// `c = a · b` by a naive loop in `f64`: `a(i, p)` at `a[i · rs + p · ks]`, `b` row-major
/// `k × n`.
fn naive(a: &[f32], (rs, ks): (usize, usize), b: &[f32], (m, k, n): (usize, usize, usize)) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let s: f64 = (0..k)
                .map(|p| f64::from(a[i * rs + p * ks]) * f64::from(b[p * n + j]))
                .sum();
            c[i * n + j] = s as f32;
        }
    }
    c
}

/// Asserts `got` (row stride `ldc`) agrees with `want` (`m × n`) within the rounding of an
/// `f32` dot product of length `k` (values in [-1, 1)).
fn assert_close(got: &[f32], ldc: usize, want: &[f32], (m, k, n): (usize, usize, usize)) {
    let tol = 2.0 * (k.max(1) as f32) * f32::EPSILON;
    for i in 0..m {
        for j in 0..n {
            let (g, w) = (got[i * ldc + j], want[i * n + j]);
            assert!((g - w).abs() <= tol, "({i}, {j}) of {m}x{k}x{n}: {g} vs {w}");
        }
    }
}

fn host_has_avx512() -> bool {
    crate::target::CpuFeatures::host().avx512f
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Right weights packed, `a` strided (row-major or transposed), `c` with a wider row
    /// stride; then accumulating into it.
    #[test]
    fn right_packed(m in 1usize..30, k in 0usize..300, n in 1usize..110, transposed: bool, pad in 0usize..5) {
        let a = uniform(m * k, 1);
        let b = uniform(k * n, 2);
        let (rs, ks) = if transposed { (1, m) } else { (k, 1) };
        let w = PackedWeights::pack(&b, Side::Right, 1, (1, k, n)).unwrap();
        let ldc = n + pad;
        let mut c = vec![f32::NAN; m * ldc];
        let ran = product((&mut c, ldc), Lhs::Strided { data: &a, rs, ks }, Rhs::Packed { w: &w, matrix: 0 }, (m, k, n), false);
        prop_assert_eq!(ran, host_has_avx512());
        if !ran {
            return Ok(());
        }
        let want = naive(&a, (rs, ks), &b, (m, k, n));
        assert_close(&c, ldc, &want, (m, k, n));
        // Padding columns are never written.
        for i in 0..m {
            for j in n..ldc {
                prop_assert!(c[i * ldc + j].is_nan());
            }
        }
        let again = product((&mut c, ldc), Lhs::Strided { data: &a, rs, ks }, Rhs::Packed { w: &w, matrix: 0 }, (m, k, n), true);
        prop_assert!(again);
        let twice: Vec<f32> = want.iter().map(|v| 2.0 * v).collect();
        assert_close(&c, ldc, &twice, (m, 2 * k, n));
    }

    /// Left weights packed (the second of two matrices), `b` strided with a wider row, a
    /// block of rows that starts at a panel boundary inside the weights.
    #[test]
    fn left_packed(rows in 1usize..40, k in 0usize..200, n in 1usize..120, block in 0usize..3, pad in 0usize..7) {
        let a = uniform(2 * rows * k, 3);
        let ldb = n + pad;
        let b = uniform(k * ldb, 4);
        let w = PackedWeights::pack(&a, Side::Left, 0, (2, rows, k)).unwrap();
        let row0 = (block * 8).min(rows - rows % 8);
        let m = rows - row0;
        let mut c = vec![0f32; m * n];
        let ran = product((&mut c, n), Lhs::Packed { w: &w, matrix: 1, first_row: row0 }, Rhs::Strided { data: &b, ks: ldb }, (m, k, n), false);
        prop_assert_eq!(ran, host_has_avx512());
        if !ran {
            return Ok(());
        }
        // The dense `b` and matrix 1's rows `row0..`.
        let dense: Vec<f32> = (0..k).flat_map(|p| b[p * ldb..p * ldb + n].to_vec()).collect();
        let want = naive(&a[rows * k + row0 * k..], (k, 1), &dense, (m, k, n));
        assert_close(&c, n, &want, (m, k, n));
    }
}

/// Operands that do not hold their extents, a misaligned block of packed rows and weights
/// of the wrong side are declined, writing nothing.
#[test]
fn declines_what_does_not_fit() {
    let (m, k, n) = (9, 5, 17);
    let a = uniform(m * k, 1);
    let b = uniform(k * n, 2);
    let right = PackedWeights::pack(&b, Side::Right, 1, (1, k, n)).unwrap();
    let left = PackedWeights::pack(&a, Side::Left, 0, (1, m, k)).unwrap();
    let mut c = vec![7f32; m * n];
    let strided_a = Lhs::Strided { data: &a, rs: k, ks: 1 };
    let packed_b = Rhs::Packed { w: &right, matrix: 0 };
    assert!(!product((&mut c[1..], n), strided_a, packed_b, (m, k, n), false));
    assert!(!product((&mut c, n - 1), strided_a, packed_b, (m, k, n), false));
    let short_a = Lhs::Strided { data: &a[1..], rs: k, ks: 1 };
    assert!(!product((&mut c, n), short_a, packed_b, (m, k, n), false));
    assert!(!product((&mut c, n), strided_a, Rhs::Packed { w: &right, matrix: 1 }, (m, k, n), false));
    assert!(!product((&mut c, n), strided_a, Rhs::Packed { w: &left, matrix: 0 }, (m, k, n), false));
    let misaligned = Lhs::Packed { w: &left, matrix: 0, first_row: 1 };
    let dense_b = Rhs::Strided { data: &b, ks: n };
    assert!(!product((&mut c, n), misaligned, dense_b, (m - 1, k, n), false));
    let too_many = Lhs::Packed { w: &left, matrix: 0, first_row: 8 };
    assert!(!product((&mut c, n), too_many, dense_b, (2, k, n), false));
    assert!(c.iter().all(|&v| v == 7.0), "nothing written");
    assert!(PackedWeights::pack(&a, Side::Left, 0, (2, m, k)).is_none(), "short source");
}
