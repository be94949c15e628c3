//! Unit tests of `LpNormalization`, `MeanVarianceNormalization` and `LRN`: hand-computed
//! cases on the reference interpreter.

use graphlift_ir::TensorData;

use super::one_node::{model, run, tensor, values, Operand::*};
use crate::proto::data_type::FLOAT;
use crate::tests::{attr_f, attr_i, attr_ints};

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{got:?} vs {want:?}"
        );
    }
}

#[test]
fn lp_normalization_divides_by_the_absolute_norm_and_keeps_zero_rows() {
    let x = tensor(TensorData::F32(vec![3., -4., 0., 0.]), &[2, 2]);
    let l1 = model(
        "LpNormalization",
        1,
        vec![Input("x", FLOAT, &[2, 2])],
        &["y"],
        vec![attr_i("p", 1)],
    );
    close(
        &values(&run(&l1, std::slice::from_ref(&x))[0]),
        &[3. / 7., -4. / 7., 0., 0.],
    );
    let l2 = model(
        "LpNormalization",
        22,
        vec![Input("x", FLOAT, &[2, 2])],
        &["y"],
        vec![attr_i("axis", 0)],
    );
    close(&values(&run(&l2, &[x])[0]), &[1., -1., 0., 0.]);
}

#[test]
fn mean_variance_normalization_of_a_constant_slice_is_zero() {
    // Axes [1]: row 0 is constant (variance 0, no NaN), row 1 is [1, 3]: mean 2, deviation 1.
    let m = model(
        "MeanVarianceNormalization",
        13,
        vec![Input("x", FLOAT, &[2, 2])],
        &["y"],
        vec![attr_ints("axes", &[-1])],
    );
    let x = tensor(TensorData::F32(vec![0.1, 0.1, 1., 3.]), &[2, 2]);
    close(&values(&run(&m, &[x])[0]), &[0., 0., -1., 1.]);
}

#[test]
fn lrn_sums_squares_over_an_asymmetric_channel_window() {
    let x = tensor(TensorData::F32(vec![1., 2., 3.]), &[1, 3]);
    let lrn = |size: i64, alpha: f32| {
        model(
            "LRN",
            13,
            vec![Input("x", FLOAT, &[1, 3])],
            &["y"],
            vec![
                attr_i("size", size),
                attr_f("alpha", alpha),
                attr_f("beta", 1.0),
                attr_f("bias", 0.0),
            ],
        )
    };
    // size 2: channel c sums c and c + 1; alpha / size = 0.5.
    close(
        &values(&run(&lrn(2, 1.0), std::slice::from_ref(&x))[0]),
        &[1. / 2.5, 2. / 6.5, 3. / 4.5],
    );
    // A window wider than every channel sums them all (14); alpha / size = 1.
    close(
        &values(&run(&lrn(1 << 40, (1u64 << 40) as f32), &[x])[0]),
        &[1. / 14., 2. / 14., 3. / 14.],
    );
}
