//! Unit tests of `Dropout`: the inference identity and mask at each opset's types, and
//! training asked for by a constant or a graph input.

use graphlift_ir::{ElementType, TensorData};

use super::one_node::{model, run, tensor, values, Operand::*};
use crate::proto::data_type::{BOOL, FLOAT};
use crate::tests::attr_f;
use crate::{import_model, OnnxError};

fn x() -> graphlift_runtime::Tensor {
    tensor(TensorData::F32(vec![1., -2., 3., 0.5, 0., 7.]), &[2, 3])
}

#[test]
fn dropout_passes_the_input_and_keeps_every_element() {
    for opset in [7, 10, 13, 22] {
        let m = model(
            "Dropout",
            opset,
            vec![Input("x", FLOAT, &[2, 3])],
            &["y", "mask"],
            vec![],
        );
        let out = run(&m, &[x()]);
        assert_eq!(values(&out[0]), values(&x()), "opset {opset}");
        assert_eq!(out[1].shape().dims(), [2, 3]);
        // The mask is BOOL from opset 10, the data's type before.
        let want = if opset >= 10 {
            ElementType::Bool
        } else {
            ElementType::F32
        };
        assert_eq!(out[1].element_type(), want, "opset {opset}");
        assert_eq!(values(&out[1]), [1.0; 6], "opset {opset}");
    }
}

#[test]
fn dropout_with_ratio_and_training_mode_false_is_the_identity() {
    let m = model(
        "Dropout",
        13,
        vec![
            Input("x", FLOAT, &[2, 3]),
            Init("r", TensorData::F32(vec![0.3]), &[]),
            Init("t", TensorData::Bool(vec![false]), &[]),
        ],
        &["y"],
        vec![],
    );
    assert_eq!(values(&run(&m, &[x()])[0]), values(&x()));
}

#[test]
fn dropout_refuses_training_naming_the_node() {
    let training = |t| {
        model(
            "Dropout",
            13,
            vec![Input("x", FLOAT, &[2, 3]), Skip, t],
            &["y", "mask"],
            vec![],
        )
    };
    let e = import_model(&training(Init("t", TensorData::Bool(vec![true]), &[]))).unwrap_err();
    assert!(matches!(e, OnnxError::UnsupportedFeature { .. }), "{e}");
    assert!(e.to_string().contains("Dropout `n0`") && e.to_string().contains("training_mode"));
    // A graph input: the caller may give it (false) at import.
    let e = import_model(&training(Input("t", BOOL, &[]))).unwrap_err();
    assert!(matches!(e, OnnxError::RunTimeOperand { .. }), "{e}");
    // Opset 10's ratio attribute must lie in [0, 1).
    let m = model(
        "Dropout",
        10,
        vec![Input("x", FLOAT, &[2, 3])],
        &["y"],
        vec![attr_f("ratio", 1.5)],
    );
    let e = import_model(&m).unwrap_err();
    assert!(matches!(e, OnnxError::BadAttribute { .. }), "{e}");
}
