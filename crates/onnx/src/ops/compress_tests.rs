//! `Compress`: a constant condition imports as a gather; a computed one runs in a `Session`
//! as a dynamic step on both backends; named errors.

use std::sync::Arc;

use graphlift_ir::{Shape, TensorData};
use graphlift_jit::CpuJitBackend;
use graphlift_runtime::{Backend, InterpreterBackend, Tensor};
use prost::Message;

use super::one_node::{model, run_both, tensor, values, Operand, Operand::*};
use crate::proto::data_type::{BOOL, FLOAT, INT64};
use crate::proto::*;
use crate::tests::{attr_i, err, model_opset, node, vi};
use crate::{tensor_to_proto, Session};

#[test]
fn a_constant_condition_is_a_gather_of_the_slices_it_keeps() {
    let condition = TensorData::Bool(vec![true, false, true]);
    let m = model(
        "Compress",
        11,
        vec![Input("x", FLOAT, &[3, 2]), Init("c", condition, &[3])],
        &["y"],
        vec![attr_i("axis", -2)],
    );
    let x = tensor(TensorData::F32(vec![1., 2., 3., 4., 5., 6.]), &[3, 2]);
    let y = run_both(&m, &[x]).remove(0);
    assert_eq!(y.shape().dims(), [2, 2]);
    assert_eq!(values(&y), [1., 2., 5., 6.]);
}

#[test]
fn a_computed_condition_runs_as_a_dynamic_step() {
    // y = Compress(x, x > 0) over the flattened x, then doubled.
    let mut m = model_opset(
        vec![
            node("Greater", "gt", &["x", "zero"], &["c"], vec![]),
            node("Compress", "cp", &["x", "c"], &["k"], vec![]),
            node("Add", "add", &["k", "k"], &["y"], vec![]),
        ],
        vec![vi("x", FLOAT, &[4])],
        vec![],
        11,
    );
    let g = m.graph.as_mut().unwrap();
    g.initializer = vec![tensor_to_proto(
        "zero",
        &TensorData::F32(vec![0.0]),
        &Shape::scalar(),
    )];
    g.output = vec![ValueInfoProto {
        name: "y".into(),
        ..Default::default()
    }];
    let path = std::env::temp_dir().join(format!("graphlift-compress-{}.onnx", std::process::id()));
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    let backends: [Arc<dyn Backend>; 2] =
        [Arc::new(InterpreterBackend), Arc::new(CpuJitBackend::new())];
    for backend in backends {
        let s = Session::new(&path, backend).unwrap();
        for (x, want) in [
            (vec![1.0f32, -2.0, 3.0, 0.0], vec![2.0f32, 6.0]),
            (vec![-1.0, -2.0, -3.0, -4.0], vec![]),
        ] {
            let out = s.run(&[Tensor::from_vec(x, [4]).unwrap()]).unwrap();
            assert_eq!(out[0].read::<f32>().unwrap(), want.as_slice());
        }
    }
    std::fs::remove_file(path).unwrap();
}

#[test]
fn malformed_nodes_are_errors_naming_the_node() {
    let with = |c: Operand| {
        let m = model(
            "Compress",
            11,
            vec![Input("x", FLOAT, &[3, 2]), c],
            &["y"],
            vec![attr_i("axis", 1)],
        );
        err(&m).to_string()
    };
    for (e, says) in [
        (with(Input("c", INT64, &[2])), "BOOL"),
        (with(Input("c", BOOL, &[3])), "condition of 3"),
    ] {
        assert!(
            e.contains("Compress `n0`") && e.contains(says),
            "{says}: {e}"
        );
    }
}
