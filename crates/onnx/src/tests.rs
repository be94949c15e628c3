//! Unit tests of the importer: errors for bad models, naming and provenance, and the
//! numerics of the decompositions (run on the reference interpreter).

use graphlift_ir::{ElementType, Op, TensorData};
use graphlift_runtime::{Backend, InterpreterBackend, Tensor};
use prost::Message;

use crate::proto::*;
use crate::{import_model, import_model_bytes, import_model_file, OnnxError};

pub(crate) fn vi(name: &str, elem_type: i32, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| TensorShapeDimension {
                            dim_value: Some(d),
                            ..Default::default()
                        })
                        .collect(),
                }),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub(crate) fn node(
    op: &str,
    name: &str,
    inputs: &[&str],
    outputs: &[&str],
    attrs: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: name.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        attribute: attrs,
        ..Default::default()
    }
}

pub(crate) fn attr_f(name: &str, f: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::FLOAT,
        f,
        ..Default::default()
    }
}

pub(crate) fn attr_i(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::INT,
        i,
        ..Default::default()
    }
}

pub(crate) fn attr_s(name: &str, s: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::STRING,
        s: s.as_bytes().to_vec(),
        ..Default::default()
    }
}

fn model(
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
) -> ModelProto {
    model_opset(nodes, inputs, outputs, 17)
}

pub(crate) fn model_opset(
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    opset: i64,
) -> ModelProto {
    ModelProto {
        ir_version: 8,
        producer_name: "graphlift-tests".into(),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
        graph: Some(GraphProto {
            name: "g".into(),
            node: nodes,
            input: inputs,
            output: outputs,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A one-node model `y = op(x)` on FLOAT `[n]`.
fn unary_model(op: &str, attrs: Vec<AttributeProto>, n: i64) -> ModelProto {
    model(
        vec![node(op, "n0", &["x"], &["y"], attrs)],
        vec![vi("x", data_type::FLOAT, &[n])],
        vec![vi("y", data_type::FLOAT, &[n])],
    )
}

pub(crate) fn run(m: &ModelProto, inputs: Vec<Tensor>) -> Vec<Tensor> {
    let imported = import_model_bytes(&m.encode_to_vec()).unwrap();
    let exe = InterpreterBackend.compile(&imported.function).unwrap();
    exe.run(&inputs).unwrap()
}

pub(crate) fn f32s(t: &Tensor) -> Vec<f32> {
    t.read::<f32>().unwrap().to_vec()
}

pub(crate) fn err(m: &ModelProto) -> OnnxError {
    import_model(m).unwrap_err()
}

// ----- errors -----

#[test]
fn truncated_and_corrupt_bytes_never_panic() {
    let m = model(
        vec![
            node(
                "LeakyRelu",
                "lr",
                &["x"],
                &["t"],
                vec![attr_f("alpha", 0.1)],
            ),
            node("Add", "add", &["t", "x"], &["y"], vec![]),
        ],
        vec![vi("x", data_type::FLOAT, &[2, 3])],
        vec![vi("y", data_type::FLOAT, &[2, 3])],
    );
    let bytes = m.encode_to_vec();
    assert!(import_model_bytes(&bytes).is_ok());
    // Every prefix: an error (mostly protobuf, sometimes a model missing its tail), never
    // a panic.
    for cut in 0..bytes.len() {
        let _ = import_model_bytes(&bytes[..cut]);
    }
    let e = import_model_bytes(&bytes[..bytes.len() - 3]).unwrap_err();
    assert!(
        matches!(
            e,
            OnnxError::Protobuf {
                message_type: "ModelProto",
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().starts_with("invalid protobuf for ModelProto"),
        "{e}"
    );
    // Bit flips and byte substitutions of a valid model, and random bytes.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3000 {
        let mut b = bytes.clone();
        for _ in 0..1 + next() % 4 {
            let i = (next() % b.len() as u64) as usize;
            if next() % 2 == 0 {
                b[i] ^= 1 << (next() % 8);
            } else {
                b[i] = next() as u8;
            }
        }
        let _ = import_model_bytes(&b);
    }
    for len in 0..200 {
        let b: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let _ = import_model_bytes(&b);
        let _ = crate::read_tensor_proto(&b);
    }
}

#[test]
fn empty_bytes_are_a_model_without_graph() {
    let e = import_model_bytes(&[]).unwrap_err();
    assert!(e.to_string().contains("has no graph"), "{e}");
}

#[test]
fn unknown_op_names_node_op_and_domain() {
    let e = err(&unary_model("Frobnicate", vec![], 3));
    assert!(
        matches!(&e, OnnxError::UnsupportedOp { op_type, domain, opset: 17, at } if op_type == "Frobnicate" && domain == "ai.onnx" && at.name == "n0"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "Frobnicate `n0`: unsupported operator `Frobnicate` of domain `ai.onnx` (opset 17)"
    );
}

#[test]
fn unknown_domain_is_unsupported() {
    let mut m = unary_model("Relu", vec![], 3);
    m.opset_import.push(OperatorSetIdProto {
        domain: "com.microsoft".into(),
        version: 1,
    });
    if let Some(g) = m.graph.as_mut() {
        g.node[0].domain = "com.microsoft".into();
    }
    let e = err(&m);
    assert!(
        matches!(&e, OnnxError::UnsupportedOp { domain, opset: 1, .. } if domain == "com.microsoft"),
        "{e:?}"
    );
    assert!(e.to_string().contains("of domain `com.microsoft`"), "{e}");
}

#[test]
fn wrong_attribute_type_is_a_bad_attribute() {
    let e = err(&unary_model("LeakyRelu", vec![attr_i("alpha", 1)], 3));
    assert!(
        matches!(&e, OnnxError::BadAttribute { attribute, .. } if attribute == "alpha"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "LeakyRelu `n0`: attribute `alpha`: expected FLOAT, got INT"
    );
    let e = err(&unary_model("Gelu", vec![attr_s("approximate", "fast")], 3));
    assert!(
        e.to_string().contains("must be \"none\" or \"tanh\""),
        "{e}"
    );
    let e = err(&unary_model("Cast", vec![], 3));
    assert!(e.to_string().contains("attribute `to`: is required"), "{e}");
}

#[test]
fn dangling_input_name_is_a_missing_input() {
    let m = model(
        vec![node("Add", "", &["x", "nowhere"], &["y"], vec![])],
        vec![vi("x", data_type::FLOAT, &[3])],
        vec![vi("y", data_type::FLOAT, &[3])],
    );
    let e = err(&m);
    assert!(
        matches!(&e, OnnxError::MissingInput { index: 1, input, .. } if input == "nowhere"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "Add node #0 (output `y`): input 1 `nowhere` is not defined by any graph input, initializer or earlier node"
    );
    // A graph output nobody produces.
    let m = model(
        vec![],
        vec![vi("x", data_type::FLOAT, &[3])],
        vec![vi("z", data_type::FLOAT, &[3])],
    );
    assert!(err(&m)
        .to_string()
        .starts_with("graph output `z`: input 0 `z` is not defined"));
    // An omitted required input.
    let m = model(
        vec![node("Where", "w", &["", "x", "x"], &["y"], vec![])],
        vec![vi("x", data_type::FLOAT, &[3])],
        vec![vi("y", data_type::FLOAT, &[3])],
    );
    assert!(matches!(err(&m), OnnxError::MissingInput { index: 0, .. }));
}

#[test]
fn unsupported_element_types_are_named() {
    let m = model(
        vec![node("Abs", "a", &["x"], &["y"], vec![])],
        vec![vi("x", data_type::COMPLEX128, &[3])],
        vec![vi("y", data_type::COMPLEX128, &[3])],
    );
    let e = err(&m);
    assert!(e.is_unsupported_type());
    assert!(
        e.to_string()
            .starts_with("graph input `x`: unsupported element type COMPLEX128"),
        "{e}"
    );
    let e = err(&unary_model(
        "Cast",
        vec![attr_i("to", i64::from(data_type::COMPLEX64))],
        3,
    ));
    assert!(
        matches!(&e, OnnxError::UnsupportedElementType { data_type, at } if data_type == "COMPLEX64" && at.op_type == "Cast"),
        "{e:?}"
    );
}

#[test]
fn arithmetic_on_a_storage_type_names_the_node_and_type() {
    let m = model(
        vec![node("Abs", "a", &["x"], &["y"], vec![])],
        vec![vi("x", data_type::FLOAT8E4M3FN, &[3])],
        vec![vi("y", data_type::FLOAT8E4M3FN, &[3])],
    );
    let e = err(&m).to_string();
    assert!(e.contains("Abs") && e.contains("f8e4m3fn"), "{e}");
    let m = model(
        vec![node("Add", "a", &["x", "x"], &["y"], vec![])],
        vec![vi("x", data_type::INT4, &[3])],
        vec![vi("y", data_type::INT4, &[3])],
    );
    let e = err(&m).to_string();
    assert!(e.contains("Add") && e.contains("i4"), "{e}");
}

#[test]
fn dynamic_and_non_tensor_inputs_are_unsupported_types() {
    let mut x = vi("x", data_type::FLOAT, &[3]);
    if let Some(TypeProto {
        tensor_type: Some(t),
        ..
    }) = x.r#type.as_mut()
    {
        if let Some(s) = t.shape.as_mut() {
            s.dim[0] = TensorShapeDimension {
                dim_param: Some("N".into()),
                ..Default::default()
            };
        }
    }
    let m = model(
        vec![node("Relu", "r", &["x"], &["y"], vec![])],
        vec![x],
        vec![vi("y", data_type::FLOAT, &[3])],
    );
    let e = err(&m);
    assert!(e.is_unsupported_type());
    assert!(
        e.to_string().contains("symbolic dimension `N` on axis 0"),
        "{e}"
    );
    let seq = ValueInfoProto {
        name: "x".into(),
        r#type: Some(TypeProto {
            sequence_type: Some(Opaque {}),
            ..Default::default()
        }),
        ..Default::default()
    };
    let m = model(
        vec![node("Identity", "i", &["x"], &["y"], vec![])],
        vec![seq],
        vec![],
    );
    assert_eq!(
        err(&m).to_string(),
        "graph input `x`: unsupported type: sequence"
    );
}

#[test]
fn shape_and_type_mismatches() {
    let m = model(
        vec![node("Add", "add", &["a", "b"], &["y"], vec![])],
        vec![
            vi("a", data_type::FLOAT, &[3]),
            vi("b", data_type::FLOAT, &[4]),
        ],
        vec![vi("y", data_type::FLOAT, &[3])],
    );
    let e = err(&m);
    assert!(matches!(e, OnnxError::ShapeMismatch { .. }), "{e:?}");
    assert!(e.to_string().contains("[3], [4] do not broadcast"), "{e}");
    let m = model(
        vec![node("Add", "add", &["a", "b"], &["y"], vec![])],
        vec![
            vi("a", data_type::FLOAT, &[3]),
            vi("b", data_type::INT64, &[3]),
        ],
        vec![vi("y", data_type::FLOAT, &[3])],
    );
    let e = err(&m);
    assert!(matches!(e, OnnxError::TypeMismatch { .. }), "{e:?}");
    assert!(e.to_string().contains("(f32, i64)"), "{e}");
    // Float-only op on an integer.
    let m = model(
        vec![node("Elu", "elu", &["a"], &["y"], vec![])],
        vec![vi("a", data_type::INT32, &[3])],
        vec![vi("y", data_type::INT32, &[3])],
    );
    assert!(err(&m)
        .to_string()
        .contains("Elu needs a float input, got i32"));
    // A declared output shape that disagrees with the computed one.
    let m = model(
        vec![node("Relu", "r", &["a"], &["y"], vec![])],
        vec![vi("a", data_type::FLOAT, &[3])],
        vec![vi("y", data_type::FLOAT, &[4])],
    );
    assert_eq!(
        err(&m).to_string(),
        "graph output `y`: shape mismatch: declared [4], computed [3]"
    );
    // One with a symbolic extent is an annotation (exporters get them wrong): not checked.
    let mut y = vi("y", data_type::FLOAT, &[1, 1]);
    if let Some(TypeProto {
        tensor_type: Some(TypeProtoTensor { shape: Some(s), .. }),
        ..
    }) = y.r#type.as_mut()
    {
        s.dim[1] = TensorShapeDimension {
            dim_param: Some("seqlen".into()),
            ..Default::default()
        };
    }
    let m = model(
        vec![node("Relu", "r", &["a"], &["y"], vec![])],
        vec![vi("a", data_type::FLOAT, &[3])],
        vec![y],
    );
    assert!(import_model(&m).is_ok());
    // PRelu's slope broadcasts to the input only.
    let m = model(
        vec![node("PRelu", "p", &["a", "s"], &["y"], vec![])],
        vec![
            vi("a", data_type::FLOAT, &[3]),
            vi("s", data_type::FLOAT, &[2, 3]),
        ],
        vec![vi("y", data_type::FLOAT, &[3])],
    );
    assert!(err(&m)
        .to_string()
        .contains("does not broadcast to the input's shape [3] (unidirectional)"));
}

#[test]
fn missing_file_is_an_io_error() {
    let e = import_model_file(std::path::Path::new("/nonexistent/model.onnx")).unwrap_err();
    assert!(matches!(e, OnnxError::Io { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("reading `/nonexistent/model.onnx`"),
        "{e}"
    );
}

// ----- hostile models: each error names the node or graph item and what is wrong -----

/// `y = Relu(Add(x, b))` on FLOAT `[3]`, as `x -> add -> t -> relu -> y`, with the nodes
/// given in `order` (indices into `[add, relu]`) and their inputs as given.
fn two_node_model(add_inputs: &[&str], relu_input: &str, order: [usize; 2]) -> ModelProto {
    let nodes = [
        node("Add", "add", add_inputs, &["t"], vec![]),
        node("Relu", "relu", &[relu_input], &["y"], vec![]),
    ];
    model(
        order.iter().map(|&k| nodes[k].clone()).collect(),
        vec![vi("x", data_type::FLOAT, &[3])],
        vec![vi("y", data_type::FLOAT, &[3])],
    )
}

#[test]
fn truncated_model_file_names_the_file() {
    let m = two_node_model(&["x", "x"], "t", [0, 1]);
    let bytes = m.encode_to_vec();
    let dir = std::env::temp_dir().join(format!("graphlift-onnx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("truncated.onnx");
    std::fs::write(&path, &bytes).unwrap();
    assert!(import_model_file(&path).is_ok());
    std::fs::write(&path, &bytes[..bytes.len() - 5]).unwrap();
    let e = import_model_file(&path).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        matches!(&e, OnnxError::Protobuf { path: Some(p), message_type: "ModelProto", .. } if p.ends_with("truncated.onnx")),
        "{e:?}"
    );
    assert!(
        e.to_string().starts_with(&format!(
            "`{}`: invalid protobuf for ModelProto: ",
            path.display()
        )),
        "{e}"
    );
}

#[test]
fn a_cycle_between_nodes_is_named_node_by_node() {
    // add(x, y) -> t -> relu -> y -> add: a cycle of two nodes.
    let e = err(&two_node_model(&["x", "y"], "t", [0, 1]));
    assert!(
        matches!(&e, OnnxError::InvalidModel { at, .. } if at.name == "add"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "Add `add`: input 1 `y` is produced by Relu `relu`, which depends on this node: cycle \
         Add `add` -> Relu `relu` -> Add `add`"
    );
    // A node that reads its own output.
    let m = model(
        vec![node("Add", "self", &["x", "y"], &["y"], vec![])],
        vec![vi("x", data_type::FLOAT, &[3])],
        vec![vi("y", data_type::FLOAT, &[3])],
    );
    assert!(
        err(&m)
            .to_string()
            .ends_with("cycle Add `self` -> Add `self`"),
        "{}",
        err(&m)
    );
    // Three nodes, unnamed: named by their first output.
    let m = model(
        vec![
            node("Add", "", &["x", "c"], &["a"], vec![]),
            node("Neg", "", &["a"], &["b"], vec![]),
            node("Abs", "", &["b"], &["c"], vec![]),
        ],
        vec![vi("x", data_type::FLOAT, &[3])],
        vec![vi("c", data_type::FLOAT, &[3])],
    );
    assert_eq!(
        err(&m).to_string(),
        "Add node #0 (output `a`): input 1 `c` is produced by Abs node #2 (output `c`), which \
         depends on this node: cycle Add node #0 (output `a`) -> Neg node #1 (output `b`) -> \
         Abs node #2 (output `c`) -> Add node #0 (output `a`)"
    );
    // No cycle, only the wrong order.
    let e = err(&two_node_model(&["x", "x"], "t", [1, 0]));
    assert_eq!(
        e.to_string(),
        "Relu `relu`: input 0 `t` is produced by Add `add`, which comes later (node 1); ONNX \
         nodes must be listed in topological order"
    );
}

#[test]
fn a_value_produced_twice_names_both_producers() {
    let m = model(
        vec![
            node("Relu", "first", &["x"], &["t"], vec![]),
            node("Neg", "second", &["x"], &["t"], vec![]),
            node("Abs", "abs", &["t"], &["y"], vec![]),
        ],
        vec![vi("x", data_type::FLOAT, &[3])],
        vec![vi("y", data_type::FLOAT, &[3])],
    );
    let e = err(&m);
    assert!(
        matches!(&e, OnnxError::InvalidModel { at, .. } if at.name == "second"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "Neg `second`: output `t` is already produced by Relu `first` (ONNX graphs are SSA: \
         one producer per value)"
    );
    // A node output named like a graph input, or like an initializer.
    let m = model(
        vec![node("Neg", "n", &["x"], &["x"], vec![])],
        vec![vi("x", data_type::FLOAT, &[3])],
        vec![vi("x", data_type::FLOAT, &[3])],
    );
    assert!(err(&m)
        .to_string()
        .contains("output `x` is already a graph input"));
    let mut m = model(
        vec![node("Neg", "n", &["x"], &["w"], vec![])],
        vec![vi("x", data_type::FLOAT, &[3])],
        vec![vi("w", data_type::FLOAT, &[3])],
    );
    if let Some(g) = m.graph.as_mut() {
        g.initializer.push(crate::tensor_to_proto(
            "w",
            &TensorData::F32(vec![1.0; 3]),
            &graphlift_ir::Shape::new([3]),
        ));
    }
    assert!(err(&m)
        .to_string()
        .contains("output `w` is already an initializer"));
}

#[test]
fn a_list_attribute_where_a_scalar_is_expected_is_a_bad_attribute() {
    let ints = AttributeProto {
        name: "alpha".into(),
        r#type: attribute_type::INTS,
        ints: vec![1, 2],
        ..Default::default()
    };
    let e = err(&unary_model("LeakyRelu", vec![ints], 3));
    assert!(
        matches!(&e, OnnxError::BadAttribute { attribute, at, .. } if attribute == "alpha" && at.name == "n0"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "LeakyRelu `n0`: attribute `alpha`: expected FLOAT, got INTS"
    );
}

#[test]
fn an_op_of_a_domain_the_model_does_not_import_is_unsupported() {
    let mut m = unary_model("Relu", vec![], 3);
    if let Some(g) = m.graph.as_mut() {
        g.node[0].domain = "com.example".into();
    }
    let e = err(&m);
    assert!(
        matches!(&e, OnnxError::UnsupportedOp { domain, opset: 0, at, .. } if domain == "com.example" && at.name == "n0"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "Relu `n0`: unsupported operator `Relu` of domain `com.example` (the model imports no \
         opset of this domain)"
    );
}

#[test]
fn overflowing_or_short_initializers_and_inputs_are_named() {
    let with_init = |t: TensorProto| {
        let mut m = model(
            vec![node("Add", "add", &["x", "w"], &["y"], vec![])],
            vec![vi("x", data_type::FLOAT, &[3])],
            vec![vi("y", data_type::FLOAT, &[3])],
        );
        if let Some(g) = m.graph.as_mut() {
            g.initializer.push(t);
        }
        err(&m)
    };
    let e = with_init(TensorProto {
        name: "w".into(),
        dims: vec![i64::MAX, 4],
        data_type: data_type::FLOAT,
        ..Default::default()
    });
    assert!(
        matches!(&e, OnnxError::InvalidModel { at, .. } if at.op_type == "initializer" && at.name == "w"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "initializer `w`: shape [9223372036854775807, 4]: element count overflows"
    );
    let e = with_init(TensorProto {
        name: "w".into(),
        dims: vec![3],
        data_type: data_type::FLOAT,
        raw_data: vec![0; 8],
        ..Default::default()
    });
    assert_eq!(
        e.to_string(),
        "initializer `w`: raw_data has 8 bytes; shape [3] of FLOAT needs 12 bytes"
    );
    let e = with_init(TensorProto {
        name: "w".into(),
        dims: vec![3],
        data_type: data_type::FLOAT,
        float_data: vec![1.0],
        ..Default::default()
    });
    assert_eq!(
        e.to_string(),
        "initializer `w`: float_data holds 1 elements; shape [3] of FLOAT needs 3"
    );
    // A graph input with overflowing dims.
    let m = model(
        vec![node("Relu", "r", &["x"], &["y"], vec![])],
        vec![vi("x", data_type::FLOAT, &[1 << 62, 8])],
        vec![vi("y", data_type::FLOAT, &[1 << 62, 8])],
    );
    assert_eq!(
        err(&m).to_string(),
        "graph input `x`: shape [4611686018427387904, 8]: element count overflows"
    );
}

// ----- structure, names, provenance -----

#[test]
fn parameters_results_names_and_tags() {
    let init = crate::tensor_to_proto(
        "w",
        &TensorData::F32(vec![2.0, 3.0, 4.0]),
        &graphlift_ir::Shape::new([3]),
    );
    let mut m = model(
        vec![
            node("Mul", "mul", &["x", "w"], &["t"], vec![]),
            node("Softplus", "", &["t"], &["y"], vec![]),
            node("Neg", "neg", &["b"], &["z"], vec![]),
        ],
        // `w` is an initializer listed as an input too (IR < 4 style): not a parameter.
        vec![
            vi("x", data_type::FLOAT, &[2, 3]),
            vi("w", data_type::FLOAT, &[3]),
            vi("b", data_type::INT64, &[]),
        ],
        vec![
            vi("y", data_type::FLOAT, &[2, 3]),
            vi("z", data_type::INT64, &[]),
        ],
    );
    if let Some(g) = m.graph.as_mut() {
        g.initializer.push(init);
    }
    let im = import_model(&m).unwrap();
    let f = &im.function;
    let names = |ids: &[graphlift_ir::NodeId]| -> Vec<String> {
        ids.iter()
            .map(|&id| f.node(id).unwrap().name().to_string())
            .collect()
    };
    assert_eq!(names(f.parameters()), ["x", "b"]);
    assert_eq!(names(f.results()), ["y", "z"]);
    assert_eq!(
        im.inputs
            .iter()
            .map(|v| v.name.as_str())
            .collect::<Vec<_>>(),
        ["x", "b"]
    );
    assert_eq!(im.outputs[1].tensor_type.element_type, ElementType::I64);
    assert_eq!(im.opset, 17);
    assert_eq!(im.producer, "graphlift-tests");
    // The initializer is a Constant named after it; `t`'s producer is named `t`.
    assert!(matches!(f.node_by_name("w").unwrap().op(), Op::Constant(_)));
    let t = f.node_by_name("t").unwrap();
    assert_eq!(t.op().type_name(), "Multiply");
    assert!(t.tags().contains("onnx:Mul:mul"));
    assert_eq!(t.creation_site().line, 1);
    // Every node an ONNX node made carries its tag; the unnamed Softplus is tagged by its
    // output, and its helpers are named under it.
    let softplus: Vec<_> = f
        .nodes()
        .filter(|n| n.tags().contains("onnx:Softplus:y"))
        .collect();
    assert!(softplus.len() >= 6, "{}", softplus.len());
    assert!(
        softplus.iter().all(|n| n.name().starts_with("y/")),
        "{:?}",
        softplus.iter().map(|n| n.name()).collect::<Vec<_>>()
    );
    assert!(f
        .nodes()
        .filter(|n| matches!(n.op(), Op::Broadcast(_)))
        .all(|n| !n.tags().is_empty()));
    // `z` is a graph output: the Result takes the name, the Negative the node's.
    assert_eq!(f.node_by_name("neg").unwrap().op().type_name(), "Negative");
    f.validate().unwrap();
}

#[test]
fn identity_and_same_type_cast_add_no_nodes() {
    let m = model(
        vec![
            node("Identity", "id", &["x"], &["a"], vec![]),
            node(
                "Cast",
                "c",
                &["a"],
                &["y"],
                vec![attr_i("to", i64::from(data_type::FLOAT))],
            ),
        ],
        vec![vi("x", data_type::FLOAT, &[2])],
        vec![vi("y", data_type::FLOAT, &[2])],
    );
    let im = import_model(&m).unwrap();
    assert_eq!(im.function.node_count(), 2);
    let out = run(&m, vec![Tensor::from_vec(vec![1.5f32, -2.0], [2]).unwrap()]);
    assert_eq!(f32s(&out[0]), [1.5, -2.0]);
}

// ----- numerics -----

#[test]
fn softplus_and_mish_do_not_overflow() {
    let xs = vec![-1000.0f32, -20.0, 0.0, 1.0, 20.0, 100.0, 1000.0];
    let out = run(
        &unary_model("Softplus", vec![], 7),
        vec![Tensor::from_vec(xs.clone(), [7]).unwrap()],
    );
    let got = f32s(&out[0]);
    for (&x, &y) in xs.iter().zip(&got) {
        let want = f64::from(x).exp().ln_1p();
        let want = if want.is_infinite() {
            f64::from(x)
        } else {
            want
        };
        assert!(
            (f64::from(y) - want).abs() <= 1e-6 + 1e-6 * want.abs(),
            "softplus({x}) = {y}, want {want}"
        );
    }
    let out = run(
        &unary_model("Mish", vec![], 7),
        vec![Tensor::from_vec(xs.clone(), [7]).unwrap()],
    );
    let got = f32s(&out[0]);
    assert_eq!(got[0], -0.0);
    assert_eq!(got[6], 1000.0);
    assert!(got.iter().all(|y| y.is_finite()));
}

#[test]
fn softplus_keeps_relative_accuracy_far_below_zero() {
    // softplus(x) = e^x (1 - e^x/2 + ...) for x << 0: log(1 + e^x) would round to 0 there.
    let xs: Vec<f32> = vec![-80.0, -40.0, -20.0, -17.5, -10.0];
    let out = run(
        &unary_model("Softplus", vec![], xs.len() as i64),
        vec![Tensor::from_vec(xs.clone(), [xs.len()]).unwrap()],
    );
    for (&x, &y) in xs.iter().zip(&f32s(&out[0])) {
        let want = f64::from(x).exp().ln_1p();
        assert!(want > 0.0);
        let rel = (f64::from(y) - want).abs() / want;
        assert!(
            rel <= 2e-7,
            "softplus({x}) = {y:e}, want {want:e} (relative error {rel:e})"
        );
    }
}

#[test]
fn selu_defaults_are_the_spec_values() {
    let out = run(
        &unary_model("Selu", vec![], 2),
        vec![Tensor::from_vec(vec![1.0f32, -1.0], [2]).unwrap()],
    );
    let (alpha, gamma) = (1.673_263_192_176_818_8_f64, 1.050_701_022_148_132_3_f64);
    let got = f32s(&out[0]);
    assert_eq!(got[0], gamma as f32);
    assert!((f64::from(got[1]) - gamma * alpha * ((-1f64).exp() - 1.0)).abs() < 1e-6);
}

#[test]
fn pow_with_mixed_types() {
    let pow = |bt: i32, et: i32| {
        model(
            vec![node("Pow", "p", &["x", "y"], &["z"], vec![])],
            vec![vi("x", bt, &[3]), vi("y", et, &[3])],
            vec![vi("z", bt, &[3])],
        )
    };
    let out = run(
        &pow(data_type::INT32, data_type::FLOAT),
        vec![
            Tensor::from_vec(vec![2i32, 3, 9], [3]).unwrap(),
            Tensor::from_vec(vec![5.0f32, 6.0, 0.5], [3]).unwrap(),
        ],
    );
    assert_eq!(out[0].read::<i32>().unwrap(), [32, 729, 3]);
    let out = run(
        &pow(data_type::FLOAT, data_type::INT64),
        vec![
            Tensor::from_vec(vec![2.0f32, 0.5, -3.0], [3]).unwrap(),
            Tensor::from_vec(vec![3i64, -1, 2], [3]).unwrap(),
        ],
    );
    assert_eq!(f32s(&out[0]), [8.0, 2.0, 9.0]);
    let out = run(
        &pow(data_type::INT32, data_type::INT64),
        vec![
            Tensor::from_vec(vec![2i32, -3, 7], [3]).unwrap(),
            Tensor::from_vec(vec![10i64, 3, 0], [3]).unwrap(),
        ],
    );
    assert_eq!(out[0].read::<i32>().unwrap(), [1024, -27, 1]);
}

#[test]
fn clip_with_optional_bounds_and_old_attributes() {
    let clip = |inputs: &[&str]| {
        model(
            vec![node("Clip", "c", inputs, &["y"], vec![])],
            vec![
                vi("x", data_type::INT64, &[4]),
                vi("lo", data_type::INT64, &[]),
                vi("hi", data_type::INT64, &[]),
            ],
            vec![vi("y", data_type::INT64, &[4])],
        )
    };
    let args = || {
        vec![
            Tensor::from_vec(vec![-5i64, 0, 5, 10], [4]).unwrap(),
            Tensor::from_vec(vec![-1i64], []).unwrap(),
            Tensor::from_vec(vec![6i64], []).unwrap(),
        ]
    };
    assert_eq!(
        run(&clip(&["x", "lo", "hi"]), args())[0]
            .read::<i64>()
            .unwrap(),
        [-1, 0, 5, 6]
    );
    assert_eq!(
        run(&clip(&["x", "", "hi"]), args())[0]
            .read::<i64>()
            .unwrap(),
        [-5, 0, 5, 6]
    );
    assert_eq!(
        run(&clip(&["x"]), args())[0].read::<i64>().unwrap(),
        [-5, 0, 5, 10]
    );
    // Opset 6: attributes.
    let m = model_opset(
        vec![node(
            "Clip",
            "c",
            &["x"],
            &["y"],
            vec![attr_f("min", -1.0), attr_f("max", 1.0)],
        )],
        vec![vi("x", data_type::FLOAT, &[3])],
        vec![vi("y", data_type::FLOAT, &[3])],
        6,
    );
    let out = run(
        &m,
        vec![Tensor::from_vec(vec![-3.0f32, 0.25, 3.0], [3]).unwrap()],
    );
    assert_eq!(f32s(&out[0]), [-1.0, 0.25, 1.0]);
}

#[test]
fn prelu_broadcasts_the_slope() {
    let m = model(
        vec![node("PRelu", "p", &["x", "s"], &["y"], vec![])],
        vec![
            vi("x", data_type::FLOAT, &[2, 2]),
            vi("s", data_type::FLOAT, &[2]),
        ],
        vec![vi("y", data_type::FLOAT, &[2, 2])],
    );
    let out = run(
        &m,
        vec![
            Tensor::from_vec(vec![-1.0f32, -1.0, 2.0, -4.0], [2, 2]).unwrap(),
            Tensor::from_vec(vec![0.5f32, 0.25], [2]).unwrap(),
        ],
    );
    assert_eq!(f32s(&out[0]), [-0.5, -0.25, 2.0, -1.0]);
}

#[test]
fn constants_of_every_attribute_kind() {
    let ints = AttributeProto {
        name: "value_ints".into(),
        r#type: attribute_type::INTS,
        ints: vec![1, 2, 3],
        ..Default::default()
    };
    let t = crate::tensor_to_proto(
        "",
        &TensorData::Bool(vec![true, false, true]),
        &graphlift_ir::Shape::new([3]),
    );
    let tensor = AttributeProto {
        name: "value".into(),
        r#type: attribute_type::TENSOR,
        t: Some(t),
        ..Default::default()
    };
    let m = model(
        vec![
            node("Constant", "ci", &[], &["a"], vec![ints]),
            node(
                "Constant",
                "cf",
                &[],
                &["b"],
                vec![attr_f("value_float", 2.0)],
            ),
            node("Constant", "ct", &[], &["c"], vec![tensor]),
            node(
                "Cast",
                "cast",
                &["a"],
                &["af"],
                vec![attr_i("to", i64::from(data_type::FLOAT))],
            ),
            node("Mul", "m", &["af", "b"], &["y"], vec![]),
            node("Where", "w", &["c", "y", "b"], &["z"], vec![]),
        ],
        vec![],
        vec![vi("z", data_type::FLOAT, &[3])],
    );
    let out = run(&m, vec![]);
    assert_eq!(f32s(&out[0]), [2.0, 2.0, 6.0]);
    let both = model(
        vec![node(
            "Constant",
            "c",
            &[],
            &["y"],
            vec![attr_f("value_float", 1.0), attr_i("value_int", 1)],
        )],
        vec![],
        vec![],
    );
    assert!(
        err(&both).to_string().contains("exactly one of"),
        "{}",
        err(&both)
    );
}

#[test]
fn gelu_both_approximations() {
    let xs = vec![-3.0f32, -0.5, 0.0, 0.7, 2.5];
    for approx in ["none", "tanh"] {
        let out = run(
            &unary_model("Gelu", vec![attr_s("approximate", approx)], 5),
            vec![Tensor::from_vec(xs.clone(), [5]).unwrap()],
        );
        for (&x, &y) in xs.iter().zip(&f32s(&out[0])) {
            let x = f64::from(x);
            let want = if approx == "none" {
                0.5 * x * (1.0 + libm_erf(x / 2f64.sqrt()))
            } else {
                0.5 * x
                    * (1.0
                        + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())
            };
            assert!(
                (f64::from(y) - want).abs() < 1e-6,
                "gelu {approx} ({x}) = {y}, want {want}"
            );
        }
    }
}

/// erf by its Maclaurin series (plenty for |x| < 3 at 1e-9).
fn libm_erf(x: f64) -> f64 {
    let mut sum = 0.0;
    let mut term = x;
    for n in 0..200 {
        sum += term / f64::from(2 * n + 1);
        term *= -x * x / f64::from(n + 1);
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn legacy_broadcast_attribute() {
    let m = |axis: Option<i64>| {
        let mut attrs = vec![attr_i("broadcast", 1)];
        if let Some(a) = axis {
            attrs.push(attr_i("axis", a));
        }
        model_opset(
            vec![node("Add", "add", &["a", "b"], &["y"], attrs)],
            vec![
                vi("a", data_type::FLOAT, &[2, 3]),
                vi("b", data_type::FLOAT, &[3]),
            ],
            vec![vi("y", data_type::FLOAT, &[2, 3])],
            6,
        )
    };
    assert!(import_model(&m(None)).is_ok());
    assert!(import_model(&m(Some(1))).is_ok());
    let e = err(&m(Some(0)));
    assert!(
        matches!(&e, OnnxError::BadAttribute { attribute, .. } if attribute == "axis"),
        "{e:?}"
    );
    let no_bcast = model_opset(
        vec![node("Add", "add", &["a", "b"], &["y"], vec![])],
        vec![
            vi("a", data_type::FLOAT, &[2, 3]),
            vi("b", data_type::FLOAT, &[3]),
        ],
        vec![vi("y", data_type::FLOAT, &[2, 3])],
        6,
    );
    assert!(err(&no_bcast)
        .to_string()
        .contains("`broadcast` is not set"));
}

// ----- random fills -----

pub(crate) fn attr_ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::INTS,
        ints: v.to_vec(),
        ..Default::default()
    }
}

/// A GRAPH attribute (`If` branches, `Loop` and `Scan` bodies).
pub(crate) fn attr_g(name: &str, g: GraphProto) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::GRAPH,
        g: Some(g),
        ..Default::default()
    }
}

#[test]
fn random_uniform_and_normal_like_import_as_seeded_fills() {
    let m = model(
        vec![
            node(
                "RandomUniform",
                "u",
                &[],
                &["u"],
                vec![
                    attr_ints("shape", &[2, 3]),
                    attr_f("low", -1.0),
                    attr_f("high", 1.0),
                    attr_f("seed", 3.0),
                ],
            ),
            node(
                "RandomNormalLike",
                "n",
                &["x"],
                &["n"],
                vec![attr_f("mean", 5.0), attr_f("scale", 0.1)],
            ),
        ],
        vec![vi("x", data_type::DOUBLE, &[4])],
        vec![
            vi("u", data_type::FLOAT, &[2, 3]),
            vi("n", data_type::DOUBLE, &[4]),
        ],
    );
    let x = Tensor::from_vec(vec![0.0f64; 4], [4]).unwrap();
    let first = run(&m, vec![x.clone()]);
    let u = f32s(&first[0]);
    assert!(u.iter().all(|v| (-1.0..=1.0).contains(v)), "{u:?}");
    assert!(u.iter().any(|&v| v != u[0]), "{u:?}");
    let n = first[1].read::<f64>().unwrap();
    assert!(n.iter().all(|v| (4.0..6.0).contains(v)), "{n:?}");
    // The same model computes the same values again (the seed, or seed 0 without one).
    assert_eq!(run(&m, vec![x]), first);

    let bad = model(
        vec![node(
            "RandomUniform",
            "bad",
            &[],
            &["u"],
            vec![
                attr_ints("shape", &[2]),
                attr_i("dtype", data_type::INT32 as i64),
            ],
        )],
        vec![],
        vec![vi("u", data_type::INT32, &[2])],
    );
    let e = err(&bad).to_string();
    assert!(e.contains("bad") && e.contains("not f32 or f64"), "{e}");
}
