//! `CenterCropPad`: crop and pad in one node, odd differences, BOOL padding with false, on
//! both backends; named errors.

use graphlift_ir::TensorData;

use super::one_node::{model, run_both, tensor, values, Operand::*};
use crate::proto::data_type::{BOOL, FLOAT};
use crate::tests::{attr_ints, err};

#[test]
fn crops_one_axis_and_pads_another_around_their_centres() {
    // x [3, 4] = 0..12: rows cropped to 2 (from row 0: (3 - 2) / 2 = 0), columns padded to 7
    // (1 before, 2 after).
    let m = model(
        "CenterCropPad",
        18,
        vec![
            Input("x", FLOAT, &[3, 4]),
            Init("shape", TensorData::I64(vec![2, 7]), &[2]),
        ],
        &["y"],
        vec![],
    );
    let x = tensor(
        TensorData::F32((0..12).map(|v| v as f32).collect()),
        &[3, 4],
    );
    let y = run_both(&m, &[x]).remove(0);
    assert_eq!(y.shape().dims(), [2, 7]);
    #[rustfmt::skip]
    let want = [0., 0., 1., 2., 3., 0., 0.,
                0., 4., 5., 6., 7., 0., 0.];
    assert_eq!(values(&y), want);
    // One axis of a BOOL tensor, named by a negative index: padded with false.
    let m = model(
        "CenterCropPad",
        18,
        vec![
            Input("x", BOOL, &[1, 2]),
            Init("shape", TensorData::I64(vec![4]), &[1]),
        ],
        &["y"],
        vec![attr_ints("axes", &[-1])],
    );
    let y = run_both(&m, &[tensor(TensorData::Bool(vec![true, true]), &[1, 2])]).remove(0);
    assert_eq!(y.data(), &TensorData::Bool(vec![false, true, true, false]));
}

#[test]
fn malformed_nodes_are_errors_naming_the_node() {
    let with = |shape: Vec<i64>, axes: &[i64]| {
        let n = shape.len();
        let m = model(
            "CenterCropPad",
            18,
            vec![
                Input("x", FLOAT, &[3, 4]),
                Init(
                    "shape",
                    TensorData::I64(shape),
                    if n == 1 { &[1] } else { &[2] },
                ),
            ],
            &["y"],
            vec![attr_ints("axes", axes)],
        );
        err(&m).to_string()
    };
    for (e, says) in [
        (with(vec![2, 2], &[0]), "one extent"),
        (with(vec![2, 2], &[1, -1]), "twice"),
        (with(vec![-2], &[0]), "negative"),
    ] {
        assert!(
            e.contains("CenterCropPad `n0`") && e.contains(says),
            "{says}: {e}"
        );
    }
}
