//! JSON serialization: exact round trips and clear errors for bad documents.

mod common;

use std::sync::Arc;

use common::same_structure;
use graphlift_ir::{
    Attention, CreationSite,
    ElementType::{Bool, F32, F64, I16, I32, I64},
    Function, FunctionBuilder, FusedKernel, IrError, Op, Output, SerializationError,
    SerializationErrorKind, Shape, TensorData, UnaryOp,
};
use serde_json::{json, Value};

/// A function with every element type, special floats, a two-output fused kernel, control
/// dependencies, metadata, tags and pass history.
fn sample() -> Function {
    let b = FunctionBuilder::new("sample \"fn\"");
    let x = b.parameter("x", F32, [2, 3]);
    let bias = b.parameter("bias", F32, [3]);
    let y = ((x + bias).relu() * 2.0)
        .named("scaled")
        .tagged("onnx:Mul_7");
    let mut f = b.finish(&[y]).unwrap();

    let specials = vec![
        f32::NAN,
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xffa0_0001), // signalling NaN, negative
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::from_bits(1), // smallest subnormal
    ];
    let constants = [
        (TensorData::F32(specials), Shape::new([7])),
        (
            TensorData::F64(vec![f64::from_bits(0x7ff8_dead_beef_0001), -0.0, 5e-324]),
            Shape::new([3]),
        ),
        (
            TensorData::I64(vec![i64::MAX, i64::MIN, (1 << 53) + 1, -((1 << 53) + 1)]),
            Shape::new([2, 2]),
        ),
        (
            TensorData::I32(vec![i32::MIN, -1, 0, i32::MAX]),
            Shape::new([4]),
        ),
        (TensorData::Bool(vec![]), Shape::new([0, 5])),
    ];
    for (data, shape) in constants {
        let name = format!("c_{}", data.element_type());
        let c = f.add_constant(data, shape).unwrap();
        f.set_name(c, name).unwrap();
    }

    // A two-output fused kernel over x: (exp(x), -x).
    let kb = FunctionBuilder::new("kernel_body");
    let p = kb.parameter("p", F32, [2, 3]);
    let e = p.exp().named("e").tagged("t1");
    let n = (-p).named("neg");
    let body = kb.finish(&[e, n]).unwrap();
    let x_id = f.parameters()[0];
    let k = f
        .add_node_at(
            Op::FusedKernel(Arc::new(FusedKernel { body })),
            &[Output::from(x_id)],
            CreationSite {
                file: "weird \"file\"\\path.rs".into(),
                line: 77,
                column: 3,
            },
        )
        .unwrap();
    f.set_name(k, "fk").unwrap();
    let t = f
        .add_node(Op::Unary(UnaryOp::Tanh), &[Output::new(k, 1)])
        .unwrap();
    f.add_result(Output::new(k, 0), Some("out_exp".into()))
        .unwrap();
    f.add_result(Output::from(t), None).unwrap();
    f.add_control_dependency(t, x_id).unwrap();
    let scaled = f.node_by_name("scaled").unwrap().id();
    f.add_control_dependency(k, scaled).unwrap();
    f.set_metadata(k, "kernel.key", "a=\"b\"\n").unwrap();
    f.set_metadata(k, "another", "").unwrap();
    f.add_tag(k, "zeta").unwrap();
    f.add_tag(k, "alpha").unwrap();
    f.record_pass(k, "subgraph_extraction").unwrap();
    f.record_pass(k, "cse").unwrap();
    f.validate().unwrap();
    f
}

fn serialization(err: IrError) -> SerializationError {
    match err {
        IrError::Serialization(e) => *e,
        other => panic!("expected a serialization error, got {other:?}"),
    }
}

fn load_err(doc: &Value) -> SerializationError {
    serialization(Function::from_json(&doc.to_string()).unwrap_err())
}

fn doc_of(f: &Function) -> Value {
    serde_json::from_str(&f.to_json()).unwrap()
}

/// The node object named `name` in the top-level function of `doc`.
fn node_mut<'a>(doc: &'a mut Value, name: &str) -> &'a mut Value {
    doc["function"]["nodes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|n| n["name"] == name)
        .unwrap()
}

/// `Pad`'s three attribute lists survive a round trip, and a Pad without them is refused.
#[test]
fn pad_round_trips() {
    let b = FunctionBuilder::new("pad");
    let x = b.parameter("x", F32, [2, 3]);
    let p = graphlift_ir::Pad {
        low: vec![1, 0],
        high: vec![0, 2],
        interior: vec![1, 0],
        mode: graphlift_ir::PadMode::Constant,
    };
    let y = b.op(Op::Pad(p), &[x, x.scalar_like(0.5)]).named("padded");
    let f = b.finish(&[y]).unwrap();
    let g = Function::from_json(&f.to_json()).unwrap();
    assert_eq!(f, g);
    let mut doc = doc_of(&f);
    node_mut(&mut doc, "padded")["op"]
        .as_object_mut()
        .unwrap()
        .remove("interior");
    let e = load_err(&doc);
    assert!(e.to_string().contains("interior"), "{e}");
}

/// The attributes of a reflecting `Pad`, `ArgMax` and `Resize` survive a round trip; an
/// `ArgMin` without its tie rule is refused.
#[test]
fn pad_mode_arg_reduce_and_resize_round_trip() {
    use graphlift_ir::{ArgOp, ArgReduction, CoordinateTransform, PadMode, Resize, ResizeMode};
    let b = FunctionBuilder::new("sampling");
    let x = b.parameter("x", F32, [1, 2, 3]);
    let p = graphlift_ir::Pad {
        low: vec![0, 1, 2],
        high: vec![0, 1, 0],
        interior: vec![0; 3],
        mode: PadMode::Reflect,
    };
    let padded = b.op(Op::Pad(p), &[x]);
    let r = Resize {
        mode: ResizeMode::Cubic(-0.5),
        coordinate_transform: CoordinateTransform::TfCropAndResize,
        scales: vec![1.0, 1.5, 0.8],
        shape: vec![1, 6, 4],
        roi: vec![[0.0, 1.0], [0.25, 0.75], [0.0, 1.0]],
        exclude_outside: true,
        extrapolation_value: 10.0,
        antialias: false,
    };
    let resized = b.op(Op::Resize(r), &[padded]);
    let arg = ArgReduction {
        op: ArgOp::Min,
        axis: 2,
        keep_dims: false,
        select_last_index: true,
    };
    let y = b.op(Op::ArgReduce(arg), &[resized]).named("arg");
    let f = b.finish(&[y]).unwrap();
    let g = Function::from_json(&f.to_json()).unwrap();
    assert_eq!(f, g);
    let mut doc = doc_of(&f);
    node_mut(&mut doc, "arg")["op"]
        .as_object_mut()
        .unwrap()
        .remove("select_last_index");
    let e = load_err(&doc);
    assert!(e.to_string().contains("select_last_index"), "{e}");
}

/// `TopK` and `ScatterNd` keep their attributes through a round trip; a `ScatterNd`
/// without its reduction is refused.
#[test]
fn top_k_and_scatter_nd_round_trip() {
    use graphlift_ir::{ScatterReduction, TopK};
    let b = FunctionBuilder::new("indexing");
    let x = b.parameter("x", F32, [2, 5]);
    let t = TopK {
        axis: 1,
        k: 3,
        largest: false,
    };
    let idx = b.op(Op::TopK(t), &[x]);
    let idx = b.op(Op::Reshape(graphlift_ir::Shape::new([6, 1])), &[idx]);
    let upd = b.parameter("u", F32, [6, 5]);
    let data = b.parameter("d", F32, [3, 5]);
    let y = b
        .op(Op::ScatterNd(ScatterReduction::Max), &[data, idx, upd])
        .named("scatter");
    let f = b.finish(&[y]).unwrap();
    let g = Function::from_json(&f.to_json()).unwrap();
    assert_eq!(f, g);
    let mut doc = doc_of(&f);
    node_mut(&mut doc, "scatter")["op"]
        .as_object_mut()
        .unwrap()
        .remove("reduction");
    let e = load_err(&doc);
    assert!(e.to_string().contains("reduction"), "{e}");
}

/// `CumSum` keeps its attributes through a round trip; a document without them, with an
/// unknown one, or with an axis out of range is refused, as is such a node when built.
#[test]
fn cum_sum_round_trip_and_bad_axes() {
    use graphlift_ir::CumSum;
    let c = CumSum {
        axis: 1,
        exclusive: true,
        reverse: true,
    };
    assert_eq!(
        Op::CumSum(c).to_string(),
        "CumSum<axis=1, exclusive, reverse>"
    );
    let b = FunctionBuilder::new("scan");
    let x = b.parameter("x", I16, [2, 3, 4]);
    let y = b.op(Op::CumSum(c), &[x]).named("scan");
    let f = b.finish(&[y]).unwrap();
    let g = Function::from_json(&f.to_json()).unwrap();
    assert_eq!(f, g);
    let edits: [(&str, Value); 3] = [
        ("cum_sum", Value::Null),
        (
            "unknown field `sum`",
            json!({"axis": 1, "exclusive": false, "reverse": false, "sum": 1}),
        ),
        (
            "axis 3 is out of range for rank 3",
            json!({"axis": 3, "exclusive": false, "reverse": false}),
        ),
    ];
    for (message, value) in edits {
        let mut doc = doc_of(&f);
        let op = node_mut(&mut doc, "scan")["op"].as_object_mut().unwrap();
        if value.is_null() {
            op.remove("cum_sum");
        } else {
            op.insert("cum_sum".into(), value);
        }
        let e = Function::from_json(&doc.to_string()).unwrap_err();
        assert!(e.to_string().contains(message), "{e}");
    }
    let built = |t, c| {
        let b = FunctionBuilder::new("bad");
        let x = b.parameter("x", t, [2, 3]);
        b.finish(&[b.op(Op::CumSum(c), &[x])]).unwrap_err()
    };
    let e = built(F32, CumSum { axis: 2, ..c });
    assert!(
        e.to_string().contains("axis 2 is out of range for rank 2"),
        "{e}"
    );
    let e = built(Bool, CumSum { axis: 0, ..c });
    assert!(e.to_string().contains("numeric"), "{e}");
}

/// `GridSample` keeps its attribute through a round trip; a document without it or with an
/// unknown mode is refused, as is a node whose grid does not fit.
#[test]
fn grid_sample_round_trip_and_bad_grids() {
    use graphlift_ir::{GridMode, GridPadding, GridSample};
    let g = GridSample {
        mode: GridMode::Cubic,
        padding: GridPadding::Reflection,
        align_corners: true,
    };
    assert_eq!(
        Op::GridSample(g).to_string(),
        "GridSample<Cubic, Reflection, align_corners>"
    );
    let b = FunctionBuilder::new("transformer");
    let x = b.parameter("x", F32, [2, 3, 4, 5]);
    let grid = b.parameter("grid", F32, [2, 6, 7, 2]);
    let y = b.op(Op::GridSample(g), &[x, grid]).named("sample");
    let f = b.finish(&[y]).unwrap();
    let h = Function::from_json(&f.to_json()).unwrap();
    assert_eq!(f, h);
    let edits: [(&str, Value); 2] = [
        ("grid_sample", Value::Null),
        (
            "unknown variant `bilinear`",
            json!({"mode": "bilinear", "padding": "zeros", "align_corners": false}),
        ),
    ];
    for (message, value) in edits {
        let mut doc = doc_of(&f);
        let op = node_mut(&mut doc, "sample")["op"].as_object_mut().unwrap();
        if value.is_null() {
            op.remove("grid_sample");
        } else {
            op.insert("grid_sample".into(), value);
        }
        let e = Function::from_json(&doc.to_string()).unwrap_err();
        assert!(e.to_string().contains(message), "{e}");
    }
    let b = FunctionBuilder::new("bad");
    let x = b.parameter("x", F32, [2, 3, 4, 5]);
    let grid = b.parameter("grid", F32, [2, 6, 7, 3]);
    let e = b
        .finish(&[b.op(Op::GridSample(g), &[x, grid])])
        .unwrap_err();
    assert!(e.to_string().contains("[N, O1..Or, r]"), "{e}");
}

/// `MaxPoolIndices` keeps its window through a round trip and gives `i64` of the pooled
/// shape.
#[test]
fn max_pool_indices_round_trip() {
    let w = graphlift_ir::Window {
        shape: vec![2, 2],
        strides: vec![2, 2],
        dilations: vec![1, 1],
        pads_begin: vec![0, 1],
        pads_end: vec![0, 1],
    };
    let b = FunctionBuilder::new("argmax");
    let x = b.parameter("x", F32, [1, 3, 4, 6]);
    let i = b.op(Op::MaxPoolIndices(w), &[x]).named("where");
    let f = b.finish(&[i]).unwrap();
    assert_eq!(Function::from_json(&f.to_json()).unwrap(), f);
    let t = f
        .output_type(graphlift_ir::Output::new(f.results()[0], 0))
        .unwrap();
    assert_eq!(t.element_type, graphlift_ir::ElementType::I64);
    assert_eq!(t.shape.dims(), [1, 3, 2, 4]);
}

#[test]
fn round_trip_is_exact_and_keeps_ids() {
    let f = sample();
    let text = f.to_json();
    let g = Function::from_json(&text).unwrap();
    same_structure(&f, &g).unwrap();
    // No arena holes: ids are kept, so ids and users are the same too.
    for n in f.nodes() {
        let m = g.node(n.id()).unwrap();
        assert_eq!(m.name(), n.name());
        assert_eq!(m.inputs(), n.inputs());
        assert_eq!(m.other_deps(), n.other_deps());
    }
    assert_eq!(g.to_json(), text);
}

#[test]
fn format_header_and_constant_encoding() {
    let doc = doc_of(&sample());
    assert_eq!(doc["format"], "graphlift-function");
    assert_eq!(doc["version"], 2);
    let nodes = doc["function"]["nodes"].as_array().unwrap();
    let values = |ty: &str| {
        nodes
            .iter()
            .find(|n| n["name"] == format!("c_{ty}"))
            .map(|n| n["op"]["values"].clone())
            .unwrap()
    };
    assert_eq!(values("f32")[0], "0x7fc00000");
    assert_eq!(values("f32")[3], "0x80000000");
    assert_eq!(values("f64")[0], "0x7ff8deadbeef0001");
    assert_eq!(values("i64")[2], "9007199254740993");
    assert_eq!(values("i32"), json!([i32::MIN, -1, 0, i32::MAX]));
    assert_eq!(values("bool"), json!([]));
}

#[test]
fn arena_holes_are_compacted() {
    let b = FunctionBuilder::new("holes");
    let x = b.parameter("x", F32, [4]);
    let y = x.exp().named("old");
    let mut f = b.finish(&[y]).unwrap();
    let x_id = f.parameters()[0];
    let new = f
        .add_node(Op::Unary(UnaryOp::Tanh), &[x_id.into()])
        .unwrap();
    let old = f.node_by_name("old").unwrap().id();
    f.replace_node(old, new).unwrap();
    assert!(f.get(old).is_none(), "replace_node left a hole");
    let g = Function::from_json(&f.to_json()).unwrap();
    same_structure(&f, &g).unwrap();
    assert_eq!(g.node_count(), f.node_count());
    g.validate().unwrap();
}

#[test]
fn unknown_version_is_rejected() {
    let mut doc = doc_of(&sample());
    doc["version"] = json!(3);
    let e = load_err(&doc);
    assert_eq!(e.kind, SerializationErrorKind::UnsupportedFormat);
    assert!(e.to_string().contains("version 3"), "{e}");
    assert!(e.to_string().contains("reads versions 1 to 2"), "{e}");
    // Version 1 (no sinks, no state) still loads.
    doc["version"] = json!(1);
    Function::from_json(&doc.to_string()).unwrap();

    doc["version"] = json!("1");
    assert_eq!(
        load_err(&doc).kind,
        SerializationErrorKind::UnsupportedFormat
    );
    doc["version"] = json!(1);
    doc["format"] = json!("onnx");
    let e = load_err(&doc);
    assert_eq!(e.kind, SerializationErrorKind::UnsupportedFormat);
    assert!(e.to_string().contains("\"onnx\""), "{e}");
    let e = serialization(Function::from_json("[1, 2]").unwrap_err());
    assert_eq!(e.kind, SerializationErrorKind::UnsupportedFormat);
}

/// A version-1 document (written before state: no `sinks`, no variables) loads, and is
/// saved again as version 2 with the same meaning.
#[test]
fn a_version_1_document_still_loads() {
    let text = r#"{
      "format": "graphlift-function",
      "version": 1,
      "function": {
        "name": "v1",
        "parameters": ["x"],
        "results": ["y"],
        "nodes": [
          { "name": "x", "op": { "type": "Parameter" }, "inputs": [],
            "outputs": [{ "element_type": "f32", "shape": [3] }],
            "site": { "file": "old.rs", "line": 1, "column": 1 } },
          { "name": "act", "op": { "type": "Relu" },
            "inputs": [{ "node": "x", "output": 0 }],
            "outputs": [{ "element_type": "f32", "shape": [3] }],
            "site": { "file": "old.rs", "line": 2, "column": 1 } },
          { "name": "y", "op": { "type": "Result" },
            "inputs": [{ "node": "act", "output": 0 }],
            "outputs": [{ "element_type": "f32", "shape": [3] }],
            "site": { "file": "old.rs", "line": 3, "column": 1 },
            "other_deps": ["x"] }
        ]
      }
    }"#;
    let f = Function::from_json(text).unwrap();
    assert_eq!(f.node_count(), 3);
    assert_eq!(
        f.node_by_name("act").unwrap().op(),
        &Op::Unary(UnaryOp::Relu)
    );
    assert!(f.sinks().is_empty());
    assert_eq!(f.variables().count(), 0);
    let doc = doc_of(&f);
    assert_eq!(doc["version"], 2);
    let g = Function::from_json(&f.to_json()).unwrap();
    same_structure(&f, &g).unwrap();
    assert_eq!(g, f);
}

#[test]
fn truncated_json_is_a_syntax_error_never_a_panic() {
    let text = sample().to_json();
    let e = serialization(Function::from_json(&text[..text.len() / 2]).unwrap_err());
    assert_eq!(e.kind, SerializationErrorKind::Syntax);
    assert!(e.to_string().contains("line"), "{e}");
    // Every prefix fails cleanly.
    let mut cut = 0;
    while cut < text.len() {
        if text.is_char_boundary(cut) {
            assert!(Function::from_json(&text[..cut]).is_err(), "prefix {cut}");
        }
        cut += 13;
    }
}

#[test]
fn hand_edited_wrong_shape_names_the_node() {
    let b = FunctionBuilder::new("edited");
    let x = b.parameter("x", F32, [2, 3]);
    let w = b.parameter("w", F32, [2, 3]);
    let y = (x * w).named("product");
    let f = b.finish(&[y]).unwrap();
    let mut doc = doc_of(&f);
    node_mut(&mut doc, "w")["outputs"][0]["shape"] = json!([3]);
    let e = load_err(&doc);
    assert_eq!(e.kind, SerializationErrorKind::Invalid);
    let msg = e.to_string();
    assert!(msg.contains("`product`"), "{msg}");
    assert!(msg.contains("f32[2, 3], f32[3]"), "{msg}");

    // A recorded output type that inference does not give.
    let mut doc = doc_of(&f);
    node_mut(&mut doc, "product")["outputs"][0]["element_type"] = json!("f64");
    let msg = load_err(&doc).to_string();
    assert!(msg.contains("`product`"), "{msg}");
    assert!(msg.contains("records output type(s) f64[2, 3]"), "{msg}");
    assert!(msg.contains("inference gives f32[2, 3]"), "{msg}");
}

#[test]
fn dangling_input_reference_names_node_and_target() {
    let f = sample();
    let mut doc = doc_of(&f);
    node_mut(&mut doc, "scaled")["inputs"][0]["node"] = json!("nowhere");
    let e = load_err(&doc);
    assert_eq!(e.kind, SerializationErrorKind::Invalid);
    assert!(e.location.contains("`scaled`"), "{e}");
    assert!(e.message.contains("input 0 refers to `nowhere`"), "{e}");

    // An output index the producer does not have.
    let mut doc = doc_of(&f);
    node_mut(&mut doc, "scaled")["inputs"][0]["output"] = json!(3);
    let msg = load_err(&doc).to_string();
    assert!(
        msg.contains("`scaled`") && msg.contains("output 3"),
        "{msg}"
    );

    let mut doc = doc_of(&f);
    node_mut(&mut doc, "fk")["other_deps"][0] = json!("ghost");
    let msg = load_err(&doc).to_string();
    assert!(
        msg.contains("control dependency 0 refers to `ghost`"),
        "{msg}"
    );

    let mut doc = doc_of(&f);
    doc["function"]["results"][0] = json!("x");
    let msg = load_err(&doc).to_string();
    assert!(
        msg.contains("`results` entry 0 names `x`, which is a Parameter"),
        "{msg}"
    );
}

#[test]
fn schema_errors_name_the_node() {
    let mut doc = doc_of(&sample());
    node_mut(&mut doc, "scaled")
        .as_object_mut()
        .unwrap()
        .remove("site");
    let e = load_err(&doc);
    assert_eq!(e.kind, SerializationErrorKind::Schema);
    assert!(
        e.location.contains("node") && e.location.contains("`scaled`"),
        "{e}"
    );
    assert!(e.message.contains("site"), "{e}");

    let mut doc = doc_of(&sample());
    node_mut(&mut doc, "scaled")["tagz"] = json!(["x"]);
    let e = load_err(&doc);
    assert_eq!(e.kind, SerializationErrorKind::Schema);
    assert!(e.message.contains("tagz"), "{e}");

    let mut doc = doc_of(&sample());
    doc["function"]["extra"] = json!(1);
    assert_eq!(load_err(&doc).kind, SerializationErrorKind::Schema);
}

/// An edit of a document.
type Edit = Box<dyn Fn(&mut Value)>;

#[test]
fn bad_ops_and_constants_are_invalid() {
    let f = sample();
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "unknown op",
            Box::new(|d| node_mut(d, "scaled")["op"]["type"] = json!("Frobnicate")),
            "unknown op type `Frobnicate`",
        ),
        (
            "attribute on a plain op",
            Box::new(|d| node_mut(d, "scaled")["op"]["shape"] = json!([1])),
            "op `Multiply` takes no attribute `shape`",
        ),
        (
            "short f32 bit pattern",
            Box::new(|d| {
                node_mut(d, "c_f32")["op"]["values"][2] = json!("0x123");
            }),
            "constant element 2 is \"0x123\"",
        ),
        (
            "i64 as a number",
            Box::new(|d| {
                node_mut(d, "c_i64")["op"]["values"][0] = json!(5);
            }),
            "expected an i64 as a decimal string",
        ),
        (
            "constant too short for its shape",
            Box::new(|d| {
                node_mut(d, "c_i32")["op"]["values"]
                    .as_array_mut()
                    .unwrap()
                    .pop();
            }),
            "constant has 3 elements but its shape [4] holds 4",
        ),
        (
            "duplicate name",
            Box::new(|d| node_mut(d, "scaled")["name"] = json!("x")),
            "the name is already used by node 0",
        ),
        (
            "cycle through control dependencies",
            Box::new(|d| node_mut(d, "x")["other_deps"] = json!(["out_exp"])),
            "cycle",
        ),
        (
            "overflowing shape",
            Box::new(|d| {
                node_mut(d, "x")["outputs"][0]["shape"] = json!([u64::MAX, 2]);
            }),
            "overflows",
        ),
    ];
    for (what, edit, expected) in cases {
        let mut doc = doc_of(&f);
        edit(&mut doc);
        let e = load_err(&doc);
        assert_eq!(e.kind, SerializationErrorKind::Invalid, "{what}: {e}");
        assert!(e.to_string().contains(expected), "{what}: {e}");
    }
}

#[test]
fn errors_inside_a_kernel_body_give_the_path() {
    let mut doc = doc_of(&sample());
    let body = &mut node_mut(&mut doc, "fk")["op"]["body"];
    let neg = body["nodes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|n| n["name"] == "neg")
        .unwrap();
    neg["inputs"][0]["node"] = json!("x"); // `x` is an outer node, not a body node
    let e = load_err(&doc);
    assert!(
        e.location
            .contains("`fk` / body function `kernel_body` / node 2 `neg`"),
        "{e}"
    );
}

#[test]
fn save_and_load_files() {
    let dir = std::env::temp_dir().join(format!("graphlift-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("f.json");
    let f = sample();
    f.save_json(&path).unwrap();
    let g = Function::load_json(&path).unwrap();
    same_structure(&f, &g).unwrap();

    std::fs::write(
        &path,
        "{\"format\": \"graphlift-function\", \"version\": 9}",
    )
    .unwrap();
    let e = serialization(Function::load_json(&path).unwrap_err());
    assert_eq!(e.path.as_deref(), Some(path.as_path()));
    assert!(
        e.to_string().starts_with(&path.display().to_string()),
        "{e}"
    );

    let missing = dir.join("missing.json");
    let e = serialization(Function::load_json(&missing).unwrap_err());
    assert_eq!(e.kind, SerializationErrorKind::Io);
    assert!(e.to_string().contains("missing.json"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scalar_and_zero_size_shapes_round_trip() {
    let b = FunctionBuilder::new("shapes");
    let s = b.parameter("s", F64, Shape::scalar());
    let z = b.parameter("z", I32, [3, 0]);
    let f = b.finish(&[s.exp(), z.abs()]).unwrap();
    let g = Function::from_json(&f.to_json()).unwrap();
    same_structure(&f, &g).unwrap();
}

/// Every op that is not elementwise, with its attributes, round-trips exactly and reloads
/// with the same inferred types.
#[test]
fn tensor_ops_round_trip_with_their_attributes() {
    use graphlift_ir::{Convolution, LayerNorm, ReduceOp, Reduction, SliceAxis, Window};
    let mut f = Function::new("tensor ops");
    let x = f.add_parameter("x", F32, Shape::new([1, 4, 6, 6])).unwrap();
    let filt = f.add_parameter("w", F32, Shape::new([8, 2, 3, 3])).unwrap();
    let idx = f.add_parameter("idx", I64, Shape::new([2])).unwrap();
    let ch = f.add_parameter("c", F32, Shape::new([4])).unwrap();
    let out = |n| Output::new(n, 0);
    let window = Window {
        shape: vec![3, 3],
        strides: vec![2, 1],
        dilations: vec![1, 2],
        pads_begin: vec![1, 2],
        pads_end: vec![0, 2],
    };
    let conv = Convolution {
        window: window.clone(),
        groups: 2,
    };
    let mut add = |op: Op, ins: &[Output]| f.add_node(op, ins).unwrap();
    let c = add(Op::Convolution(conv), &[out(x), out(filt)]);
    let bn = add(
        Op::BatchNormInference(1e-5),
        &[out(x), out(ch), out(ch), out(ch), out(ch)],
    );
    let p = add(Op::MaxPool(window), &[out(bn)]);
    let r = add(Op::Reshape(Shape::new([4, 36])), &[out(x)]);
    let t = add(Op::Transpose(vec![1, 0]), &[out(r)]);
    let rows = SliceAxis {
        start: 35,
        step: -3,
        len: 4,
    };
    let s = add(Op::Slice(vec![rows, SliceAxis::full(4)]), &[out(t)]);
    let cat = add(Op::Concat(0), &[out(s), out(s)]);
    let g = add(Op::Gather(1), &[out(cat), out(idx)]);
    let m = add(Op::MatMul, &[out(cat), out(r)]);
    let red = Reduction {
        op: ReduceOp::Mean,
        axes: vec![0, 2],
        keep_dims: true,
    };
    let mean = add(Op::Reduce(red), &[out(x)]);
    let sm = add(Op::Softmax(1), &[out(m)]);
    let ln = LayerNorm {
        axis: 3,
        epsilon: 9.999_999_960_041_972e-13,
    };
    let scale = add(Op::Slice(vec![SliceAxis::full(4)]), &[out(ch)]);
    let norm_in = add(Op::Reshape(Shape::new([1, 6, 6, 4])), &[out(x)]);
    let lnorm = add(Op::LayerNorm(ln), &[out(norm_in), out(scale), out(scale)]);
    let heads = Attention {
        heads: 2,
        scale: 0.176_776_695_296_636_9,
    };
    let qkv = add(Op::Reshape(Shape::new([4, 6, 6])), &[out(x)]);
    let mask = add(Op::Slice(vec![SliceAxis::full(4)]), &[out(ch)]);
    let mask = add(Op::Reshape(Shape::new([4, 1, 1, 1])), &[out(mask)]);
    let att = add(
        Op::Attention(heads),
        &[out(qkv), out(qkv), out(qkv), out(mask)],
    );
    // A quantized product: x [4, 6, 6] by a [6, 5] weight packed as [ceil(6 / 4), 5, 4].
    let packed = f
        .add_constant(TensorData::I8(vec![-3; 40]), Shape::new([2, 5, 4]))
        .unwrap();
    let offset = f
        .add_constant(TensorData::I32(vec![7; 5]), Shape::new([5]))
        .unwrap();
    let qscale = f
        .add_constant(TensorData::F32(vec![0.25; 5]), Shape::new([5]))
        .unwrap();
    let q = graphlift_ir::QuantizedMatMul {
        x_scale: 0.023_529_412,
        x_zero_point: 131,
    };
    let qmm = f
        .add_node(
            Op::QuantizedMatMul(q),
            &[out(qkv), out(packed), out(offset), out(qscale)],
        )
        .unwrap();
    // An integer convolution: UINT8 data [1, 2, 5, 5] with a scalar zero point, an INT8
    // filter [3, 2, 3, 3] with one zero point per output channel.
    let qx = f
        .add_constant(TensorData::U8(vec![9; 50]), Shape::new([1, 2, 5, 5]))
        .unwrap();
    let qxz = f
        .add_constant(TensorData::U8(vec![3]), Shape::scalar())
        .unwrap();
    let qw = f
        .add_constant(TensorData::I8(vec![-2; 54]), Shape::new([3, 2, 3, 3]))
        .unwrap();
    let qwz = f
        .add_constant(TensorData::I8(vec![1, 0, -1]), Shape::new([3]))
        .unwrap();
    let qconv = graphlift_ir::Convolution {
        window: graphlift_ir::Window {
            shape: vec![3, 3],
            strides: vec![2, 1],
            dilations: vec![1, 1],
            pads_begin: vec![1, 0],
            pads_end: vec![1, 0],
        },
        groups: 1,
    };
    let ci = f
        .add_node(
            Op::ConvolutionInteger(qconv),
            &[out(qx), out(qxz), out(qw), out(qwz)],
        )
        .unwrap();
    assert_eq!(
        f.node(ci).unwrap().output_type().to_string(),
        "i32[1, 3, 3, 3]"
    );
    for n in [c, p, g, mean, sm, lnorm, att, qmm, ci] {
        f.add_result(out(n), None).unwrap();
    }
    let text = f.to_json();
    let loaded = Function::from_json(&text).unwrap();
    same_structure(&f, &loaded).unwrap();
    assert_eq!(loaded.to_json(), text);
    let types =
        |f: &Function| -> Vec<String> { f.nodes().map(|n| n.output_type().to_string()).collect() };
    assert_eq!(types(&f), types(&loaded));
    assert!(text.contains("\"pads_begin\""), "{text}");
    // An attribute an op does not take, and one it lacks, are errors naming the op.
    let extra = text.replacen(
        "\"type\": \"MatMul\"",
        "\"type\": \"MatMul\", \"axis\": 1",
        1,
    );
    let err = Function::from_json(&extra).unwrap_err().to_string();
    assert!(err.contains("takes no attribute `axis`"), "{err}");
    let missing = text.replacen("\"groups\": 2", "\"groups_\": 2", 1);
    assert!(Function::from_json(&missing).is_err());
}
