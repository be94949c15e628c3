//! Unit tests of `GatherElements`, `GatherND`, `OneHot` and `InstanceNormalization`:
//! hand-computed cases on the reference interpreter, and named errors.

use graphlift_ir::{Shape, TensorData};
use prost::Message;

use super::tests::{floats_init, x};
use crate::proto::*;
use crate::tests::{attr_i, err, f32s, model_opset, node, run, vi};
use crate::OnnxError;

/// `op(x, consts..)` on FLOAT `x` of `dims`, output `y`.
fn model(
    op: &str,
    attrs: Vec<AttributeProto>,
    dims: &[i64],
    inits: Vec<TensorProto>,
) -> ModelProto {
    let mut inputs = vec!["x"];
    inputs.extend(inits.iter().map(|t| t.name.as_str()));
    let mut m = model_opset(
        vec![node(op, "n0", &inputs, &["y"], attrs)],
        vec![vi("x", data_type::FLOAT, dims)],
        vec![],
        13,
    );
    if let Some(g) = m.graph.as_mut() {
        g.initializer = inits;
        g.output = vec![ValueInfoProto {
            name: "y".into(),
            ..Default::default()
        }];
    }
    m
}

fn ints(name: &str, v: &[i64], dims: &[usize]) -> TensorProto {
    crate::tensor_to_proto(name, &TensorData::I64(v.to_vec()), &Shape::new(dims))
}

#[test]
fn gather_elements_and_gather_nd_pick_by_position() {
    // data [[1, 2], [3, 4]], axis 1, indices [[0, 0], [1, -2]] -> [[1, 1], [4, 3]].
    let m = model(
        "GatherElements",
        vec![attr_i("axis", 1)],
        &[2, 2],
        vec![ints("i", &[0, 0, 1, -2], &[2, 2])],
    );
    let data = x(&[1., 2., 3., 4.], &[2, 2]);
    assert_eq!(f32s(&run(&m, vec![data.clone()])[0]), [1., 1., 4., 3.]);
    // GatherND: indices [[1, 0], [0, 1]] -> [3, 2]; [[1], [0]] -> rows [[3, 4], [1, 2]].
    let m = model(
        "GatherND",
        vec![],
        &[2, 2],
        vec![ints("i", &[1, 0, 0, 1], &[2, 2])],
    );
    assert_eq!(f32s(&run(&m, vec![data.clone()])[0]), [3., 2.]);
    let m = model(
        "GatherND",
        vec![],
        &[2, 2],
        vec![ints("i", &[1, 0], &[2, 1])],
    );
    assert_eq!(f32s(&run(&m, vec![data.clone()])[0]), [3., 4., 1., 2.]);
    // batch_dims 1: row b picks its own element -> [data[0][1], data[1][0]] = [2, 3].
    let m = model(
        "GatherND",
        vec![attr_i("batch_dims", 1)],
        &[2, 2],
        vec![ints("i", &[1, 0], &[2, 1])],
    );
    assert_eq!(f32s(&run(&m, vec![data])[0]), [2., 3.]);
    let bad = model(
        "GatherElements",
        vec![attr_i("axis", 2)],
        &[2, 2],
        vec![ints("i", &[0], &[1, 1])],
    );
    let e = err(&bad);
    assert!(
        matches!(&e, OnnxError::BadAttribute { attribute, .. } if attribute == "axis"),
        "{e}"
    );
}

#[test]
fn one_hot_and_its_depth() {
    // indices x = [1, -1] (floats, truncated), depth 3, values [0, 5], axis -1.
    let m = model(
        "OneHot",
        vec![],
        &[2],
        vec![
            ints("depth", &[3], &[]),
            floats_init("values", &[0., 5.], &[2]),
        ],
    );
    assert_eq!(
        f32s(&run(&m, vec![x(&[1., -1.], &[2])])[0]),
        [0., 5., 0., 0., 0., 5.]
    );
    // A depth given by a graph input is named.
    let mut m = model(
        "OneHot",
        vec![],
        &[2],
        vec![floats_init("values", &[0., 5.], &[2])],
    );
    if let Some(g) = m.graph.as_mut() {
        g.node[0].input = vec!["x".into(), "d".into(), "values".into()];
        g.input.push(vi("d", data_type::INT64, &[]));
    }
    let e = crate::import_model_bytes(&m.encode_to_vec()).unwrap_err();
    assert!(
        matches!(&e, OnnxError::RunTimeOperand { input, .. } if input == "d"),
        "{e}"
    );
    let zero = model(
        "OneHot",
        vec![],
        &[2],
        vec![
            ints("depth", &[0], &[]),
            floats_init("values", &[0., 5.], &[2]),
        ],
    );
    assert!(matches!(err(&zero), OnnxError::ShapeMismatch { .. }));
}

#[test]
fn instance_norm_standardizes_each_channel() {
    // One sample, two channels [1, 3] and [2, 2]: (-1, 1) / sqrt(1 + eps) and (0, 0);
    // scale [2, 1], bias [0, 7].
    let m = model(
        "InstanceNormalization",
        vec![],
        &[1, 2, 2],
        vec![
            floats_init("s", &[2., 1.], &[2]),
            floats_init("b", &[0., 7.], &[2]),
        ],
    );
    let y = f32s(&run(&m, vec![x(&[1., 3., 2., 2.], &[1, 2, 2])])[0]);
    let k = 2.0 / (1.0f32 + 1e-5).sqrt();
    for (g, w) in y.iter().zip([-k, k, 7., 7.]) {
        assert!((g - w).abs() < 1e-5, "{y:?}");
    }
    let bad = model(
        "InstanceNormalization",
        vec![],
        &[1, 2, 2],
        vec![
            floats_init("s", &[2.], &[1]),
            floats_init("b", &[0., 7.], &[2]),
        ],
    );
    assert!(err(&bad).to_string().contains("scale"));
}
