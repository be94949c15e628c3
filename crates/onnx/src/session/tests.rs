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

/// `y = GatherND(x, Transpose(NonZero(Relu(x))))` (the positive elements of `x`, in order)
/// and `z = NonZero(Floor(y))` (the positions of those at least 1): two nodes of
/// data-dependent shape, the second after the first.
fn non_zero_model() -> std::path::PathBuf {
    let m = model_opset(
        vec![
            node("Relu", "relu", &["x"], &["p"], vec![]),
            node("NonZero", "nz", &["p"], &["at"], vec![]),
            node("Transpose", "t", &["at"], &["idx"], vec![]),
            node("GatherND", "g", &["x", "idx"], &["y"], vec![]),
            node("Floor", "f", &["y"], &["fy"], vec![]),
            node("NonZero", "nz2", &["fy"], &["z"], vec![]),
        ],
        vec![symbolic("x", data_type::FLOAT, &["n"])],
        vec![
            symbolic("y", data_type::FLOAT, &["k"]),
            symbolic("z", data_type::INT64, &["one", "j"]),
        ],
        17,
    );
    let path =
        std::env::temp_dir().join(format!("graphlift-session-nz-{}.onnx", std::process::id()));
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    path
}

#[test]
fn data_dependent_shapes_run_as_dynamic_steps_specialised_by_shape() {
    let path = non_zero_model();
    // A plain import names the node and says what runs it.
    let options = ImportOptions {
        input_shapes: [("x".to_string(), vec![6])].into(),
        ..ImportOptions::default()
    };
    let e = crate::import_model_file_with(&path, &options).unwrap_err();
    assert!(
        matches!(&e, crate::OnnxError::DataDependentShape { operand, output, .. }
            if operand == "p" && output == "at"),
        "{e}"
    );
    assert!(e.to_string().contains("Session"), "{e}");
    let backends: [Arc<dyn Backend>; 2] = [
        Arc::new(InterpreterBackend),
        Arc::new(graphlift_jit::CpuJitBackend::new()),
    ];
    for backend in backends {
        let s = Session::new(&path, backend).unwrap();
        let mut compiles = Vec::new();
        for x in [
            vec![0.5f32, -1.0, 2.0, 3.5, -0.0, 1.0],
            vec![-2.0, 7.0, 0.25, 1.5, 2.0, -1.0], // the same counts: no new compile
            vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            vec![-1.0; 6], // nothing positive: empty outputs
        ] {
            let y: Vec<f32> = x.iter().copied().filter(|&v| v > 0.0).collect();
            let z: Vec<i64> = (0..y.len() as i64)
                .filter(|&i| y[i as usize] >= 1.0)
                .collect();
            let out = s.run(&[Tensor::from_vec(x.clone(), [6]).unwrap()]).unwrap();
            assert_eq!(out[0].read::<f32>().unwrap(), y.as_slice(), "{x:?}");
            assert_eq!(out[1].shape().dims(), [1, z.len()], "{x:?}");
            assert_eq!(out[1].read::<i64>().unwrap(), z.as_slice(), "{x:?}");
            compiles.push(s.stats().compiles);
        }
        // The model and its first suffix never compile whole (each splits). The first
        // prefix compiles once (one shape of x); the second prefix once per count of
        // positive elements (4, 4, 6, 0), and the second suffix once per pair of counts
        // ((4, 3), (4, 3), (6, 6), (0, 0)).
        assert_eq!(compiles, [3, 3, 5, 7], "{}", s.name);
    }
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_non_zero_of_constants_folds_at_import() {
    let path = non_zero_model();
    let mut model =
        crate::proto::ModelProto::decode(std::fs::read(&path).unwrap().as_slice()).unwrap();
    let graph = model.graph.as_mut().unwrap();
    graph.input.clear();
    let x = graphlift_ir::TensorData::F32(vec![0.0, 3.0, -1.0, 1.5]);
    let shape = graphlift_ir::Shape::new([4]);
    graph
        .initializer
        .push(crate::tensor::tensor_to_proto("x", &x, &shape));
    let m = crate::import_model(&model).unwrap();
    let out = InterpreterBackend
        .compile(&m.function)
        .unwrap()
        .run(&[])
        .unwrap();
    assert_eq!(out[0].read::<f32>().unwrap(), [3.0, 1.5]);
    assert_eq!(out[1].read::<i64>().unwrap(), [0, 1]);
    std::fs::remove_file(path).unwrap();
}

/// A `Loop` of data-dependent length: `M = ArgMax(x)`, and a body that stops once the sum
/// of its accumulator reaches `limit` (a graph input the body reads from the outer scope);
/// each iteration adds `x` to the accumulator and scans `acc · i`.
fn loop_model() -> std::path::PathBuf {
    let body = GraphProto {
        name: "body".into(),
        node: vec![
            node("Add", "add", &["acc", "x"], &["acc2"], vec![]),
            node(
                "Cast",
                "cast",
                &["i"],
                &["fi"],
                vec![crate::tests::attr_i("to", 1)],
            ),
            node("Mul", "mul", &["acc2", "fi"], &["scan"], vec![]),
            node(
                "ReduceSum",
                "sum",
                &["acc2"],
                &["tot"],
                vec![crate::tests::attr_i("keepdims", 0)],
            ),
            node("Less", "less", &["tot", "limit"], &["cout"], vec![]),
        ],
        input: vec![
            crate::tests::vi("i", data_type::INT64, &[]),
            crate::tests::vi("c", data_type::BOOL, &[]),
            symbolic("acc", data_type::FLOAT, &["n"]),
        ],
        output: vec![
            crate::tests::vi("cout", data_type::BOOL, &[]),
            symbolic("acc2", data_type::FLOAT, &["n"]),
            symbolic("scan", data_type::FLOAT, &["n"]),
        ],
        ..Default::default()
    };
    let body_attr = crate::tests::attr_g("body", body);
    let m = model_opset(
        vec![
            node(
                "ArgMax",
                "m",
                &["x"],
                &["m"],
                vec![crate::tests::attr_i("keepdims", 0)],
            ),
            node(
                "Loop",
                "loop",
                &["m", "", "init"],
                &["final", "scans"],
                vec![body_attr],
            ),
        ],
        vec![
            symbolic("x", data_type::FLOAT, &["n"]),
            symbolic("init", data_type::FLOAT, &["n"]),
            crate::tests::vi("limit", data_type::FLOAT, &[]),
        ],
        vec![
            symbolic("final", data_type::FLOAT, &["n"]),
            symbolic("scans", data_type::FLOAT, &["k", "n"]),
        ],
        17,
    );
    let path = std::env::temp_dir().join(format!(
        "graphlift-session-loop-{}.onnx",
        std::process::id()
    ));
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    path
}

#[test]
fn a_loop_of_data_dependent_length_runs_its_body_on_the_host() {
    let path = loop_model();
    let backends: [Arc<dyn Backend>; 2] = [
        Arc::new(InterpreterBackend),
        Arc::new(graphlift_jit::CpuJitBackend::new()),
    ];
    for backend in backends {
        let s = Session::new(&path, backend).unwrap();
        // (x, limit): M = argmax(x); stop early at the limit; no iteration at all.
        for (x, limit) in [
            (vec![1.0f32, -2.0, 3.0, 0.5], 100.0f32),
            (vec![1.0, 2.0, 0.5, 4.0], 10.0),
            (vec![5.0, 1.0, 0.0, 2.0], 100.0),
        ] {
            let init = vec![1.0f32; 4];
            let m = x
                .iter()
                .enumerate()
                .fold(0, |b, (i, &v)| if v > x[b] { i } else { b });
            let (mut acc, mut scans, mut i) = (init.clone(), Vec::new(), 0);
            let mut cond = true;
            while i < m && cond {
                acc = acc.iter().zip(&x).map(|(a, b)| a + b).collect();
                scans.extend(acc.iter().map(|a| a * i as f32));
                cond = acc.iter().sum::<f32>() < limit;
                i += 1;
            }
            let call = [
                Tensor::from_vec(x.clone(), [4]).unwrap(),
                Tensor::from_vec(init, [4]).unwrap(),
                Tensor::from_vec(vec![limit], Vec::<usize>::new()).unwrap(),
            ];
            let out = s.run(&call).unwrap();
            assert_eq!(
                out[0].read::<f32>().unwrap(),
                acc.as_slice(),
                "{x:?} {limit}"
            );
            let rows = scans.len() / 4;
            let want_shape: &[usize] = if rows == 0 { &[0] } else { &[rows, 4] };
            assert_eq!(out[1].shape().dims(), want_shape, "{x:?} {limit}");
            assert_eq!(
                out[1].read::<f32>().unwrap(),
                scans.as_slice(),
                "{x:?} {limit}"
            );
        }
        // The prefix (ArgMax) once, the body once per shape (one), the suffix once per
        // number of iterations (2; 1, stopped by the limit before M = 3; 0: an empty scan).
        assert_eq!(s.stats().compiles, 1 + 1 + 3, "{}", s.name);
    }
    std::fs::remove_file(path).unwrap();
}
