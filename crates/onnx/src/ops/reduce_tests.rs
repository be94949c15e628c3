//! Unit tests of the composed `Reduce*` operators: the max-shifted `ReduceLogSumExp` at the
//! edges (large values, infinities, empty sets), integer inputs, and the axes forms.

use graphlift_ir::TensorData;

use super::one_node::{model, run, tensor, values, Operand::*};
use crate::proto::data_type::{FLOAT, INT64};
use crate::tests::{attr_i, attr_ints};

const INF: f64 = f64::INFINITY;

/// `op` of FLOAT `[2, 2]` data over axis 1 (the opset-18 input), keepdims 0.
fn over_rows(op: &str, data: &[f32]) -> Vec<f64> {
    let m = model(
        op,
        18,
        vec![
            Input("x", FLOAT, &[2, 2]),
            Init("axes", TensorData::I64(vec![1]), &[1]),
        ],
        &["y"],
        vec![attr_i("keepdims", 0)],
    );
    let out = run(&m, &[tensor(TensorData::F32(data.to_vec()), &[2, 2])]);
    assert_eq!(out[0].shape().dims(), [2]);
    values(&out[0])
}

#[test]
fn log_sum_exp_is_shifted_by_the_finite_maximum() {
    let y = over_rows("ReduceLogSumExp", &[1000., 1000., -1000., -999.]);
    assert!((y[0] - (1000.0 + 2f64.ln())).abs() < 1e-3, "{y:?}");
    assert!(
        (y[1] - (-999.0 + (1.0 + (-1f64).exp()).ln())).abs() < 1e-3,
        "{y:?}"
    );
    let y = over_rows(
        "ReduceLogSumExp",
        &[f32::NEG_INFINITY, f32::NEG_INFINITY, f32::INFINITY, 3.],
    );
    assert_eq!(y, [-INF, INF]);
    let y = over_rows("ReduceLogSumExp", &[f32::NAN, 1., f32::NEG_INFINITY, 2.]);
    assert!(y[0].is_nan() && y[1] == 2.0, "{y:?}");
}

#[test]
fn an_empty_reduction_follows_the_spec() {
    // Axis 1 of [2, 0]: sums of nothing.
    for (op, want) in [
        ("ReduceLogSumExp", -INF),
        ("ReduceLogSum", -INF),
        ("ReduceL2", 0.0),
        ("ReduceL1", 0.0),
    ] {
        let m = model(
            op,
            13,
            vec![Input("x", FLOAT, &[2, 0])],
            &["y"],
            vec![attr_ints("axes", &[1])],
        );
        let out = run(&m, &[tensor(TensorData::F32(vec![]), &[2, 0])]);
        assert_eq!(out[0].shape().dims(), [2, 1], "{op}");
        assert_eq!(values(&out[0]), [want, want], "{op}");
    }
}

#[test]
fn integer_roots_and_logarithms_truncate() {
    let ints = |op: &str| {
        let m = model(
            op,
            11,
            vec![Input("x", INT64, &[2, 2])],
            &["y"],
            vec![attr_ints("axes", &[-1])],
        );
        let out = run(&m, &[tensor(TensorData::I64(vec![3, 4, 1, 1]), &[2, 2])]);
        out[0].read::<i64>().unwrap().to_vec()
    };
    assert_eq!(ints("ReduceL2"), [5, 1]);
    assert_eq!(ints("ReduceL1"), [7, 2]);
    assert_eq!(ints("ReduceSumSquare"), [25, 2]);
    assert_eq!(ints("ReduceLogSum"), [1, 0]); // ln 7, ln 2
    assert_eq!(ints("ReduceLogSumExp"), [4, 1]); // 4.31, 1.69
}

#[test]
fn no_axes_with_noop_applies_only_the_elementwise_steps() {
    let m = model(
        "ReduceL1",
        18,
        vec![Input("x", FLOAT, &[3])],
        &["y"],
        vec![attr_i("noop_with_empty_axes", 1)],
    );
    let out = run(&m, &[tensor(TensorData::F32(vec![-1., 2., -3.]), &[3])]);
    assert_eq!(values(&out[0]), [1., 2., 3.]);
    // Without it, every axis.
    let m = model(
        "ReduceSumSquare",
        18,
        vec![Input("x", FLOAT, &[3])],
        &["y"],
        vec![],
    );
    let out = run(&m, &[tensor(TensorData::F32(vec![-1., 2., -3.]), &[3])]);
    assert_eq!(
        (out[0].shape().dims(), values(&out[0])),
        (&[1usize][..], vec![14.])
    );
}
