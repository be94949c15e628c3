//! Unit tests of the Upsample-like resize (`Upsample` 7 and 9, `Resize` 10): hand-computed
//! nearest (floor) and linear (asymmetric) cases, integers by gathers, and named errors.

use graphlift_ir::TensorData;

use super::one_node::{attr_floats, model, run, tensor, values, Operand::*};
use crate::proto::data_type::{FLOAT, INT64};
use crate::tests::attr_s;
use crate::{import_model, OnnxError};

/// `op` at `opset` on `x` of `dims` with `scales` an initializer, and `mode`.
fn resized(
    op: &str,
    opset: i64,
    t: i32,
    dims: &'static [i64],
    scales: &[f32],
    mode: &str,
) -> crate::proto::ModelProto {
    let scales = Init("scales", TensorData::F32(scales.to_vec()), &[2]);
    model(
        op,
        opset,
        vec![Input("x", t, dims), scales],
        &["y"],
        vec![attr_s("mode", mode)],
    )
}

fn row(v: &[f32]) -> graphlift_runtime::Tensor {
    tensor(TensorData::F32(v.to_vec()), &[1, v.len()])
}

#[test]
fn upsample_7_reads_its_scales_attribute_and_rounds_down() {
    let m = model(
        "Upsample",
        7,
        vec![Input("x", FLOAT, &[1, 2])],
        &["y"],
        vec![attr_floats("scales", &[1.0, 1.5])],
    );
    // floor(2 · 1.5) = 3 outputs reading inputs floor(0 / 1.5), floor(1 / 1.5), floor(2 / 1.5).
    let out = run(&m, &[row(&[1., 3.])]);
    assert_eq!(out[0].shape().dims(), [1, 3]);
    assert_eq!(values(&out[0]), [1., 1., 3.]);
}

#[test]
fn upsample_9_linear_is_asymmetric_and_clamped() {
    let m = resized("Upsample", 9, FLOAT, &[1, 2], &[1.0, 2.0], "linear");
    // Sources 0, 0.5, 1, 1.5 (clamped to 1).
    assert_eq!(values(&run(&m, &[row(&[1., 3.])])[0]), [1., 2., 3., 3.]);
}

#[test]
fn resize_10_downsamples_and_upsample_refuses_to() {
    let m = resized("Resize", 10, FLOAT, &[1, 4], &[1.0, 0.5], "nearest");
    assert_eq!(values(&run(&m, &[row(&[1., 2., 3., 4.])])[0]), [1., 3.]);
    let m = resized("Upsample", 9, FLOAT, &[1, 4], &[1.0, 0.5], "nearest");
    let e = import_model(&m).unwrap_err();
    assert!(matches!(e, OnnxError::ShapeMismatch { .. }), "{e}");
    assert!(e.to_string().contains("Upsample `n0`"), "{e}");
}

#[test]
fn upsample_of_integers_gathers_the_nearest_elements() {
    let m = resized("Upsample", 9, INT64, &[2, 1], &[2.0, 3.0], "nearest");
    let x = tensor(TensorData::I64(vec![5, -7]), &[2, 1]);
    let out = run(&m, &[x]);
    assert_eq!(out[0].shape().dims(), [4, 3]);
    assert_eq!(
        out[0].read::<i64>().unwrap(),
        [5, 5, 5, 5, 5, 5, -7, -7, -7, -7, -7, -7]
    );
    let e = import_model(&resized(
        "Upsample",
        9,
        INT64,
        &[2, 1],
        &[2.0, 1.0],
        "linear",
    ))
    .unwrap_err();
    assert!(matches!(e, OnnxError::UnsupportedFeature { .. }), "{e}");
}
