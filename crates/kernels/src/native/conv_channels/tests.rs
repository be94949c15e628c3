//! The channel-lane convolutions against the reference on shapes that exercise every
//! path: planes that end inside a tile of eight positions, groups, strides, dilations,
//! uneven padding, 1-D convolutions, filters that end inside a vector and inside a panel,
//! and calls split over threads by blocks of positions; and the decision of which
//! convolutions take them.

use std::sync::Mutex;

use graphlift_ir::{Shape, TensorData};
use graphlift_runtime::Tensor;
use graphlift_testkit::uniform;

use super::*;
use crate::native::convolution::convolution;
use crate::native::convolution_cases::{convolution_of, Case};
use crate::native::lanes::FloatTiles;
use crate::parallel::ThreadConfig;

/// (x, filter, groups, strides, dilations, pads begin, pads end).
const CASES: &[Case] = &[
    // 13x13: 169 positions, the last tile one position; 32 filters, two vectors.
    (
        [1, 8, 13, 13],
        [32, 8, 3, 3],
        1,
        [1, 1],
        [1, 1],
        [1, 1],
        [1, 1],
    ),
    // Two groups of 48 filters (one whole panel each), stride 2, two images.
    (
        [2, 16, 26, 26],
        [96, 8, 3, 3],
        2,
        [2, 2],
        [1, 1],
        [1, 1],
        [1, 1],
    ),
    // 50 filters: a panel and two filters of the next; dilated, unevenly padded.
    (
        [1, 4, 7, 9],
        [50, 4, 3, 3],
        1,
        [1, 1],
        [2, 1],
        [2, 1],
        [1, 2],
    ),
    // Stride 3 with a 2x2 window, 20 filters (the second vector four lanes).
    (
        [1, 5, 11, 10],
        [20, 5, 2, 2],
        1,
        [3, 3],
        [1, 1],
        [0, 1],
        [1, 0],
    ),
    // Large enough to split over threads by blocks of positions.
    (
        [1, 32, 20, 20],
        [64, 32, 3, 3],
        1,
        [1, 1],
        [1, 1],
        [1, 1],
        [1, 1],
    ),
    // A pointwise 7x7 plane (the image its own fields), 44 filters (a partial vector).
    (
        [1, 24, 7, 7],
        [44, 24, 1, 1],
        1,
        [1, 1],
        [1, 1],
        [0, 0],
        [0, 0],
    ),
    // A 1x1 window with stride 2 (read in place, not pointwise).
    (
        [1, 24, 14, 14],
        [16, 24, 1, 1],
        1,
        [2, 2],
        [1, 1],
        [0, 0],
        [0, 0],
    ),
];

/// Convolves seeded data of `x_dims` with `f_dims` filters under `conv` on `threads`
/// threads, the filters packed for the channel lanes from twice their values, and checks
/// the result against the reference (doubled where the host runs the tiles) and that the
/// epilogue saw every element once.
fn check(x_dims: &[usize], f_dims: &[usize], conv: &Convolution, threads: usize) {
    let (sx, sf) = (Shape::new(x_dims), Shape::new(f_dims));
    let x = TensorData::F32(uniform(sx.element_count().unwrap(), 3));
    let f = uniform(sf.element_count().unwrap(), 4);
    let doubled: Vec<f32> = f.iter().map(|v| 2.0 * v).collect();
    let (m, depth): (usize, usize) = (f_dims[0], f_dims[1..].iter().product());
    let groups = conv.groups;
    let w = PackedWeights::pack_transposed(&doubled, 1, (groups, m / groups, depth)).unwrap();
    let f = TensorData::F32(f);
    let (xt, ft) = (
        Tensor::from_data(x.clone(), sx.clone()).unwrap(),
        Tensor::from_data(f.clone(), sf.clone()).unwrap(),
    );
    let seen = Mutex::new(Vec::new());
    let record = |b: crate::native::Block| seen.lock().unwrap().push((b.begin, b.len));
    let epilogue = Epilogue::new(&record);
    let parallel = Parallel::new(ThreadConfig::with_threads(threads));
    let stale = TensorData::F32(vec![f32::NAN; xt.data().len().max(1) * 64]);
    for out in [None, Some(stale.clone())] {
        seen.lock().unwrap().clear();
        let got = convolution(&xt, &ft, conv, out, &parallel, (Some(epilogue), Some(&w)));
        let want = graphlift_runtime::reference::convolution(&x, &sx, &f, &sf, conv).unwrap();
        let (TensorData::F32(got), TensorData::F32(want)) = (got.unwrap(), want) else {
            panic!("f32 results")
        };
        let what = format!("{x_dims:?} {f_dims:?}, {threads} threads");
        assert_eq!(got.len(), want.len(), "{what}");
        let scale = if FloatTiles::Avx512.runs() { 2.0 } else { 1.0 };
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert!(
                (a - scale * b).abs() <= 4.0 * depth as f32 * f32::EPSILON,
                "{what}: [{i}] {a} vs {scale} * {b}"
            );
        }
        let mut covered = vec![0u8; got.len()];
        for &(begin, len) in seen.lock().unwrap().iter() {
            covered[begin..begin + len].iter_mut().for_each(|c| *c += 1);
        }
        assert!(covered.iter().all(|&c| c == 1), "{what}: epilogue blocks");
    }
}

#[test]
fn agrees_with_the_reference() {
    for threads in [1, 2, 3, 5] {
        for case in CASES {
            check(&case.0, &case.1, &convolution_of(case), threads);
        }
    }
}

#[test]
fn one_dimensional_agrees_with_the_reference() {
    let conv = Convolution {
        window: graphlift_ir::Window {
            shape: vec![5],
            strides: vec![2],
            dilations: vec![1],
            pads_begin: vec![2],
            pads_end: vec![2],
        },
        groups: 1,
    };
    for threads in [1, 2] {
        check(&[2, 16, 30], &[32, 16, 5], &conv, threads);
    }
}

/// Rows that fill their vectors keep the row-wise tiles; narrow rows, with filters in
/// whole vectors, take the channel lanes, and so do pointwise windows over planes that
/// waste most of a panel (7x7, not 10x10); too few filters and hosts without AVX-512 never
/// do.
#[test]
fn narrow_rows_with_whole_vectors_of_filters_take_the_channel_lanes() {
    let takes = |x: [usize; 4], f: [usize; 4], stride: usize, avx512: bool| {
        let pad = f[2] / 2;
        let case: Case = (x, f, 1, [stride; 2], [1, 1], [pad; 2], [pad; 2]);
        let conv = convolution_of(&case);
        let g = Geometry::of(&Shape::new(x), &Shape::new(f), &conv).unwrap();
        takes_channel_lanes(&g, &conv, avx512)
    };
    assert!(takes([1, 96, 26, 26], [96, 96, 3, 3], 1, true));
    assert!(takes([1, 96, 52, 52], [96, 96, 3, 3], 1, true));
    assert!(takes([1, 192, 26, 26], [384, 192, 3, 3], 2, true));
    assert!(takes([1, 256, 14, 14], [256, 256, 3, 3], 1, true));
    assert!(takes([1, 512, 7, 7], [512, 512, 3, 3], 1, true));
    assert!(!takes([1, 96, 26, 26], [96, 96, 3, 3], 1, false));
    assert!(!takes([1, 12, 208, 208], [24, 12, 3, 3], 1, true));
    assert!(!takes([1, 64, 80, 80], [64, 64, 3, 3], 1, true));
    assert!(!takes([1, 8, 26, 26], [8, 8, 3, 3], 1, true));
    assert!(!takes([1, 96, 26, 26], [96, 96, 1, 1], 1, true));
    assert!(takes([1, 512, 7, 7], [2048, 512, 1, 1], 1, true));
    assert!(!takes([1, 512, 10, 10], [512, 512, 1, 1], 1, true));
    assert!(takes([1, 24, 7, 7], [44, 24, 1, 1], 1, true));
    assert!(!takes([1, 960, 7, 7], [160, 960, 1, 1], 1, true));
}
