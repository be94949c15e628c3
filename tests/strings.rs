//! ONNX STRING tensors on both backends: imported from inputs and initializers, moved by the
//! layout ops (`Transpose`, `Reshape`, `Concat`, `Gather`, `Slice`, `Expand`, `Where`),
//! compared by `Equal` (with broadcasting), converted by `Cast` both ways, and returned;
//! CPU-JIT keeps them off its fused kernels (their nodes run on the reference kernels).

#[path = "support/onnx_graph.rs"]
mod onnx_graph;

use graphlift::onnx::prost::Message;
use graphlift::onnx::proto::*;
use graphlift::onnx::{import_model_bytes, OnnxError};
use graphlift::{Backend, ElementType, Tensor, TensorData};
use onnx_graph::{init_i64, int, ints, vi_of, Nodes};

const BACKENDS: [&str; 2] = ["INTERPRETER", "CPU-JIT"];

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn string_tensor(v: &[&str], shape: &[usize]) -> Tensor {
    Tensor::from_data(TensorData::String(strings(v)), shape.to_vec()).unwrap()
}

/// The opset-19 model (`Equal` on strings) of `nodes`, whose outputs are the nodes named
/// `out_*`, in order.
fn model(nodes: Nodes, inputs: Vec<ValueInfoProto>, init: Vec<TensorProto>) -> Vec<u8> {
    let outputs = nodes
        .nodes
        .iter()
        .filter(|n| n.name.starts_with("out_"))
        .map(|n| ValueInfoProto {
            name: n.output[0].clone(),
            ..Default::default()
        })
        .collect();
    nodes.model_at(19, inputs, outputs, init).encode_to_vec()
}

/// `Cast` to ONNX data type `to`.
fn cast_to(to: i32) -> Vec<AttributeProto> {
    vec![int("to", to.into())]
}

#[test]
fn strings_move_compare_and_convert_on_every_backend() {
    let words = TensorProto {
        name: "words".into(),
        dims: vec![2],
        data_type: data_type::STRING,
        string_data: vec!["\u{fc}ber".as_bytes().to_vec(), Vec::new()],
        ..Default::default()
    };
    let mut g = Nodes::new("");
    g.add("Transpose", "t", &["x"], vec![ints("perm", &[1, 0])]);
    g.add("Reshape", "r", &["t", "flat"], vec![]);
    g.add("Concat", "out_c", &["r", "words"], vec![int("axis", 0)]);
    g.add("Gather", "g", &["out_c", "picks"], vec![int("axis", 0)]);
    g.add("Equal", "out_e", &["g", "y"], vec![]);
    g.add("Equal", "out_eb", &["x", "y"], vec![]);
    g.add("Where", "out_w", &["out_e", "g", "y"], vec![]);
    g.add("Slice", "out_s", &["x", "starts", "ends", "axes"], vec![]);
    g.add("Expand", "out_x", &["y", "two_rows"], vec![]);
    g.add("Cast", "out_f", &["n"], cast_to(data_type::FLOAT));
    g.add("Cast", "out_t", &["out_f"], cast_to(data_type::STRING));
    g.add("Cast", "out_i", &["n"], cast_to(data_type::INT64));
    let bytes = model(
        g,
        vec![
            vi_of("x", data_type::STRING, &[2, 3]),
            vi_of("y", data_type::STRING, &[3]),
            vi_of("n", data_type::STRING, &[4]),
        ],
        vec![
            words,
            init_i64("flat", &[6]),
            init_i64("picks", &[6, 0, -1]),
            init_i64("starts", &[1]),
            init_i64("ends", &[3]),
            init_i64("axes", &[1]),
            init_i64("two_rows", &[2, 3]),
        ],
    );
    let imported = import_model_bytes(&bytes).unwrap();
    let x = string_tensor(&["a", "b", "c", "d", "e", "f"], &[2, 3]);
    let y = string_tensor(&["\u{fc}ber", "b", ""], &[3]);
    let n = string_tensor(&["1.5", "-2", "1e3", "INF"], &[4]);
    for backend in BACKENDS {
        let exe = Backend::create(backend)
            .unwrap()
            .compile(&imported.function)
            .unwrap();
        let out = exe.run(&[x.clone(), y.clone(), n.clone()]).unwrap();
        let [c, e, eb, w, s, xp, f, t, i] = &out[..] else {
            panic!("{backend}: {} outputs", out.len());
        };
        let text = |t: &Tensor| t.data().as_strings().unwrap().to_vec();
        // Transposed [3, 2] -> a d b e c f, then the two words.
        assert_eq!(
            text(c),
            strings(&["a", "d", "b", "e", "c", "f", "\u{fc}ber", ""])
        );
        // Gathered: "\u{fc}ber", "a", "" against y.
        assert_eq!(e.read::<bool>().unwrap(), &[true, false, true], "{backend}");
        assert_eq!(eb.shape().dims(), &[2, 3]);
        assert_eq!(
            eb.read::<bool>().unwrap(),
            &[false, true, false, false, false, false],
            "{backend}"
        );
        assert_eq!(text(w), strings(&["\u{fc}ber", "b", ""]), "{backend}");
        assert_eq!(text(s), strings(&["b", "c", "e", "f"]), "{backend}");
        assert_eq!(
            text(xp),
            strings(&["\u{fc}ber", "b", "", "\u{fc}ber", "b", ""])
        );
        assert_eq!(
            f.read::<f32>().unwrap(),
            &[1.5, -2.0, 1000.0, f32::INFINITY]
        );
        assert_eq!(text(t), strings(&["1.5", "-2", "1000", "INF"]), "{backend}");
        // An integer target: "1.5" truncates, "INF" saturates (a float spelling).
        assert_eq!(
            i.read::<i64>().unwrap(),
            &[1, -2, 1000, i64::MAX],
            "{backend}"
        );
    }
}

#[test]
fn bad_strings_are_errors_that_name_the_node_and_element() {
    let mut g = Nodes::new("");
    g.add("Cast", "out_f", &["n"], cast_to(data_type::FLOAT));
    let bytes = model(g, vec![vi_of("n", data_type::STRING, &[2])], vec![]);
    let imported = import_model_bytes(&bytes).unwrap();
    for backend in BACKENDS {
        let exe = Backend::create(backend)
            .unwrap()
            .compile(&imported.function)
            .unwrap();
        let err = exe
            .run(&[string_tensor(&["2", "two"], &[2])])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"two\"") && err.contains("element 1"),
            "{backend}: {err}"
        );
    }
    // Strings have no order and no arithmetic.
    for op in ["Less", "Add"] {
        let mut g = Nodes::new("");
        g.add(op, "out_y", &["a", "a"], vec![]);
        let bytes = model(g, vec![vi_of("a", data_type::STRING, &[2])], vec![]);
        let err = import_model_bytes(&bytes).unwrap_err().to_string();
        assert!(err.contains(op) && err.contains("string"), "{err}");
    }
    // Initializer text that is not UTF-8, and STRING data in raw_data.
    for (raw, string_data, why) in [
        (
            Vec::new(),
            vec![vec![0xff, 0xfe]],
            "string_data element 0 is not UTF-8",
        ),
        (vec![b'a'], Vec::new(), "in string_data, not raw_data"),
    ] {
        let bad = TensorProto {
            name: "k".into(),
            dims: vec![1],
            data_type: data_type::STRING,
            raw_data: raw,
            string_data,
            ..Default::default()
        };
        let mut g = Nodes::new("");
        g.add("Identity", "out_k", &["k"], vec![]);
        let bytes = model(g, vec![], vec![bad]);
        let err = import_model_bytes(&bytes).unwrap_err();
        assert!(matches!(err, OnnxError::InvalidModel { .. }), "{err:?}");
        assert!(err.to_string().contains(why), "{err}");
    }
}

#[test]
fn string_tensors_round_trip_through_tensor_proto_files() {
    let t = string_tensor(&["", "a,b", "\u{65e5}\u{672c}\u{8a9e}", "\0"], &[2, 2]);
    let bytes = graphlift::onnx::encode_tensor_proto("s", t.data(), t.shape());
    let back = graphlift::onnx::read_tensor_proto(&bytes).unwrap();
    assert_eq!(back.data, *t.data());
    assert_eq!(back.shape, *t.shape());
    assert_eq!(back.data.element_type(), ElementType::String);
}
