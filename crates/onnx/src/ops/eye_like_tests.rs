//! Unit tests of `EyeLike`: diagonals above and below the main one, `dtype`, and named
//! errors.

use graphlift_ir::{ElementType, TensorData};

use super::one_node::{model, run, tensor, values, Operand::*};
use crate::proto::data_type::{BOOL, FLOAT, INT64};
use crate::tests::attr_i;
use crate::{import_model, OnnxError};

#[test]
fn eye_like_puts_ones_on_the_kth_diagonal() {
    let zeros = tensor(TensorData::I64(vec![0; 6]), &[2, 3]);
    let m = model(
        "EyeLike",
        9,
        vec![Input("x", INT64, &[2, 3])],
        &["y"],
        vec![attr_i("k", -1), attr_i("dtype", i64::from(BOOL))],
    );
    let y = &run(&m, std::slice::from_ref(&zeros))[0];
    assert_eq!(y.element_type(), ElementType::Bool);
    assert_eq!(values(y), [0., 0., 0., 1., 0., 0.]);
    let m = model(
        "EyeLike",
        22,
        vec![Input("x", INT64, &[2, 3])],
        &["y"],
        vec![attr_i("k", 1), attr_i("dtype", i64::from(FLOAT))],
    );
    let y = &run(&m, &[zeros])[0];
    assert_eq!(y.element_type(), ElementType::F32);
    assert_eq!(values(y), [0., 1., 0., 0., 0., 1.]);
}

#[test]
fn eye_like_errors_name_the_node() {
    let m = model("EyeLike", 22, vec![Input("x", FLOAT, &[3])], &["y"], vec![]);
    let e = import_model(&m).unwrap_err();
    assert!(
        matches!(e, OnnxError::ShapeMismatch { .. }) && e.to_string().contains("EyeLike `n0`"),
        "{e}"
    );
    let m = model(
        "EyeLike",
        22,
        vec![Input("x", FLOAT, &[2, 2])],
        &["y"],
        vec![attr_i("dtype", 17)],
    );
    let e = import_model(&m).unwrap_err();
    assert!(matches!(e, OnnxError::BadAttribute { .. }), "{e}");
}
