//! Unit tests of `TopK`: hand-computed cases on the reference interpreter, and named errors.

use graphlift_ir::{Shape, TensorData};

use super::tests::x;
use crate::proto::*;
use crate::tests::{attr_i, err, f32s, model_opset, node, run, vi};
use crate::OnnxError;

/// `TopK(x, K)` on FLOAT `x` of `dims` with `K` an initializer, outputs `v` and `i`.
fn top_k(k: &[i64], attrs: Vec<AttributeProto>, dims: &[i64], opset: i64) -> ModelProto {
    let inputs: &[&str] = if opset < 10 { &["x"] } else { &["x", "k"] };
    let mut m = model_opset(
        vec![node("TopK", "top", inputs, &["v", "i"], attrs)],
        vec![vi("x", data_type::FLOAT, dims)],
        vec![],
        opset,
    );
    if let Some(g) = m.graph.as_mut() {
        if opset >= 10 {
            let kt = TensorData::I64(k.to_vec());
            g.initializer = vec![crate::tensor_to_proto("k", &kt, &Shape::new([k.len()]))];
        }
        g.output = ["v", "i"]
            .map(|n| ValueInfoProto {
                name: n.into(),
                ..Default::default()
            })
            .into();
    }
    m
}

#[test]
fn top_k_values_and_indices_ties_to_the_lower_index() {
    // [[2, 7, 7, 1], [5, 1, 1, 9]], K = 2 along the last axis.
    let data = x(&[2., 7., 7., 1., 5., 1., 1., 9.], &[2, 4]);
    let out = run(&top_k(&[2], vec![], &[2, 4], 11), vec![data.clone()]);
    assert_eq!(f32s(&out[0]), [7., 7., 9., 5.]);
    assert_eq!(out[1].read::<i64>().unwrap(), [1, 2, 3, 0]);
    assert_eq!(out[1].shape().dims(), [2, 2]);
    // The smallest three, ascending.
    let m = top_k(&[3], vec![attr_i("largest", 0)], &[2, 4], 11);
    let out = run(&m, vec![data.clone()]);
    assert_eq!(f32s(&out[0]), [1., 2., 7., 1., 1., 5.]);
    assert_eq!(out[1].read::<i64>().unwrap(), [3, 0, 1, 1, 2, 0]);
    // Along axis 0 (negative), opset 1's attribute `k`.
    let m = top_k(&[], vec![attr_i("axis", -2), attr_i("k", 1)], &[2, 4], 1);
    let out = run(&m, vec![data]);
    assert_eq!(f32s(&out[0]), [5., 7., 7., 9.]);
    assert_eq!(out[1].read::<i64>().unwrap(), [1, 0, 0, 1]);
}

#[test]
fn top_k_errors_name_the_node() {
    for (k, attrs) in [
        (vec![5], vec![]),
        (vec![-1], vec![]),
        (vec![1, 2], vec![]),
        (vec![1], vec![attr_i("axis", 2)]),
    ] {
        let e = err(&top_k(&k, attrs, &[2, 4], 11));
        assert!(
            matches!(
                e,
                OnnxError::ShapeMismatch { .. } | OnnxError::BadAttribute { .. }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("top"), "{e}");
    }
    let e = err(&top_k(&[], vec![], &[2, 4], 1));
    assert!(matches!(e, OnnxError::BadAttribute { .. }), "{e}");
}
