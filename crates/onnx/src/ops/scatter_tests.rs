//! Unit tests of `ScatterND`, `ScatterElements` and `Scatter`: hand-computed cases on the
//! reference interpreter, and named errors.

use graphlift_ir::{Shape, TensorData};

use super::tests::x;
use crate::proto::*;
use crate::tests::{attr_i, attr_s, err, f32s, model_opset, node, run, vi};
use crate::OnnxError;

/// `op(x, i, u)` on FLOAT `x` of `dims`, INT64 indices `i` and FLOAT updates `u` as
/// initializers, output `y`.
fn model(
    op: &str,
    attrs: Vec<AttributeProto>,
    dims: &[i64],
    (i, i_dims): (&[i64], &[usize]),
    (u, u_dims): (&[f32], &[usize]),
) -> ModelProto {
    let mut m = model_opset(
        vec![node(op, "sc", &["x", "i", "u"], &["y"], attrs)],
        vec![vi("x", data_type::FLOAT, dims)],
        vec![],
        18,
    );
    if let Some(g) = m.graph.as_mut() {
        g.initializer = vec![
            crate::tensor_to_proto("i", &TensorData::I64(i.to_vec()), &Shape::new(i_dims)),
            crate::tensor_to_proto("u", &TensorData::F32(u.to_vec()), &Shape::new(u_dims)),
        ];
        g.output = vec![ValueInfoProto {
            name: "y".into(),
            ..Default::default()
        }];
    }
    m
}

#[test]
fn scatter_elements_and_nd_write_and_reduce() {
    let data = || x(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    // Axis 1: row 0 gets 10 at column 2 and 20 at column -3 (0); row 1 gets 30 at column 1.
    let m = model(
        "ScatterElements",
        vec![attr_i("axis", 1)],
        &[2, 3],
        (&[2, -3, 1, 1], &[2, 2]),
        (&[10., 20., 30., 40.], &[2, 2]),
    );
    assert_eq!(f32s(&run(&m, vec![data()])[0]), [20., 2., 10., 4., 40., 6.]);
    // Axis 0 with `add`: duplicate positions accumulate.
    let m = model(
        "ScatterElements",
        vec![attr_s("reduction", "add")],
        &[2, 3],
        (&[1, 1], &[2, 1]),
        (&[10., 20.], &[2, 1]),
    );
    assert_eq!(f32s(&run(&m, vec![data()])[0]), [1., 2., 3., 34., 5., 6.]);
    // The deprecated `Scatter` is `ScatterElements`.
    let m = model(
        "Scatter",
        vec![],
        &[2, 3],
        (&[0], &[1, 1]),
        (&[7.], &[1, 1]),
    );
    assert_eq!(f32s(&run(&m, vec![data()])[0]), [7., 2., 3., 4., 5., 6.]);
    // ScatterND: a whole row, then one element with `max`.
    let m = model(
        "ScatterND",
        vec![],
        &[2, 3],
        (&[1], &[1, 1]),
        (&[7., 8., 9.], &[1, 3]),
    );
    assert_eq!(f32s(&run(&m, vec![data()])[0]), [1., 2., 3., 7., 8., 9.]);
    let m = model(
        "ScatterND",
        vec![attr_s("reduction", "max")],
        &[2, 3],
        (&[0, 2, 1, 0], &[2, 2]),
        (&[0., 9.], &[2]),
    );
    assert_eq!(f32s(&run(&m, vec![data()])[0]), [1., 2., 3., 9., 5., 6.]);
}

#[test]
fn scatter_errors_name_the_node() {
    let cases = [
        // Updates of the wrong shape.
        model(
            "ScatterND",
            vec![],
            &[2, 3],
            (&[1], &[1, 1]),
            (&[7.], &[1, 1]),
        ),
        // Index tuples longer than the rank.
        model(
            "ScatterND",
            vec![],
            &[2, 3],
            (&[0, 0, 0], &[1, 3]),
            (&[7.], &[1]),
        ),
        // Indices and updates of different shapes.
        model(
            "ScatterElements",
            vec![],
            &[2, 3],
            (&[0], &[1, 1]),
            (&[7., 8.], &[1, 2]),
        ),
    ];
    for m in &cases {
        let e = err(m);
        assert!(matches!(e, OnnxError::ShapeMismatch { .. }), "{e}");
        assert!(e.to_string().contains("sc"), "{e}");
    }
    let bad_axis = model(
        "ScatterElements",
        vec![attr_i("axis", 2)],
        &[2, 3],
        (&[0], &[1, 1]),
        (&[7.], &[1, 1]),
    );
    assert!(matches!(err(&bad_axis), OnnxError::BadAttribute { .. }));
    let bad_reduction = model(
        "ScatterND",
        vec![attr_s("reduction", "mean")],
        &[2, 3],
        (&[1], &[1, 1]),
        (&[7., 8., 9.], &[1, 3]),
    );
    assert!(matches!(
        err(&bad_reduction),
        OnnxError::BadAttribute { .. }
    ));
}
