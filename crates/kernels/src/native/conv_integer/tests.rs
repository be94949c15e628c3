//! The native integer convolution against the reference, bit for bit, on both paths.

use graphlift_ir::{Convolution, Shape, TensorData, Window};
use graphlift_runtime::reference;
use proptest::prelude::*;

use super::*;
use crate::parallel::ThreadConfig;

/// One problem: geometry, window, the operands' types and zero points, threads.
#[derive(Debug, Clone)]
struct Case {
    n: usize,
    groups: usize,
    cg: usize,
    mg: usize,
    spatial: Vec<usize>,
    kernel: Vec<usize>,
    strides: Vec<usize>,
    dilations: Vec<usize>,
    pads: (Vec<usize>, Vec<usize>),
    x_signed: bool,
    w_signed: bool,
    per_channel: bool,
    threads: usize,
    seed: u64,
}

/// Pseudo-random bytes from `seed`.
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed.wrapping_mul(6364136223846793005) | 1;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 56) as u8
        })
        .collect()
}

/// 8-bit data of the given signedness.
fn eight_bit(signed: bool, v: Vec<u8>) -> TensorData {
    if signed {
        TensorData::I8(v.into_iter().map(|b| b as i8).collect())
    } else {
        TensorData::U8(v)
    }
}

/// The reference's result for `case`, the dispatched native one on `case.threads` threads,
/// and those of the other paths the host runs (AVX2 where it has it, and the portable loop).
fn run(case: &Case) -> (TensorData, TensorData, Vec<TensorData>) {
    let (c, m) = (case.groups * case.cg, case.groups * case.mg);
    let mut sx = vec![case.n, c];
    sx.extend(&case.spatial);
    let mut sw = vec![m, case.cg];
    sw.extend(&case.kernel);
    let (sx, sw) = (Shape::new(sx), Shape::new(sw));
    let conv = Convolution {
        window: Window {
            shape: case.kernel.clone(),
            strides: case.strides.clone(),
            dilations: case.dilations.clone(),
            pads_begin: case.pads.0.clone(),
            pads_end: case.pads.1.clone(),
        },
        groups: case.groups,
    };
    let count = |s: &Shape| s.element_count().unwrap();
    let x = eight_bit(case.x_signed, bytes(case.seed, count(&sx)));
    let w = eight_bit(case.w_signed, bytes(case.seed ^ 0x5a5a, count(&sw)));
    let zs = bytes(case.seed ^ 0xabc, m + 1);
    let xz = eight_bit(case.x_signed, vec![zs[0]]);
    let (wz, swz) = if case.per_channel {
        (eight_bit(case.w_signed, zs[1..].to_vec()), Shape::new([m]))
    } else {
        (eight_bit(case.w_signed, vec![zs[1]]), Shape::scalar())
    };
    let want = reference::convolution_integer((&x, &sx), &xz, (&w, &sw), &wz, &conv).unwrap();
    let xt = Tensor::from_data(x, sx).unwrap();
    let xzt = Tensor::from_data(xz, Shape::scalar()).unwrap();
    let k = count(&sw) / m;
    let wt = Tensor::from_data(w, sw).unwrap();
    let wzt = Tensor::from_data(wz, swz).unwrap();
    let parallel = Parallel::new(ThreadConfig::with_threads(case.threads));
    let operands = [&xt, &xzt, &wt, &wzt];
    let got = convolution_integer(&conv, operands, None, &parallel, None).unwrap();
    let mut paths = vec![IntegerPath::Portable];
    if int_avx2::available() {
        paths.push(IntegerPath::Avx2);
    }
    // Every path with the filters as the call finds them, then as `prepare` packs them
    // (widened for the AVX2 tile).
    let prepared = PackedWeights::integer_filters(wt.data(), 2, (m, k), true).unwrap();
    let others = paths
        .into_iter()
        .flat_map(|path| [(path, None), (path, Some(&prepared))])
        .map(|on| convolution_integer_on(&conv, operands, None, &parallel, on).unwrap())
        .collect();
    (want, got, others)
}

/// Cases of rank 1 or 2 whose window fits the padded input.
fn cases() -> impl Strategy<Value = Case> {
    (1usize..3).prop_flat_map(|rank| {
        let v = |r: Range<usize>| prop::collection::vec(r, rank);
        (
            (1usize..3, 1usize..4, 1usize..6, 1usize..30),
            (v(1..12), v(1..4), v(1..3), v(1..3)),
            (v(0..3), v(0..3)),
            (any::<bool>(), any::<bool>(), any::<bool>()),
            (1usize..4, any::<u64>()),
        )
            .prop_map(
                |((n, groups, cg, mg), (spatial, kernel, strides, dilations), pads, t, (th, s))| {
                    let spatial = spatial
                        .iter()
                        .zip(&kernel)
                        .zip(&dilations)
                        .map(|((&e, &k), &d)| e.max((k - 1) * d + 1))
                        .collect();
                    Case {
                        n,
                        groups,
                        cg,
                        mg,
                        spatial,
                        kernel,
                        strides,
                        dilations,
                        pads,
                        x_signed: t.0,
                        w_signed: t.1,
                        per_channel: t.2,
                        threads: th,
                        seed: s,
                    }
                },
            )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    /// Every shape, stride, dilation, padding, group count, pairing of 8-bit types and zero
    /// point (per tensor or per channel) gives the reference's integers exactly, on both
    /// paths and on one to three threads.
    #[test]
    fn equals_the_reference(case in cases()) {
        let (want, got, others) = run(&case);
        prop_assert_eq!(&got, &want);
        for other in &others {
            prop_assert_eq!(other, &want);
        }
    }
}

/// A problem large enough to split over threads (by channel blocks, then by images and
/// groups), with pixel tails, a depthwise one, few pixels by many channels, and pointwise
/// ones.
#[test]
fn large_and_depthwise_problems_equal_the_reference() {
    let base = Case {
        n: 1,
        groups: 1,
        cg: 48,
        mg: 40,
        spatial: vec![23, 37],
        kernel: vec![3, 3],
        strides: vec![1, 1],
        dilations: vec![1, 1],
        pads: (vec![1, 1], vec![1, 1]),
        x_signed: false,
        w_signed: false,
        per_channel: false,
        threads: 3,
        seed: 11,
    };
    let depthwise = Case {
        n: 2,
        groups: 16,
        cg: 1,
        mg: 1,
        spatial: vec![30, 41],
        strides: vec![2, 2],
        x_signed: true,
        w_signed: true,
        per_channel: true,
        ..base.clone()
    };
    let grouped = Case {
        n: 3,
        groups: 2,
        cg: 24,
        mg: 24,
        x_signed: true,
        ..base.clone()
    };
    // Few pixels (15, then 30), many channels: the narrow tiles of 24 and 12 channels.
    let narrow = Case {
        mg: 50,
        spatial: vec![3, 5],
        threads: 1,
        ..base.clone()
    };
    let narrow2 = Case {
        spatial: vec![5, 6],
        w_signed: true,
        ..narrow.clone()
    };
    // Pointwise (the image is the fields) over two bands of rows, and grouped.
    let pointwise = Case {
        cg: 200,
        mg: 8,
        spatial: vec![33, 70],
        kernel: vec![1, 1],
        pads: (vec![0, 0], vec![0, 0]),
        threads: 2,
        ..base.clone()
    };
    let pointwise_grouped = Case {
        groups: 3,
        cg: 5,
        mg: 7,
        n: 2,
        x_signed: true,
        ..pointwise.clone()
    };
    let cases = [
        base,
        depthwise,
        grouped,
        narrow,
        narrow2,
        pointwise,
        pointwise_grouped,
    ];
    for case in cases {
        let (want, got, others) = run(&case);
        assert_eq!(got, want, "{case:?}");
        for other in others {
            assert_eq!(other, want, "{case:?}");
        }
    }
}
