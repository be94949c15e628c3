//! The native `MaxPool` and its adjoint against the reference.

use super::*;
use graphlift_testkit::uniform;

/// Inputs of shape `sx` with many ties (values rounded to integers, `-0.0` among them) and
/// NaN at a few places.
fn tied_input(sx: &Shape, seed: u32) -> Vec<f64> {
    let n = sx.element_count().unwrap();
    let mut xs: Vec<f64> = uniform(n, seed)
        .iter()
        .map(|&v| (f64::from(v) * 2.0).round())
        .collect();
    for k in [7, 100, 2000] {
        if let Some(v) = xs.get_mut(k) {
            *v = if k == 100 { -0.0 } else { f64::NAN };
        }
    }
    xs
}

/// Asserts that the native forward pool of `x` (`f32` and `f64`) under `w` on `threads`
/// threads is the reference's bit for bit.
fn assert_forward(sx: &Shape, xs: &[f64], w: &Window, threads: usize) {
    let parallel = Parallel::new(crate::parallel::ThreadConfig::with_threads(threads));
    let f32s = TensorData::F32(xs.iter().map(|&v| v as f32).collect());
    for data in [f32s, TensorData::F64(xs.to_vec())] {
        let want = graphlift_runtime::reference::max_pool(&data, sx, w).unwrap();
        let x = Tensor::from_data(data, sx.clone()).unwrap();
        let got = max_pool(&x, w, None, &parallel).expect("the native kernel applies");
        assert_eq!(got.element_type(), want.element_type());
        assert_eq!(got.len(), want.len(), "{sx}, {w:?}");
        for i in 0..got.len() {
            let (g, r) = (got.get_f64(i).unwrap(), want.get_f64(i).unwrap());
            assert!(
                g.to_bits() == r.to_bits() || (g.is_nan() && r.is_nan()),
                "{sx}, {w:?}, {threads} threads, output {i}: {g} vs {r}"
            );
        }
    }
}

fn window(k: [usize; 2], s: [usize; 2], d: [usize; 2], pb: [usize; 2], pe: [usize; 2]) -> Window {
    Window {
        shape: k.to_vec(),
        strides: s.to_vec(),
        dilations: d.to_vec(),
        pads_begin: pb.to_vec(),
        pads_end: pe.to_vec(),
    }
}

/// The forward pool equals the reference bit for bit (ties of ±0, NaN), on one and two
/// threads (planes and blocks of rows split), for strided, unit-stride (the contiguous
/// fold), dilated, padded on either side, `ceil_mode`'s extra end padding, and
/// non-overlapping windows (the chunked fold), rows that pool as one long row.
#[test]
fn forward_is_the_reference() {
    let windows = [
        window([3, 3], [2, 2], [1, 1], [1, 1], [1, 1]),
        window([3, 3], [1, 1], [1, 1], [1, 1], [1, 1]),
        window([2, 3], [1, 2], [2, 1], [0, 1], [0, 0]),
        window([1, 4], [1, 4], [1, 1], [0, 0], [0, 0]),
        window([2, 2], [2, 2], [1, 1], [0, 0], [1, 1]),
        window([3, 3], [3, 3], [1, 1], [1, 1], [2, 2]),
        window([13, 13], [1, 1], [1, 1], [6, 6], [6, 6]),
        window([2, 5], [1, 1], [1, 2], [1, 3], [0, 4]),
        window([1, 3], [1, 3], [1, 1], [0, 0], [0, 0]),
        window([1, 2], [1, 2], [1, 1], [0, 0], [0, 0]),
        // Tiled: k x k windows at stride k, wholly inside (the rest of a row or column
        // that no window reaches is left out).
        window([2, 2], [2, 2], [1, 1], [0, 0], [0, 0]),
        window([3, 3], [3, 3], [1, 1], [0, 0], [0, 0]),
    ];
    // The third shape's rows tile under the [1, 4], [1, 3] and [1, 2] windows (one long row);
    // the last, a batch of small planes, pools its output rows (under 8 wide) directly, but
    // as one long row under those three windows.
    let shapes = [
        [2, 3, 41, 37],
        [1, 1, 90, 67],
        [2, 3, 20, 36],
        [3, 40, 3, 12],
    ];
    for sx in shapes.map(Shape::new) {
        let xs = tied_input(&sx, 9);
        for w in &windows {
            for threads in [1, 2, 3] {
                assert_forward(&sx, &xs, w, threads);
            }
        }
    }
}

/// A 1-D pool (`[N, C, W]`) runs on the 2-D kernel as a unit height.
#[test]
fn one_dimensional_forward_is_the_reference() {
    let sx = Shape::new([2, 5, 203]);
    let xs = tied_input(&sx, 3);
    for (k, s, d, pb, pe) in [(4, 4, 1, 0, 0), (3, 2, 1, 1, 2), (5, 1, 2, 4, 4)] {
        let w = Window {
            shape: vec![k],
            strides: vec![s],
            dilations: vec![d],
            pads_begin: vec![pb],
            pads_end: vec![pe],
        };
        assert_forward(&sx, &xs, &w, 1);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
    /// Any window geometry: kernels, strides and dilations 1 to 5 per axis, padding on either
    /// side up to a window (and past it at the end, as `ceil_mode` adds), inputs down to one
    /// element.
    #[test]
    fn any_window_is_the_reference(
        (kh, kw, sh, sw) in (1usize..=5, 1usize..=5, 1usize..=5, 1usize..=5),
        (dh, dw) in (1usize..=3, 1usize..=3),
        (ph0, pw0, ph1, pw1) in (0usize..=4, 0usize..=4, 0usize..=6, 0usize..=6),
        (planes, h, wd) in (1usize..=3, 1usize..=24, 1usize..=40),
        seed in 0u32..1000,
    ) {
        let w = window([kh, kw], [sh, sw], [dh, dw], [ph0, pw0], [ph1, pw1]);
        let sx = Shape::new([1, planes, h, wd]);
        proptest::prop_assume!(w.output_extents(&[h, wd]).is_ok());
        assert_forward(&sx, &tied_input(&sx, seed), &w, 1);
    }
}

#[test]
fn agrees_with_the_reference() {
    let window = |k, s, d, pb, pe| window(k, s, d, pb, [pe, pe]);
    let cases = [
        ([2, 3, 7, 6], window([3, 3], [2, 2], [1, 1], [1, 1], 1)),
        ([1, 2, 6, 9], window([2, 3], [1, 2], [2, 1], [0, 1], 0)),
        ([1, 1, 4, 4], window([2, 2], [2, 2], [1, 1], [0, 0], 0)),
        // Enough taps to split the planes over threads.
        ([2, 8, 48, 48], window([3, 3], [2, 2], [1, 1], [1, 1], 1)),
    ];
    for ((dims, w), threads) in cases.into_iter().flat_map(|c| [(c.clone(), 1), (c, 2)]) {
        let parallel = Parallel::new(crate::parallel::ThreadConfig::with_threads(threads));
        let sx = Shape::new(dims);
        let n = sx.element_count().unwrap();
        // Values rounded to integers: many ties.
        let mut xs: Vec<f32> = uniform(n, 5).iter().map(|v| (v * 3.0).round()).collect();
        xs[5] = f32::NAN;
        let out = w.output_extents(&dims[2..]).unwrap();
        let sy = Shape::new([dims[0], dims[1], out[0], out[1]]);
        let dy = TensorData::F32(uniform(sy.element_count().unwrap(), 6));
        let x = Tensor::from_data(TensorData::F32(xs), sx.clone()).unwrap();
        let dyt = Tensor::from_data(dy.clone(), sy.clone()).unwrap();
        let got = max_pool_backprop(&x, &dyt, &w, &parallel).unwrap();
        let want =
            graphlift_runtime::reference::max_pool_backprop(x.data(), &sx, &dy, &sy, &w).unwrap();
        let (TensorData::F32(g), TensorData::F32(r)) = (&got, &want) else {
            panic!("types")
        };
        for (a, b) in g.iter().zip(r) {
            assert!((a - b).abs() <= 4.0 * f32::EPSILON, "{dims:?}: {a} vs {b}");
        }
    }
}
