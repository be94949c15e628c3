//! `NonMaxSuppression`: folded at import over constants; over computed scores, run by a
//! `Session` as a dynamic step between compiled stages on both backends; named errors.

use std::sync::Arc;

use graphlift_ir::{Shape, TensorData};
use graphlift_jit::CpuJitBackend;
use graphlift_runtime::{Backend, InterpreterBackend, Tensor};
use prost::Message;

use crate::proto::*;
use crate::tests::{attr_i, err, model_opset, node, vi};
use crate::{import_model, tensor_to_proto, OnnxError, Session};

/// Two clusters of three boxes and one box apart, corners `[y1, x1, y2, x2]` (`[1, 6, 4]`).
const BOXES: [f32; 24] = [
    0.0, 0.0, 1.0, 1.0, 0.0, 0.1, 1.0, 1.1, 0.0, -0.1, 1.0, 0.9, //
    0.0, 10.0, 1.0, 11.0, 0.0, 10.1, 1.0, 11.1, 0.0, 100.0, 1.0, 101.0,
];

/// Initializers for the boxes and the three scalar parameters (`max`, `iou`, `score`).
fn parameters(max: i64, iou: f32, score: f32) -> Vec<TensorProto> {
    vec![
        tensor_to_proto(
            "boxes",
            &TensorData::F32(BOXES.to_vec()),
            &Shape::new([1, 6, 4]),
        ),
        tensor_to_proto("max", &TensorData::I64(vec![max]), &Shape::new([1])),
        tensor_to_proto("iou", &TensorData::F32(vec![iou]), &Shape::new([1])),
        tensor_to_proto("score", &TensorData::F32(vec![score]), &Shape::new([1])),
    ]
}

/// `selected = NonMaxSuppression(boxes, Sigmoid(logits), max, iou, score)` and
/// `boxes_of = Cast<FLOAT>(selected)` after it, `logits` FLOAT `[1, 1, 6]` a graph input.
fn computed_scores(max: i64, iou: f32, score: f32) -> ModelProto {
    let mut m = model_opset(
        vec![
            node("Sigmoid", "sig", &["logits"], &["scores"], vec![]),
            node(
                "NonMaxSuppression",
                "nms",
                &["boxes", "scores", "max", "iou", "score"],
                &["selected"],
                vec![],
            ),
            node(
                "Cast",
                "cast",
                &["selected"],
                &["as_float"],
                vec![attr_i("to", 1)],
            ),
        ],
        vec![vi("logits", data_type::FLOAT, &[1, 1, 6])],
        vec![],
        11,
    );
    let g = m.graph.as_mut().unwrap();
    g.initializer = parameters(max, iou, score);
    g.output = ["selected", "as_float"]
        .iter()
        .map(|n| ValueInfoProto {
            name: (*n).into(),
            ..Default::default()
        })
        .collect();
    m
}

/// The logits whose sigmoids are `p`.
fn logits(p: &[f32]) -> Tensor {
    let v: Vec<f32> = p.iter().map(|&p| (p / (1.0 - p)).ln()).collect();
    Tensor::from_vec(v, [1, 1, 6]).unwrap()
}

#[test]
fn computed_scores_run_as_a_dynamic_step_on_both_backends() {
    let m = computed_scores(3, 0.5, 0.2);
    let e = import_model(&m).unwrap_err();
    assert!(
        matches!(&e, OnnxError::DataDependentShape { operand, output, .. }
            if operand == "scores" && output == "selected"),
        "{e}"
    );
    let path = std::env::temp_dir().join(format!("graphlift-nms-{}.onnx", std::process::id()));
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    let backends: [Arc<dyn Backend>; 2] =
        [Arc::new(InterpreterBackend), Arc::new(CpuJitBackend::new())];
    for backend in backends {
        let s = Session::new(&path, backend).unwrap();
        for (p, want) in [
            // Box 3 first, 0 next (1 and 2 overlap it, 4 overlaps 3), then 5.
            ([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], vec![3, 0, 5]),
            // Box 5 under the score threshold; box 2 now leads its cluster.
            ([0.5, 0.4, 0.99, 0.3, 0.6, 0.1], vec![2, 4]),
            // Nothing above the threshold: no rows.
            ([0.1; 6], vec![]),
        ] {
            let out = s.run(&[logits(&p)]).unwrap();
            let rows: Vec<i64> = want.iter().flat_map(|&b| [0, 0, b]).collect();
            assert_eq!(out[0].shape().dims(), [want.len(), 3], "{p:?}");
            assert_eq!(out[0].read::<i64>().unwrap(), rows.as_slice(), "{p:?}");
            let as_float: Vec<f32> = rows.iter().map(|&v| v as f32).collect();
            assert_eq!(out[1].read::<f32>().unwrap(), as_float.as_slice());
        }
    }
    std::fs::remove_file(path).unwrap();
}

#[test]
fn constant_operands_fold_at_import() {
    let mut m = computed_scores(2, 0.5, 0.0);
    let g = m.graph.as_mut().unwrap();
    g.input.clear();
    let scores = TensorData::F32(vec![0.9, 0.75, 0.6, 0.95, 0.5, 0.3]);
    g.initializer
        .push(tensor_to_proto("scores", &scores, &Shape::new([1, 1, 6])));
    g.node.remove(0);
    let imported = import_model(&m).unwrap();
    let out = InterpreterBackend
        .compile(&imported.function)
        .unwrap()
        .run(&[])
        .unwrap();
    assert_eq!(out[0].read::<i64>().unwrap(), [0, 0, 3, 0, 0, 0]);
}

/// A change to the model of [`computed_scores`].
type Edit = Box<dyn Fn(&mut GraphProto)>;

#[test]
fn malformed_nodes_are_errors_naming_the_node() {
    let with = |f: &dyn Fn(&mut GraphProto)| {
        let mut m = computed_scores(3, 0.5, 0.2);
        f(m.graph.as_mut().unwrap());
        err(&m).to_string()
    };
    let cases: [(&str, Edit); 5] = [
        (
            "center_point_box",
            Box::new(|g| g.node[1].attribute.push(attr_i("center_point_box", 2))),
        ),
        (
            "iou_threshold 1.5",
            Box::new(|g| g.initializer = parameters(3, 1.5, 0.2)),
        ),
        (
            "must be [B, N, 4]",
            Box::new(|g| {
                let b = TensorData::F32(BOXES[..18].to_vec());
                g.initializer[0] = tensor_to_proto("boxes", &b, &Shape::new([1, 6, 3]));
            }),
        ),
        (
            "`max_output_boxes_per_class`) must be i64",
            Box::new(|g| {
                let f = TensorData::F32(vec![3.0]);
                g.initializer[1] = tensor_to_proto("max", &f, &Shape::new([1]));
            }),
        ),
        (
            "2 values",
            Box::new(|g| {
                let two = TensorData::F32(vec![0.1, 0.2]);
                g.initializer[3] = tensor_to_proto("score", &two, &Shape::new([2]));
            }),
        ),
    ];
    for (says, f) in &cases {
        let e = with(f.as_ref());
        assert!(e.contains("NonMaxSuppression `nms`"), "{e}");
        assert!(e.contains(says), "{says}: {e}");
    }
}
