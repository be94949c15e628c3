//! The native attention kernel against the reference (the definition) on shapes that
//! exercise every path: several batches and heads, `Sq ≠ Sk`, `Dv ≠ D`, sequence lengths
//! that are not multiples of any block size, query rows split into blocks, one and two
//! threads, every way a mask broadcasts, `f32` and `f64`, stale output buffers.

use graphlift_ir::{Attention, Shape, TensorData};
use graphlift_runtime::reference;
use graphlift_testkit::uniform;
use proptest::prelude::*;

use super::attention;
use crate::parallel::{Parallel, ThreadConfig};

/// `(B, Sq, Sk, H, D, Dv)`.
type Case = (usize, usize, usize, usize, usize, usize);

/// The mask shapes that broadcast to `[B, H, Sq, Sk]` in different ways.
fn masks((b, sq, sk, h, _, _): Case) -> Vec<Option<Vec<usize>>> {
    vec![
        None,
        Some(vec![sk]),
        Some(vec![b, 1, 1, sk]),
        Some(vec![b, h, sq, sk]),
        Some(vec![h, sq, 1]),
        Some(vec![1, 1, sq, sk]),
        Some(vec![]),
    ]
}

fn tensor(f64s: bool, n: usize, seed: u32, scale: f32) -> TensorData {
    let x: Vec<f32> = uniform(n, seed).into_iter().map(|v| v * scale).collect();
    if f64s {
        TensorData::F64(x.into_iter().map(f64::from).collect())
    } else {
        TensorData::F32(x)
    }
}

/// Runs case `c` with `mask` on `threads` threads and compares with the reference.
fn check(c: Case, mask: Option<&[usize]>, threads: usize, f64s: bool) {
    let (b, sq, sk, h, d, dv) = c;
    let shapes = [[b, sq, h * d], [b, sk, h * d], [b, sk, h * dv]].map(Shape::new);
    let seeds = [1, 2, 3];
    let [q, k, v] = [0, 1, 2].map(|i| {
        let n = shapes[i].element_count().unwrap();
        tensor(f64s, n, seeds[i], 2.0)
    });
    let mask_shape = mask.map(Shape::new);
    let mask_data = mask_shape
        .as_ref()
        .map(|s| tensor(f64s, s.element_count().unwrap(), 4, 3.0));
    let m = mask_data.as_ref().zip(mask_shape.as_ref());
    let a = Attention {
        heads: h,
        scale: 1.0 / (d as f64).sqrt(),
    };
    let ops = [(&q, &shapes[0]), (&k, &shapes[1]), (&v, &shapes[2])];
    let want = reference::attention(ops[0], ops[1], ops[2], m, &a).unwrap();
    let parallel = Parallel::new(ThreadConfig::with_threads(threads));
    let stale = TensorData::F32(vec![f32::NAN; want.len()]);
    let stale = if f64s {
        TensorData::F64(vec![f64::NAN; want.len()])
    } else {
        stale
    };
    for out in [None, Some(stale)] {
        let got = attention(ops[0], ops[1], ops[2], m, &a, out, &parallel).unwrap();
        assert_eq!(got.len(), want.len());
        let tol = if f64s { 1e-12 } else { 2e-5 };
        for i in 0..want.len() {
            let (g, w) = (got.get_f64(i).unwrap(), want.get_f64(i).unwrap());
            assert!(
                (g - w).abs() <= tol * (1.0 + w.abs()),
                "{c:?} mask {mask:?}, {threads} threads, f64 {f64s}: [{i}] {g} vs {w}"
            );
        }
    }
}

#[test]
fn equals_the_reference_on_every_path() {
    let cases: &[Case] = &[
        (1, 1, 1, 1, 1, 1),
        (2, 3, 5, 2, 4, 3),
        (1, 7, 7, 12, 8, 8),
        // Work enough to split over two threads; rows not a multiple of 8.
        (2, 70, 70, 4, 16, 16),
        (1, 129, 33, 3, 32, 32),
        // Sk so long that one head's block holds fewer rows than Sq: several blocks.
        (1, 100, 300, 2, 8, 5),
    ];
    for &c in cases {
        for mask in masks(c) {
            for threads in [1, 2] {
                check(c, mask.as_deref(), threads, false);
            }
        }
        check(c, Some(&[c.0, 1, 1, c.2]), 2, true);
    }
}

#[test]
fn a_row_masked_to_minus_infinity_is_nan_as_in_the_reference() {
    let s = Shape::new([1, 2, 2]);
    let x = TensorData::F32(vec![0.5, -1.0, 2.0, 0.25]);
    let ms = Shape::new([1, 1, 2, 1]);
    let m = TensorData::F32(vec![f32::NEG_INFINITY, 0.0]);
    let a = Attention {
        heads: 1,
        scale: 1.0,
    };
    let one = Parallel::new(ThreadConfig::with_threads(1));
    let got = attention(
        (&x, &s),
        (&x, &s),
        (&x, &s),
        Some((&m, &ms)),
        &a,
        None,
        &one,
    )
    .unwrap();
    let want = reference::attention((&x, &s), (&x, &s), (&x, &s), Some((&m, &ms)), &a).unwrap();
    let (TensorData::F32(g), TensorData::F32(w)) = (&got, &want) else {
        panic!("f32")
    };
    assert!(g[..2].iter().chain(&w[..2]).all(|v| v.is_nan()));
    assert!((g[2] - w[2]).abs() < 1e-6 && (g[3] - w[3]).abs() < 1e-6);
}

#[test]
fn shapes_the_op_refuses_are_left_to_the_reference() {
    let one = Parallel::new(ThreadConfig::with_threads(1));
    let a = Attention {
        heads: 3,
        scale: 1.0,
    };
    let s = Shape::new([1, 2, 4]);
    let x = TensorData::F32(vec![0.0; 8]);
    assert!(attention((&x, &s), (&x, &s), (&x, &s), None, &a, None, &one).is_none());
    let two = Attention { heads: 2, ..a };
    let i = TensorData::I32(vec![0; 8]);
    assert!(attention((&i, &s), (&i, &s), (&i, &s), None, &two, None, &one).is_none());
    let short = TensorData::F32(vec![0.0; 7]);
    assert!(attention((&x, &s), (&short, &s), (&x, &s), None, &two, None, &one).is_none());
    let ms = Shape::new([3]);
    let m = TensorData::F32(vec![0.0; 3]);
    assert!(attention(
        (&x, &s),
        (&x, &s),
        (&x, &s),
        Some((&m, &ms)),
        &two,
        None,
        &one
    )
    .is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random extents and a random broadcast pattern of the mask, on one or two threads.
    #[test]
    fn random_shapes_equal_the_reference(
        b in 1usize..3, sq in 1usize..40, sk in 1usize..40, h in 1usize..4,
        d in 1usize..12, dv in 1usize..12, keep in proptest::collection::vec(any::<bool>(), 4),
        rank in 0usize..5, threads in 1usize..3,
    ) {
        let full = [b, h, sq, sk];
        let mask: Vec<usize> = full[4 - rank..]
            .iter()
            .zip(&keep[4 - rank..])
            .map(|(&x, &k)| if k { x } else { 1 })
            .collect();
        check((b, sq, sk, h, d, dv), Some(&mask), threads, false);
    }
}
