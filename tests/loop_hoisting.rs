//! Loop-invariant code motion at ONNX import: loop-carried values that the body passes
//! through value-preserving nodes (`Squeeze(Unsqueeze(f) + 0)`, as Paddle2ONNX writes every
//! carried value). A chain that only reshapes keeps the value: it is captured, not carried.
//! One that adds `+0` settles it after the first iteration (`−0` becomes `+0`): the nodes
//! that read it run twice before the loop and the body selects per iteration. Either way
//! each iteration must see what the loop computed, bit for bit: the tests read `1 / f` of a
//! `−0`, and a chain with a non-neutral constant must stay a carried value.

#[path = "support/loops.rs"]
mod loops;
#[path = "support/onnx_graph.rs"]
mod onnx_graph;

use graphlift::ir::control_flow::{Body, Loop};
use graphlift::onnx::import_model_bytes;
use graphlift::onnx::prost::Message;
use graphlift::onnx::proto::*;
use graphlift::{Backend, Function, Tensor};
use loops::only_loop;
use onnx_graph::{init, init_i64, int, vi, vi_of, Nodes};

const BACKENDS: [&str; 2] = ["INTERPRETER", "CPU-JIT"];

/// How the body computes the carried `f` of the next iteration from `f`.
#[derive(Clone, Copy)]
enum Chain {
    /// `Squeeze(Unsqueeze(f, 0), 0)`: the value itself.
    Reshapes,
    /// `Squeeze(Unsqueeze(f, 0) + [0.0], 0)`: `−0` becomes `+0`.
    AddsZero,
    /// `Squeeze(Unsqueeze(f, 0) + [1.0], 0)`: a new value every iteration.
    AddsOne,
}

/// `Loop(M = trips)` over carried `f` `f32[2]` (next value by `chain`) and `acc` (`acc +
/// f`), with the scan outputs `1 / f` and its least element (a scalar, whatever the
/// shape the iteration number is declared with: `[1]`, as some exporters write it; taken
/// in a nested `If`);
/// outputs `f_final`, `acc_final`, `ys`, `mins`.
fn model(trips: i64, chain: Chain) -> Vec<u8> {
    let mut body = Nodes::new("");
    let y = body.add("Div", "y", &["one", "f"], vec![]);
    // The least element through an `If` on the (always true) condition: its branches read
    // `y` from the body, so `y` stays defined there even when its node is hoisted.
    let branch = |name: &str, op: &str| {
        let mut b = Nodes::new("");
        let out = b.add(op, name, &["y"], vec![int("keepdims", 0)]);
        GraphProto {
            name: name.into(),
            node: b.nodes,
            output: vec![vi(&out, &[])],
            ..Default::default()
        }
    };
    let graph = |name: &str, g: GraphProto| AttributeProto {
        name: name.into(),
        r#type: attribute_type::GRAPH,
        g: Some(g),
        ..Default::default()
    };
    body.nodes.push(NodeProto {
        op_type: "If".into(),
        name: "min".into(),
        input: vec!["cond_in".into()],
        output: vec!["min".into()],
        attribute: vec![
            graph("then_branch", branch("least", "ReduceMin")),
            graph("else_branch", branch("most", "ReduceMax")),
        ],
        ..Default::default()
    });
    let min = "min".to_string();
    let acc_next = body.add("Add", "acc_next", &["acc", "f"], vec![]);
    let u = body.add("Unsqueeze", "u", &["f", "axes0"], vec![]);
    let next = match chain {
        Chain::Reshapes => u,
        Chain::AddsZero => body.add("Add", "z", &[&u, "zero"], vec![]),
        Chain::AddsOne => body.add("Add", "z", &[&u, "one1"], vec![]),
    };
    let f_next = body.add("Squeeze", "f_next", &[&next, "axes0"], vec![]);
    let cond = body.add("Identity", "cond_out", &["cond_in"], vec![]);
    let body = GraphProto {
        name: "body".into(),
        node: body.nodes,
        input: vec![
            vi_of("iter", data_type::INT64, &[1]),
            vi_of("cond_in", data_type::BOOL, &[]),
            vi("f", &[2]),
            vi("acc", &[2]),
        ],
        output: vec![
            vi_of(&cond, data_type::BOOL, &[]),
            vi(&f_next, &[2]),
            vi(&acc_next, &[2]),
            vi(&y, &[2]),
            vi(&min, &[]),
        ],
        ..Default::default()
    };
    let mut outer = Nodes::new("");
    outer.nodes.push(NodeProto {
        op_type: "Loop".into(),
        name: "the_loop".into(),
        input: ["M", "", "f0", "acc0"].map(String::from).to_vec(),
        output: ["f_final", "acc_final", "ys", "mins"]
            .map(String::from)
            .to_vec(),
        attribute: vec![AttributeProto {
            name: "body".into(),
            r#type: attribute_type::GRAPH,
            g: Some(body),
            ..Default::default()
        }],
        ..Default::default()
    });
    let mut m = init_i64("M", &[trips]);
    m.dims.clear();
    outer
        .model(
            vec![vi("f0", &[2]), vi("acc0", &[2])],
            vec![
                vi("f_final", &[2]),
                vi("acc_final", &[2]),
                vi("ys", &[trips, 2]),
                vi("mins", &[trips]),
            ],
            vec![
                m,
                init("one", &[], vec![1.0]),
                init("zero", &[1], vec![0.0]),
                init("one1", &[1], vec![1.0]),
                init_i64("axes0", &[0]),
            ],
        )
        .encode_to_vec()
}

/// The loop of `f` and its body (static here: no shape operand changes per iteration).
fn the_loop(f: &Function) -> (&Loop, &Function) {
    let l = only_loop(f);
    match &l.body {
        Body::Static(b) => (l, b),
        _ => panic!("not a static loop"),
    }
}

/// How many nodes of `f` are of `op`.
fn count(f: &Function, op: &str) -> usize {
    f.nodes().filter(|n| n.op().type_name() == op).count()
}

/// `f_final`, `acc_final`, `ys` and `mins` on each backend, as bits, for `f0 = [−0, 2]`,
/// `acc0 = [−0, 0]`.
fn run(bytes: &[u8]) -> Vec<[Vec<u32>; 4]> {
    let m = import_model_bytes(bytes).unwrap();
    let f0 = Tensor::from_vec(vec![-0.0f32, 2.0], [2]).unwrap();
    let acc0 = Tensor::from_vec(vec![-0.0f32, 0.0], [2]).unwrap();
    BACKENDS
        .iter()
        .map(|be| {
            let exe = Backend::create(be).unwrap().compile(&m.function).unwrap();
            let out = exe.run(&[f0.clone(), acc0.clone()]).unwrap();
            let of = |t: &Tensor| bits(t.read::<f32>().unwrap());
            assert_eq!(out[3].shape().dims(), [out[2].shape().dims()[0]], "{be}");
            [of(&out[0]), of(&out[1]), of(&out[2]), of(&out[3])]
        })
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn a_value_that_settles_after_one_iteration_is_read_twice_before_the_loop() {
    let m = import_model_bytes(&model(3, Chain::AddsZero)).unwrap();
    let (l, body) = the_loop(&m.function);
    // `f` stays carried (iteration 0 reads −0); `1 / f` runs before the loop, on f0 and on
    // f0 + 0, and the body selects.
    assert_eq!(l.carried, 2);
    assert_eq!(count(body, "Divide"), 0, "{body}");
    assert_eq!(count(body, "Select"), 2, "{body}");
    assert_eq!(count(&m.function, "Divide"), 2, "{}", m.function);
    let inf = f32::INFINITY;
    for got in run(&model(3, Chain::AddsZero)) {
        assert_eq!(got[0], bits(&[0.0, 2.0]));
        assert_eq!(got[1], bits(&[0.0, 6.0]));
        assert_eq!(got[2], bits(&[-inf, 0.5, inf, 0.5, inf, 0.5]));
        assert_eq!(got[3], bits(&[-inf, 0.5, 0.5]));
    }
    // No iteration: the initial value, its sign kept.
    for got in run(&model(0, Chain::AddsZero)) {
        assert_eq!(got[0], bits(&[-0.0, 2.0]));
        assert_eq!(got[1], bits(&[-0.0, 0.0]));
        assert!(got[2].is_empty());
    }
}

#[test]
fn a_value_the_body_only_reshapes_is_captured_not_carried() {
    let m = import_model_bytes(&model(3, Chain::Reshapes)).unwrap();
    let (l, body) = the_loop(&m.function);
    assert_eq!(l.carried, 1);
    assert_eq!(count(body, "Divide"), 0, "{body}");
    assert_eq!(count(body, "Select"), 0, "{body}");
    let inf = f32::INFINITY;
    for got in run(&model(3, Chain::Reshapes)) {
        assert_eq!(got[0], bits(&[-0.0, 2.0]));
        assert_eq!(got[1], bits(&[-0.0, 6.0]));
        assert_eq!(got[2], bits(&[-inf, 0.5, -inf, 0.5, -inf, 0.5]));
        assert_eq!(got[3], bits(&[-inf, -inf, -inf]));
    }
}

#[test]
fn a_chain_with_a_value_other_than_the_neutral_one_stays_carried() {
    let m = import_model_bytes(&model(3, Chain::AddsOne)).unwrap();
    let (l, body) = the_loop(&m.function);
    assert_eq!(l.carried, 2);
    assert_eq!(count(body, "Divide"), 1, "{body}");
    let inf = f32::INFINITY;
    for got in run(&model(3, Chain::AddsOne)) {
        assert_eq!(got[0], bits(&[3.0, 5.0]));
        assert_eq!(got[1], bits(&[3.0, 9.0]));
        assert_eq!(got[2], bits(&[-inf, 0.5, 1.0, 1.0 / 3.0, 0.5, 0.25]));
        assert_eq!(got[3], bits(&[-inf, 1.0 / 3.0, 0.25]));
    }
}
