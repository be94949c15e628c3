//! Unit tests of `Shrink`, `Swish` and `Hardmax`: hand-computed cases on the reference
//! interpreter, integers and the axis rules of both opset ranges included.

use graphlift_ir::TensorData;

use super::one_node::{model, run, tensor, values, Operand::*};
use crate::proto::data_type::{FLOAT, INT64};
use crate::tests::{attr_f, attr_i};

#[test]
fn shrink_of_floats_and_of_truncated_integers() {
    let attrs = || vec![attr_f("lambd", 1.5), attr_f("bias", 0.5)];
    let m = model("Shrink", 9, vec![Input("x", FLOAT, &[5])], &["y"], attrs());
    let x = tensor(TensorData::F32(vec![-3., -1., 0., 1., 3.]), &[5]);
    assert_eq!(values(&run(&m, &[x])[0]), [-2.5, 0., 0., 0., 2.5]);
    let m = model("Shrink", 9, vec![Input("x", INT64, &[5])], &["y"], attrs());
    let x = tensor(TensorData::I64(vec![-3, -1, 0, 1, 3]), &[5]);
    assert_eq!(run(&m, &[x])[0].read::<i64>().unwrap(), [-2, 0, 0, 0, 2]);
}

#[test]
fn swish_scales_the_sigmoid_argument() {
    let m = model(
        "Swish",
        24,
        vec![Input("x", FLOAT, &[2])],
        &["y"],
        vec![attr_f("alpha", 2.0)],
    );
    let y = values(&run(&m, &[tensor(TensorData::F32(vec![0., 1.]), &[2])])[0]);
    let want = 1.0 / (1.0 + (-2f64).exp());
    assert!(y[0] == 0.0 && (y[1] - want).abs() < 1e-6, "{y:?}");
}

#[test]
fn hardmax_picks_the_first_maximum_by_each_opsets_axis_rule() {
    let x = tensor(
        TensorData::F32(vec![1., 5., 5., 2., 0., 0., 0., 0.]),
        &[2, 2, 2],
    );
    let hardmax = |opset| {
        model(
            "Hardmax",
            opset,
            vec![Input("x", FLOAT, &[2, 2, 2])],
            &["y"],
            vec![attr_i("axis", 1)],
        )
    };
    // Opset 11: each sample flattened to one row of 4 from axis 1.
    assert_eq!(
        values(&run(&hardmax(11), std::slice::from_ref(&x))[0]),
        [0., 1., 0., 0., 1., 0., 0., 0.]
    );
    // Opset 13: along axis 1 alone.
    assert_eq!(
        values(&run(&hardmax(13), &[x])[0]),
        [0., 1., 1., 0., 1., 1., 0., 0.]
    );
}
