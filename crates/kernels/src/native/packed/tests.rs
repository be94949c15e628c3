//! The packed path against a naive triple loop (f64 sums) over random shapes that cover
//! every tail in `m`, `n` and `k`, both sides packed, strided and offset operands, row
//! blocks that start inside the weights, and accumulation.

use std::sync::Mutex;

use graphlift_ir::{Shape, TensorData};
use proptest::prelude::*;

use super::*;
use crate::native::convolution::convolution;
use crate::native::convolution_cases::{convolution_of, Case, CASES};
use crate::native::lanes::FloatTiles;
use crate::native::matmul::matmul;
use crate::native::Epilogue;
use crate::parallel::{Parallel, ThreadConfig};
use graphlift_testkit::uniform;

/// `c = a · b` by a naive loop in `f64`: `a(i, p)` at `a[i · rs + p · ks]`, `b` row-major
/// `k × n`.
fn naive(
    a: &[f32],
    (rs, ks): (usize, usize),
    b: &[f32],
    (m, k, n): (usize, usize, usize),
) -> Vec<f32> {
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
            assert!(
                (g - w).abs() <= tol,
                "({i}, {j}) of {m}x{k}x{n}: {g} vs {w}"
            );
        }
    }
}

/// Whether the host runs a packed microkernel (AVX-512F, or AVX2 and FMA).
fn host_runs_a_kernel() -> bool {
    crate::native::lanes::FloatTiles::host().is_some()
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
        prop_assert_eq!(ran, host_runs_a_kernel());
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

    /// Part of the rows of the second of two right-packed matrices: the product over rows
    /// `first..first + k` ([`Rhs::PackedRows`]) and the one-row product over any range of
    /// columns ([`gemv`]), against the same rows of `b` multiplied naively.
    #[test]
    fn packed_rows_and_gemv(m in 1usize..12, rows in 1usize..90, n in 1usize..260, split in 0.0..1.0f64, cols in (0.0..1.0f64, 0.0..1.0f64)) {
        let b = uniform(2 * rows * n, 5);
        let w = PackedWeights::pack(&b, Side::Right, 1, (2, rows, n)).unwrap();
        let first = (split * rows as f64) as usize;
        let k = rows - first;
        let part = &b[(rows + first) * n..2 * rows * n];
        let a = uniform(m * k, 6);
        let want = naive(&a, (k, 1), part, (m, k, n));
        let mut c = vec![f32::NAN; m * n];
        let ran = product((&mut c, n), Lhs::Strided { data: &a, rs: k, ks: 1 }, Rhs::PackedRows { w: &w, matrix: 1, first }, (m, k, n), false);
        prop_assert_eq!(ran, host_runs_a_kernel());
        if !ran {
            return Ok(());
        }
        assert_close(&c, n, &want, (m, k, n));
        let (lo, hi) = ((cols.0 * n as f64) as usize, (cols.1 * n as f64) as usize);
        let range = lo.min(hi)..lo.max(hi);
        let mut out = vec![f32::NAN; range.len()];
        prop_assert!(gemv(&w, 1, first, &a[..k], range.clone(), &mut out));
        assert_close(&out, out.len(), &want[range], (1, k, out.len()));
        // A range past the columns, or an output of another length, is refused.
        prop_assert!(!gemv(&w, 1, first, &a[..k], 0..n + 1, &mut vec![0.0; n + 1]));
        prop_assert!(!gemv(&w, 1, first, &a[..k], 0..n, &mut vec![0.0; n + 1]));
        prop_assert!(!gemv(&w, 2, first, &a[..k], 0..n, &mut vec![0.0; n]));
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
        prop_assert_eq!(ran, host_runs_a_kernel());
        if !ran {
            return Ok(());
        }
        // The dense `b` and matrix 1's rows `row0..`.
        let dense: Vec<f32> = (0..k).flat_map(|p| b[p * ldb..p * ldb + n].to_vec()).collect();
        let want = naive(&a[rows * k + row0 * k..], (k, 1), &dense, (m, k, n));
        assert_close(&c, n, &want, (m, k, n));
    }

    /// Left weights packed, `b`'s rows windows of one buffer at arbitrary (overlapping,
    /// repeated, unordered) offsets, as a convolution's implicit fields are.
    #[test]
    fn rows_at_offsets(m in 1usize..20, k in 0usize..300, n in 1usize..120, seed in 0usize..1000) {
        let a = uniform(m * k, 5);
        let data = uniform(n + 97, 6);
        let rows: Vec<usize> = (0..k).map(|p| (p * 31 + seed) % 98).collect();
        let w = PackedWeights::pack(&a, Side::Left, 0, (1, m, k)).unwrap();
        let mut c = vec![0f32; m * n];
        let ran = product((&mut c, n), Lhs::Packed { w: &w, matrix: 0, first_row: 0 }, Rhs::Rows { data: &data, rows: &rows }, (m, k, n), false);
        prop_assert_eq!(ran, host_runs_a_kernel());
        if !ran {
            return Ok(());
        }
        let dense: Vec<f32> = rows.iter().flat_map(|&r| data[r..r + n].to_vec()).collect();
        let want = naive(&a, (k, 1), &dense, (m, k, n));
        assert_close(&c, n, &want, (m, k, n));
        // A row offset that leaves the buffer is declined.
        if k > 0 {
            let mut far = rows.clone();
            far[k - 1] = 98;
            let declined = product((&mut c, n), Lhs::Packed { w: &w, matrix: 0, first_row: 0 }, Rhs::Rows { data: &data, rows: &far }, (m, k, n), false);
            prop_assert!(!declined);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Random convolutions on packed filters (every stride, dilation and padding up to 3,
    /// windows up to 4x4, output rows wide enough for the implicit fields or not, one to
    /// three threads) agree with the reference, the epilogue seeing each output once.
    #[test]
    fn random_convolutions_on_packed_filters(
        (c, m, groups) in (1usize..4, 1usize..4, 1usize..3).prop_map(|(c, m, g)| (c * g, 8 * m, g)),
        (h, w) in (1usize..12, 1usize..110),
        (kh, kw) in (1usize..5, 1usize..5),
        strides in (1usize..4, 1usize..4),
        dilations in (1usize..3, 1usize..3),
        pads in (0usize..3, 0usize..3, 0usize..3, 0usize..3),
        threads in 1usize..4,
    ) {
        let (eh, ew) = ((kh - 1) * dilations.0 + 1, (kw - 1) * dilations.1 + 1);
        prop_assume!(h + pads.0 + pads.2 >= eh && w + pads.1 + pads.3 >= ew);
        let case: crate::native::convolution_cases::Case = (
            [1, c, h, w],
            [m, c / groups, kh, kw],
            groups,
            [strides.0, strides.1],
            [dilations.0, dilations.1],
            [pads.0, pads.1],
            [pads.2, pads.3],
        );
        let (got, want, depth) = convolve_packed(&case, threads, 1.0, false);
        prop_assert_eq!(got.len(), want.len());
        for (a, b) in got.iter().zip(&want) {
            prop_assert!((a - b).abs() <= 4.0 * depth as f32 * f32::EPSILON, "{:?}: {} vs {}", case, a, b);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A product over runs of columns (an implicit convolution's band of output rows: `b`
    /// read every `b_stride`, `c` written every `c_stride`) into rows of their own agrees
    /// with the naive product of the gathered columns, on every microkernel the host runs,
    /// and leaves every element of `c` outside the runs as it was.
    #[test]
    fn runs_of_columns_into_rows_of_their_own(
        m in 1usize..60, k in 1usize..200, runs in 1usize..5, width in 1usize..70,
        wrap in 0usize..5, gap in 0usize..3,
    ) {
        let (b_stride, c_stride) = (width + wrap, width + gap);
        let a = uniform(m * k, 11);
        let left = PackedWeights::pack(&a, Side::Left, 0, (1, m, k)).unwrap();
        let span = (runs - 1) * b_stride + width;
        let data = uniform(span + 40, 12);
        let offsets: Vec<usize> = (0..k).map(|p| (p * 13) % 41).collect();
        // The gathered `k × (runs · width)` operand.
        let n = runs * width;
        let dense: Vec<f32> = offsets
            .iter()
            .flat_map(|&o| (0..runs).flat_map(move |r| (0..width).map(move |j| o + r * b_stride + j)))
            .map(|at| data[at])
            .collect();
        let want = naive(&a, (k, 1), &dense, (m, k, n));
        let columns = driver::Columns { runs, width, b_first: 0, b_stride, c_stride };
        let c_len = (runs - 1) * c_stride + width + 3;
        for kernel in FloatTiles::on_host() {
            let mut rows: Vec<Vec<f32>> = vec![vec![f32::NAN; c_len]; m];
            let mut out: Vec<&mut [f32]> = rows.iter_mut().map(|r| r.as_mut_slice()).collect();
            let lhs = Lhs::Packed { w: &left, matrix: 0, first_row: 0 };
            let rhs = Rhs::Rows { data: &data, rows: &offsets };
            prop_assert!(driver::product_on(kernel, Out::Rows(&mut out), (lhs, rhs), (m, k), columns, false));
            let got: Vec<f32> = rows
                .iter()
                .flat_map(|row| (0..runs).flat_map(move |r| row[r * c_stride..r * c_stride + width].to_vec()))
                .collect();
            assert_close(&got, n, &want, (m, k, n));
            for row in &rows {
                for (j, v) in row.iter().enumerate() {
                    let inside = j / c_stride < runs && j % c_stride < width;
                    prop_assert!(inside || v.is_nan(), "{:?}: column {} written", kernel, j);
                }
            }
        }
    }

    /// Every microkernel the host runs (AVX-512 and AVX2 on an AVX-512 host) gives the same
    /// bits, within the rounding of the naive product, for left-packed, right-packed and
    /// row-offset operands, fresh and accumulated, and for `gemv`: each sums in order of
    /// `p` with one fused multiply-add per step.
    #[test]
    fn every_microkernel_gives_the_same_bits(m in 1usize..60, k in 1usize..300, n in 1usize..120, seed in 0usize..1000) {
        let a = uniform(m * k, 7);
        let b = uniform(k * n, 8);
        let left = PackedWeights::pack(&a, Side::Left, 0, (1, m, k)).unwrap();
        let right = PackedWeights::pack(&b, Side::Right, 1, (1, k, n)).unwrap();
        let data = uniform(n + 97, 9);
        let rows: Vec<usize> = (0..k).map(|p| (p * 31 + seed) % 98).collect();
        let dense: Vec<f32> = rows.iter().flat_map(|&r| data[r..r + n].to_vec()).collect();
        let operands = [
            (Lhs::Packed { w: &left, matrix: 0, first_row: 0 }, Rhs::Strided { data: &b, ks: n }, b.as_slice()),
            (Lhs::Strided { data: &a, rs: k, ks: 1 }, Rhs::Packed { w: &right, matrix: 0 }, b.as_slice()),
            (Lhs::Packed { w: &left, matrix: 0, first_row: 0 }, Rhs::Rows { data: &data, rows: &rows }, dense.as_slice()),
        ];
        for (lhs, rhs, b_dense) in operands {
            let want = naive(&a, (k, 1), b_dense, (m, k, n));
            let mut first: Option<Vec<f32>> = None;
            for kernel in FloatTiles::on_host() {
                let mut c = vec![f32::NAN; m * n];
                let flat = driver::Columns::flat(n);
                prop_assert!(driver::product_on(kernel, Out::Strided(&mut c, n), (lhs, rhs), (m, k), flat, false));
                assert_close(&c, n, &want, (m, k, n));
                prop_assert!(driver::product_on(kernel, Out::Strided(&mut c, n), (lhs, rhs), (m, k), flat, true));
                match &first {
                    None => first = Some(c),
                    Some(f) => prop_assert!(f.iter().zip(&c).all(|(x, y)| x.to_bits() == y.to_bits()), "{:?}", kernel),
                }
            }
        }
        let mut first: Option<Vec<f32>> = None;
        for kernel in FloatTiles::on_host() {
            let mut out = vec![f32::NAN; n];
            prop_assert!(gemv::gemv_on(kernel, (&right, 0, 0), &a[..k], 0..n, &mut out));
            assert_close(&out, n, &naive(&a[..k], (k, 1), &b, (1, k, n)), (1, k, n));
            match &first {
                None => first = Some(out),
                Some(f) => prop_assert!(f.iter().zip(&out).all(|(x, y)| x.to_bits() == y.to_bits()), "gemv {:?}", kernel),
            }
        }
    }
}

/// Operands that do not hold their extents, a misaligned block of packed rows and weights
/// of the wrong side are declined, writing nothing.
/// A product whose `c` outgrows L2 runs each micro-panel through every block of `k`
/// (`driver::column_outer`): packed and strided `b`, three blocks of `k` (the last a step
/// shorter), a wider row stride of `c`, then accumulating into it.
#[test]
fn large_outputs_take_each_panel_through_every_block_of_k() {
    let (m, k, n) = (32, 1100, 4105);
    let depth = super::driver::block_len(k, super::driver::KC);
    assert_eq!(depth, 367);
    assert!(super::driver::column_outer((m, k, n), depth));
    let a = uniform(m * k, 11);
    let b = uniform(k * n, 12);
    let w = PackedWeights::pack(&b, Side::Right, 1, (1, k, n)).unwrap();
    let want = naive(&a, (k, 1), &b, (m, k, n));
    let twice: Vec<f32> = want.iter().map(|v| 2.0 * v).collect();
    let lhs = Lhs::Strided {
        data: &a,
        rs: k,
        ks: 1,
    };
    for rhs in [
        Rhs::Packed { w: &w, matrix: 0 },
        Rhs::Strided { data: &b, ks: n },
    ] {
        let ldc = n + 3;
        let mut c = vec![f32::NAN; m * ldc];
        if !product((&mut c, ldc), lhs, rhs, (m, k, n), false) {
            assert!(!host_runs_a_kernel());
            return;
        }
        assert_close(&c, ldc, &want, (m, k, n));
        assert!((0..m).all(|i| c[i * ldc + n..(i + 1) * ldc].iter().all(|v| v.is_nan())));
        assert!(product((&mut c, ldc), lhs, rhs, (m, k, n), true));
        assert_close(&c, ldc, &twice, (m, 2 * k, n));
    }
}

#[test]
fn declines_what_does_not_fit() {
    let (m, k, n) = (9, 5, 17);
    let a = uniform(m * k, 1);
    let b = uniform(k * n, 2);
    let right = PackedWeights::pack(&b, Side::Right, 1, (1, k, n)).unwrap();
    let left = PackedWeights::pack(&a, Side::Left, 0, (1, m, k)).unwrap();
    let mut c = vec![7f32; m * n];
    let strided_a = Lhs::Strided {
        data: &a,
        rs: k,
        ks: 1,
    };
    let packed_b = Rhs::Packed {
        w: &right,
        matrix: 0,
    };
    assert!(!product(
        (&mut c[1..], n),
        strided_a,
        packed_b,
        (m, k, n),
        false
    ));
    assert!(!product(
        (&mut c, n - 1),
        strided_a,
        packed_b,
        (m, k, n),
        false
    ));
    let short_a = Lhs::Strided {
        data: &a[1..],
        rs: k,
        ks: 1,
    };
    assert!(!product((&mut c, n), short_a, packed_b, (m, k, n), false));
    assert!(!product(
        (&mut c, n),
        strided_a,
        Rhs::Packed {
            w: &right,
            matrix: 1
        },
        (m, k, n),
        false
    ));
    assert!(!product(
        (&mut c, n),
        strided_a,
        Rhs::Packed {
            w: &left,
            matrix: 0
        },
        (m, k, n),
        false
    ));
    let misaligned = Lhs::Packed {
        w: &left,
        matrix: 0,
        first_row: 1,
    };
    let dense_b = Rhs::Strided { data: &b, ks: n };
    assert!(!product(
        (&mut c, n),
        misaligned,
        dense_b,
        (m - 1, k, n),
        false
    ));
    let too_many = Lhs::Packed {
        w: &left,
        matrix: 0,
        first_row: 8,
    };
    assert!(!product((&mut c, n), too_many, dense_b, (2, k, n), false));
    assert!(c.iter().all(|&v| v == 7.0), "nothing written");
    assert!(
        PackedWeights::pack(&a, Side::Left, 0, (2, m, k)).is_none(),
        "short source"
    );
}

/// The `f32` elements of `t`.
fn f32s(t: &TensorData) -> &[f32] {
    match t {
        TensorData::F32(v) => v,
        _ => panic!("not f32"),
    }
}

/// Matrices in the batch dimensions of `dims`.
fn matrices(dims: &[usize]) -> usize {
    dims[..dims.len() - 2].iter().product()
}

/// Records an epilogue's block: its first index and its elements as they are.
fn record_block(seen: &Mutex<Vec<(usize, Vec<f32>)>>, block: crate::native::Block) {
    // SAFETY: `Block::first` points at `len` initialized `f32` for this call.
    let v = unsafe { std::slice::from_raw_parts(block.first.cast::<f32>(), block.len) };
    seen.lock().unwrap().push((block.begin, v.to_vec()));
}

/// Asserts the recorded epilogue blocks cover `got` exactly once, each as written there.
fn assert_tiles(seen: Mutex<Vec<(usize, Vec<f32>)>>, got: &[f32], what: &str) {
    let mut seen = seen.into_inner().unwrap();
    seen.sort_by_key(|s| s.0);
    let mut next = 0;
    for (begin, v) in seen {
        assert_eq!(begin, next, "{what}: blocks tile the result");
        assert_eq!(v, got[begin..begin + v.len()], "{what}: a block as written");
        next = begin + v.len();
    }
    assert_eq!(next, got.len(), "{what}: blocks cover the result");
}

/// The result the epilogue's recorded blocks make up, asserting that they cover `len`
/// elements exactly once.
fn assemble(seen: Mutex<Vec<(usize, Vec<f32>)>>, len: usize, what: &str) -> Vec<f32> {
    let mut out = vec![f32::NAN; len];
    let mut covered = vec![false; len];
    for (begin, v) in seen.into_inner().unwrap() {
        for (i, x) in v.into_iter().enumerate() {
            assert!(!covered[begin + i], "{what}: element {} twice", begin + i);
            (covered[begin + i], out[begin + i]) = (true, x);
        }
    }
    assert!(
        covered.iter().all(|&c| c),
        "{what}: blocks cover the result"
    );
    out
}

/// Convolves seeded data of `case` with its filter packed from `scale` times the filter, on
/// `threads` threads, recording the epilogue's blocks (checked to tile the result): the
/// result, the reference's result for the unscaled filter, and the window's depth. With
/// `sole`, the epilogue is the result's [sole reader](Epilogue::sole_reader), and the result
/// returned is the one its blocks make up (the producer may leave its own unwritten).
fn convolve_packed(
    case: &Case,
    threads: usize,
    scale: f32,
    sole: bool,
) -> (Vec<f32>, Vec<f32>, usize) {
    let (dx, df) = (case.0, case.1);
    let parallel = Parallel::new(ThreadConfig::with_threads(threads));
    let conv = convolution_of(case);
    let (sx, sf) = (Shape::new(dx), Shape::new(df));
    let x = TensorData::F32(uniform(sx.element_count().unwrap(), 7));
    let f = uniform(sf.element_count().unwrap(), 8);
    let scaled: Vec<f32> = f.iter().map(|v| scale * v).collect();
    let depth = df[1] * df[2] * df[3];
    let w = PackedWeights::pack(&scaled, Side::Left, 1, (case.2, df[0] / case.2, depth)).unwrap();
    let f = TensorData::F32(f);
    let xt = Tensor::from_data(x.clone(), sx.clone()).unwrap();
    let ft = Tensor::from_data(f.clone(), sf.clone()).unwrap();
    let seen = Mutex::new(Vec::new());
    let record = |block: crate::native::Block| record_block(&seen, block);
    let epilogue = match sole {
        true => Epilogue::sole_reader(&record),
        false => Epilogue::new(&record),
    };
    let got = convolution(&xt, &ft, &conv, None, &parallel, (Some(epilogue), Some(&w))).unwrap();
    let want = graphlift_runtime::reference::convolution(&x, &sx, &f, &sf, &conv).unwrap();
    let (got, want) = (f32s(&got).to_vec(), f32s(&want).to_vec());
    let what = format!("{dx:?} {df:?}, {threads} threads, sole reader: {sole}");
    if sole {
        return (assemble(seen, got.len(), &what), want, depth);
    }
    assert_tiles(seen, &got, &what);
    (got, want, depth)
}

/// `MatMul` with packed weights (either side, batch broadcasting, rows split over 1 to 3
/// threads, blocks of packed rows starting inside the weights) agrees with the reference,
/// and its epilogue sees every element of the result exactly once, as written. The
/// weights are packed from twice the constant, so on a host with a packed microkernel the
/// result must be twice the reference: the product provably read the packed panels.
#[test]
fn matmul_on_packed_weights_agrees_with_the_reference() {
    let cases: &[(&[usize], &[usize], Side)] = &[
        (&[2, 3, 13, 20], &[20, 50], Side::Right),
        // One-row products sharing their weights (a classifier head over a sequence),
        // folded into one product of 30 rows.
        (&[30, 1, 20], &[1, 20, 50], Side::Right),
        (&[2, 1, 9, 33], &[3, 33, 49], Side::Right),
        (&[130, 70], &[70, 97], Side::Right),
        // Deeper than one block of `k`: three blocks, and two.
        (&[20, 1100], &[1100, 70], Side::Right),
        (&[2, 30, 600], &[600, 20], Side::Left),
        // Fewer rows than columns: on more than one thread, split by blocks of columns
        // (the last one part of a panel), one product and two with their own weights.
        (&[40, 80], &[80, 700], Side::Right),
        (&[2, 24, 64], &[2, 64, 300], Side::Right),
        (&[2, 17, 40], &[2, 40, 8], Side::Left),
        (&[1, 100, 64], &[3, 64, 30], Side::Left),
        (&[70, 128], &[128, 60], Side::Left),
        (&[12, 0], &[0, 5], Side::Right),
    ];
    let on_packed = host_runs_a_kernel();
    for threads in 1..=3 {
        let parallel = Parallel::new(ThreadConfig::with_threads(threads));
        for &(da, db, side) in cases {
            let (sa, sb) = (Shape::new(da), Shape::new(db));
            let a = uniform(sa.element_count().unwrap(), 5);
            let b = uniform(sb.element_count().unwrap(), 6);
            let (input, dims, src) = match side {
                Side::Left => (0, da, &a),
                _ => (1, db, &b),
            };
            let doubled: Vec<f32> = src.iter().map(|v| 2.0 * v).collect();
            let [.., rows, cols] = dims else { panic!() };
            let w =
                PackedWeights::pack(&doubled, side, input, (matrices(dims), *rows, *cols)).unwrap();
            let (a, b) = (TensorData::F32(a), TensorData::F32(b));
            let seen = Mutex::new(Vec::new());
            let record = |block: crate::native::Block| record_block(&seen, block);
            let epilogue = Epilogue::new(&record);
            let got = matmul(
                (&a, &sa),
                (&b, &sb),
                None,
                &parallel,
                Some(epilogue),
                Some(&w),
            )
            .unwrap();
            let want = graphlift_runtime::reference::matmul(&a, &sa, &b, &sb).unwrap();
            let (got, want) = (f32s(&got), f32s(&want));
            assert_eq!(got.len(), want.len(), "{da:?} x {db:?}");
            let scale = if on_packed { 2.0 } else { 1.0 };
            let k = da[da.len() - 1] as f32;
            for (x, y) in got.iter().zip(want) {
                assert!(
                    (x - scale * y).abs() <= 4.0 * k.max(1.0) * f32::EPSILON,
                    "{da:?} x {db:?}, {threads} threads: {x} vs {scale} * {y}"
                );
            }
            assert_tiles(seen, got, &format!("{da:?} x {db:?}, {threads} threads"));
        }
    }
}

/// Convolutions (dense, grouped, pointwise, strided, dilated, padded, banded, split over
/// threads by tasks, filters or bands of output rows) with their filters packed per group
/// agree with the reference, and the epilogue sees every output element once, as written;
/// as above, the filters are packed doubled, so on a host with a packed microkernel every
/// non-depthwise result doubles. A sole-reading epilogue sees the same result, from the
/// producer's scratch where it runs by bands.
#[test]
fn convolution_on_packed_filters_agrees_with_the_reference() {
    let on_packed = host_runs_a_kernel();
    for (threads, sole) in (1..=3).flat_map(|t| [(t, false), (t, true)]) {
        for case in CASES {
            let (dx, df) = (case.0, case.1);
            let (got, want, depth) = convolve_packed(case, threads, 2.0, sole);
            assert_eq!(got.len(), want.len());
            let per_group = df[0] / case.2;
            let depthwise = per_group == 1 && df[1] == 1;
            let scale = if on_packed && !depthwise { 2.0 } else { 1.0 };
            for (a, b) in got.iter().zip(&want) {
                assert!(
                    (a - scale * b).abs() <= 4.0 * depth as f32 * f32::EPSILON,
                    "{dx:?} {df:?}, {threads} threads, sole {sole}: {a} vs {scale} * {b}"
                );
            }
        }
    }
}
