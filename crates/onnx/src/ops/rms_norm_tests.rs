//! Unit tests of `RMSNormalization`: hand-checkable cases (root mean squares of 1, 2 and 5)
//! on INTERPRETER and CPU-JIT, the normalised axes, `epsilon`, the FLOAT `stash_type` by
//! default and DOUBLE on request, a half input, and an error naming the node.

use graphlift_ir::{ElementType, TensorData};

use super::one_node::{close, f32s, model, run_both, tensor, values, Operand::*};
use crate::proto::data_type::{DOUBLE, FLOAT, FLOAT16, INT64};
use crate::proto::AttributeProto;
use crate::tests::{attr_f, attr_i};

/// `RMSNormalization` at opset 23 of `x` (`t`, `dims`) and an initializer `scale`.
fn rms(
    t: i32,
    dims: &'static [i64],
    scale: TensorData,
    scale_dims: &'static [usize],
    attrs: Vec<AttributeProto>,
) -> crate::proto::ModelProto {
    let operands = vec![Input("x", t, dims), Init("scale", scale, scale_dims)];
    model("RMSNormalization", 23, operands, &["y"], attrs)
}

#[test]
fn normalises_the_last_axis_by_its_root_mean_square_then_scales() {
    // Rows [1, -1, 1, -1] (RMS 1) and [2, 2, -2, 2] (RMS 2); epsilon 0.
    let scale = TensorData::F32(vec![1., 2., 3., 4.]);
    let m = rms(FLOAT, &[2, 4], scale, &[4], vec![attr_f("epsilon", 0.0)]);
    let x = f32s(&[1., -1., 1., -1., 2., 2., -2., 2.], &[2, 4]);
    close(&run_both(&m, &[x])[0], &[1., -2., 3., -4., 1., 2., -3., 4.]);
}

#[test]
fn axis_zero_normalises_everything_and_epsilon_is_added_to_the_mean() {
    // Mean of squares (1 + 49 + 1 + 49) / 4 = 25; with epsilon 11, RMS 6.
    let one = || TensorData::F32(vec![1.]);
    let x = || f32s(&[1., 7., -1., 7.], &[2, 2]);
    let m = rms(
        FLOAT,
        &[2, 2],
        one(),
        &[],
        vec![attr_i("axis", 0), attr_f("epsilon", 0.0)],
    );
    close(&run_both(&m, &[x()])[0], &[0.2, 1.4, -0.2, 1.4]);
    let m = rms(
        FLOAT,
        &[2, 2],
        one(),
        &[],
        vec![attr_i("axis", -2), attr_f("epsilon", 11.0)],
    );
    close(
        &run_both(&m, &[x()])[0],
        &[1. / 6., 7. / 6., -1. / 6., 7. / 6.],
    );
}

#[test]
fn double_input_computes_in_float_unless_stash_type_is_double() {
    let x = || tensor(TensorData::F64(vec![0.1, 0.3]), &[1, 2]);
    let exact = 0.1 / 0.05f64.sqrt();
    let one = || TensorData::F64(vec![1.0]);
    let eps = attr_f("epsilon", 0.0);
    let float = &run_both(
        &rms(DOUBLE, &[1, 2], one(), &[1], vec![eps.clone()]),
        &[x()],
    )[0];
    let error = (values(float)[0] - exact).abs();
    assert!(error > 1e-12 && error < 1e-6, "{error}");
    let stash = attr_i("stash_type", i64::from(DOUBLE));
    let double = &run_both(&rms(DOUBLE, &[1, 2], one(), &[1], vec![eps, stash]), &[x()])[0];
    assert_eq!(double.element_type(), ElementType::F64);
    assert!((values(double)[0] - exact).abs() < 1e-15);
}

#[test]
fn half_input_agrees_with_float() {
    let m = rms(
        FLOAT16,
        &[1, 4],
        TensorData::from_f64(ElementType::F16, &[1., 2., 3., 4.]),
        &[4],
        vec![attr_f("epsilon", 0.0)],
    );
    let x = tensor(
        TensorData::from_f64(ElementType::F16, &[2., 2., -2., 2.]),
        &[1, 4],
    );
    let y = &run_both(&m, &[x])[0];
    assert_eq!(y.element_type(), ElementType::F16);
    close(y, &[1., 2., -3., 4.]);
}

#[test]
fn a_stash_type_that_is_not_a_float_type_is_an_error_naming_the_node() {
    let stash = attr_i("stash_type", i64::from(INT64));
    let m = rms(FLOAT, &[2, 4], TensorData::F32(vec![1.]), &[1], vec![stash]);
    let Err(e) = crate::import_model(&m) else {
        panic!("stash_type INT64 imports");
    };
    let e = e.to_string();
    assert!(
        e.contains("RMSNormalization `n0`") && e.contains("stash_type"),
        "{e}"
    );
}
