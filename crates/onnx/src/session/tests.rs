//! A session specialises a model by its call's shapes and shape-operand values, caches the
//! specialisations (least recently used first out) and gives the same outputs on both
//! backends.

use std::sync::Arc;

use graphlift_runtime::{Backend, InterpreterBackend, Tensor};
use prost::Message;

use super::{Session, SessionError, SessionStats};
use crate::proto::*;
use crate::tests::{model_opset, node};
use crate::ImportOptions;

/// A graph input of `elem_type` whose extents are the symbolic dimensions `dims`.
fn symbolic(name: &str, elem_type: i32, dims: &[&str]) -> ValueInfoProto {
    let mut v = crate::tests::vi(name, elem_type, &[]);
    let t = v.r#type.as_mut().unwrap().tensor_type.as_mut().unwrap();
    t.shape.as_mut().unwrap().dim = dims
        .iter()
        .map(|d| TensorShapeDimension {
            dim_param: Some(d.to_string()),
            ..Default::default()
        })
        .collect();
    v
}

/// `y = Relu(Reshape(x, shape))`: `x` FLOAT `[n]`, `shape` INT64 `[2]`, written to a file of
/// its own.
fn reshape_model(tag: &str) -> std::path::PathBuf {
    let m = model_opset(
        vec![
            node("Reshape", "r", &["x", "shape"], &["z"], vec![]),
            node("Relu", "a", &["z"], &["y"], vec![]),
        ],
        vec![
            symbolic("x", data_type::FLOAT, &["n"]),
            crate::tests::vi("shape", data_type::INT64, &[2]),
        ],
        vec![symbolic("y", data_type::FLOAT, &["rows", "cols"])],
        17,
    );
    let path = std::env::temp_dir().join(format!(
        "graphlift-session-{tag}-{}.onnx",
        std::process::id()
    ));
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    path
}

fn call(n: usize, shape: [i64; 2]) -> Vec<Tensor> {
    let x: Vec<f32> = (0..n).map(|i| i as f32 - 5.0).collect();
    vec![
        Tensor::from_vec(x, [n]).unwrap(),
        Tensor::from_vec(shape.to_vec(), [2]).unwrap(),
    ]
}

fn check(s: &Session, n: usize, shape: [i64; 2]) {
    let out = s.run(&call(n, shape)).unwrap();
    assert_eq!(out.len(), 1);
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    assert_eq!(out[0].shape().dims(), dims.as_slice());
    let want: Vec<f32> = (0..n).map(|i| (i as f32 - 5.0).max(0.0)).collect();
    assert_eq!(out[0].read::<f32>().unwrap(), want.as_slice());
}

#[test]
fn each_new_shape_or_operand_value_compiles_once_and_the_least_recent_goes_first() {
    let backends: [Arc<dyn Backend>; 2] = [
        Arc::new(InterpreterBackend),
        Arc::new(graphlift_jit::CpuJitBackend::new()),
    ];
    for backend in backends {
        let path = reshape_model(backend.name());
        let s = Session::with_capacity(&path, backend, ImportOptions::default(), 2).unwrap();
        assert_eq!(s.input_names(), ["x", "shape"]);
        check(&s, 12, [3, 4]);
        check(&s, 12, [2, 6]);
        check(&s, 12, [3, 4]); // a hit: the value [3, 4] was seen
        let stats = |c, e, v| SessionStats {
            compiles: c,
            entries: e,
            evictions: v,
            capacity: 2,
        };
        assert_eq!(s.stats(), stats(2, 2, 0));
        check(&s, 8, [2, 4]); // a new length of `x`: its symbolic dimension
        assert_eq!(s.stats(), stats(3, 2, 1)); // [2, 6] was the least recently used
        check(&s, 12, [3, 4]);
        assert_eq!(s.stats(), stats(3, 2, 1));
        check(&s, 12, [2, 6]);
        assert_eq!(s.stats(), stats(4, 2, 2));
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn a_cache_of_nothing_compiles_every_call() {
    let path = reshape_model("uncached");
    let s = Session::with_capacity(
        &path,
        Arc::new(InterpreterBackend),
        ImportOptions::default(),
        0,
    )
    .unwrap();
    check(&s, 12, [3, 4]);
    check(&s, 12, [3, 4]);
    assert_eq!(s.stats().compiles, 2);
    assert_eq!(s.stats().entries, 0);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn bad_calls_are_named_errors() {
    let path = reshape_model("errors");
    let s = Session::new(&path, Arc::new(InterpreterBackend)).unwrap();
    let e = s.run(&call(12, [3, 4])[..1]).unwrap_err();
    assert!(
        matches!(
            e,
            SessionError::InputCount {
                expected: 2,
                got: 1,
                ..
            }
        ),
        "{e}"
    );
    // A shape operand whose product is not x's length: the import names the Reshape node.
    let e = s.run(&call(12, [5, 4])).unwrap_err();
    assert!(e.to_string().starts_with("Reshape `r`"), "{e}");
    assert!(matches!(e, SessionError::Import(_)), "{e}");
    // An operand of another element type than the graph input declares.
    let mut wrong = call(12, [3, 4]);
    wrong[0] = Tensor::from_vec((0..12).map(f64::from).collect::<Vec<_>>(), [12]).unwrap();
    assert!(s.run(&wrong).is_err());
    std::fs::remove_file(path).unwrap();
    let missing = Session::new(
        std::path::Path::new("/nonexistent/m.onnx"),
        Arc::new(InterpreterBackend),
    );
    assert!(matches!(missing, Err(crate::OnnxError::Io { .. })));
}
