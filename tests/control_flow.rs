//! Control flow (`If`, `Loop`, `Scan`) on both backends: hand-built Functions against known
//! values and against the INTERPRETER, ONNX models with a folded and a real `If` and a loop
//! whose body takes its iteration number as a shape operand (specialised per iteration, each
//! specialisation imported and compiled once, as many kept as the import option says), and
//! the errors: a branch disagreement named at import, `deriv` through a loop.

#[path = "support/loops.rs"]
mod loops;

use std::sync::Arc;

use graphlift::ir::control_flow::{Body, ControlFlow, If, Loop, Scan, Specialized};
use graphlift::ir::Output;
use graphlift::ir::{BinaryOp, ReduceOp, Reduction};
use graphlift::onnx::prost::Message;
use graphlift::onnx::proto::*;
use graphlift::onnx::{import_model_bytes, import_model_bytes_with, ImportOptions};
use graphlift::{
    Backend,
    ElementType::{Bool, F32, I64},
    Function, FunctionBuilder, Op, Shape, Tensor, TensorData,
};

use loops::only_loop;

const BACKENDS: [&str; 2] = ["INTERPRETER", "CPU-JIT"];

fn run(backend: &str, f: &Function, inputs: &[Tensor]) -> Vec<Tensor> {
    let be = Backend::create(backend).unwrap();
    be.compile(f).unwrap().run(inputs).unwrap()
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.read::<f32>().unwrap().to_vec()
}

/// `(i, cond, acc, x) -> (i < 3 or cond, acc + x * i, acc + x * i)`: a running sum with one
/// carried value, one captured value and one scan output.
fn running_sum_body(n: usize) -> Function {
    let mut f = Function::new("running_sum");
    let i = f.add_parameter("i", I64, Shape::scalar()).unwrap();
    let c = f.add_parameter("cond", Bool, Shape::scalar()).unwrap();
    let acc = f.add_parameter("acc", F32, [n]).unwrap();
    let x = f.add_parameter("x", F32, [n]).unwrap();
    let fi = f.add_node(Op::Convert(F32), &[i.into()]).unwrap();
    let fib = f
        .add_node(Op::Broadcast(Shape::new([n])), &[fi.into()])
        .unwrap();
    let xi = f
        .add_node(Op::Binary(BinaryOp::Multiply), &[x.into(), fib.into()])
        .unwrap();
    let s = f
        .add_node(Op::Binary(BinaryOp::Add), &[acc.into(), xi.into()])
        .unwrap();
    f.add_result(c.into(), None).unwrap();
    f.add_result(s.into(), None).unwrap();
    f.add_result(s.into(), None).unwrap();
    f
}

fn running_sum_loop(trips: i64) -> Function {
    let mut g = Function::new("g");
    let m = g
        .add_constant(TensorData::I64(vec![trips]), Shape::scalar())
        .unwrap();
    let c = g
        .add_constant(TensorData::Bool(vec![true]), Shape::scalar())
        .unwrap();
    let a = g.add_parameter("a", F32, [2]).unwrap();
    let x = g.add_parameter("x", F32, [2]).unwrap();
    let op = Op::ControlFlow(Arc::new(ControlFlow::Loop(Loop {
        body: Body::Static(running_sum_body(2)),
        carried: 1,
        scan_outputs: 1,
        scan_length: Some(usize::try_from(trips).unwrap()),
    })));
    let l = g
        .add_node(op, &[m.into(), c.into(), a.into(), x.into()])
        .unwrap();
    g.add_result(Output::new(l, 0), None).unwrap();
    g.add_result(Output::new(l, 1), None).unwrap();
    g
}

#[test]
fn loop_running_sum_with_scan_outputs_on_both_backends() {
    let g = running_sum_loop(4);
    let a = Tensor::from_vec(vec![1.0f32, 2.0], [2]).unwrap();
    let x = Tensor::from_vec(vec![10.0f32, 100.0], [2]).unwrap();
    for be in BACKENDS {
        let out = run(be, &g, &[a.clone(), x.clone()]);
        // acc after i = 0, 1, 2, 3: +0, +x, +2x, +3x.
        assert_eq!(f32s(&out[0]), [61.0, 602.0], "{be}");
        assert_eq!(out[1].shape().dims(), [4, 2], "{be}");
        assert_eq!(
            f32s(&out[1]),
            [1.0, 2.0, 11.0, 102.0, 31.0, 302.0, 61.0, 602.0],
            "{be}"
        );
    }
    // No iterations: the initial value and empty scan outputs.
    let g = running_sum_loop(0);
    for be in BACKENDS {
        let out = run(be, &g, &[a.clone(), x.clone()]);
        assert_eq!(f32s(&out[0]), [1.0, 2.0], "{be}");
        assert_eq!(out[1].shape().dims(), [0, 2], "{be}");
    }
}

#[test]
fn jit_explains_the_loop_as_a_control_flow_step_with_its_body_compiled_once() {
    let g = running_sum_loop(3);
    let exe = Backend::create("CPU-JIT").unwrap().compile(&g).unwrap();
    let step = exe
        .steps()
        .into_iter()
        .find(|s| s.op == "Loop")
        .expect("a Loop step");
    let how = step.control_flow.unwrap_or_default();
    assert!(how.starts_with("control-flow step `Loop<"), "{how}");
    assert!(how.contains("body `running_sum` compiled once"), "{how}");
    assert!(how.contains("fused kernel"), "{how}");
}

fn if_function() -> Function {
    let branch = |name: &str, op: BinaryOp| {
        let mut f = Function::new(name);
        let x = f.add_parameter("x", F32, [3]).unwrap();
        let y = f.add_parameter("y", F32, [3]).unwrap();
        let r = f.add_node(Op::Binary(op), &[x.into(), y.into()]).unwrap();
        f.add_result(r.into(), None).unwrap();
        f
    };
    let mut g = Function::new("g");
    let c = g.add_parameter("c", Bool, Shape::scalar()).unwrap();
    let x = g.add_parameter("x", F32, [3]).unwrap();
    let y = g.add_parameter("y", F32, [3]).unwrap();
    let op = Op::ControlFlow(Arc::new(ControlFlow::If(If {
        then_branch: branch("add", BinaryOp::Add),
        else_branch: branch("sub", BinaryOp::Subtract),
    })));
    let n = g.add_node(op, &[c.into(), x.into(), y.into()]).unwrap();
    g.add_result(n.into(), None).unwrap();
    g
}

#[test]
fn if_runs_the_taken_branch_on_both_backends() {
    let g = if_function();
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3]).unwrap();
    let y = Tensor::from_vec(vec![0.5f32, 0.25, 0.125], [3]).unwrap();
    for be in BACKENDS {
        for (c, want) in [(true, [1.5f32, 2.25, 3.125]), (false, [0.5, 1.75, 2.875])] {
            let cond = Tensor::from_vec(vec![c], Shape::scalar()).unwrap();
            let out = run(be, &g, &[cond, x.clone(), y.clone()]);
            assert_eq!(f32s(&out[0]), want, "{be} cond {c}");
        }
    }
}

#[test]
fn scan_with_reversed_input_and_output_matches_the_interpreter() {
    let mut body = Function::new("scan_body");
    let s = body.add_parameter("s", F32, [2]).unwrap();
    let x = body.add_parameter("x", F32, [2]).unwrap();
    let k = body.add_parameter("k", F32, [2]).unwrap();
    let sx = body
        .add_node(Op::Binary(BinaryOp::Add), &[s.into(), x.into()])
        .unwrap();
    let y = body
        .add_node(Op::Binary(BinaryOp::Multiply), &[sx.into(), k.into()])
        .unwrap();
    body.add_result(sx.into(), None).unwrap();
    body.add_result(y.into(), None).unwrap();
    let mut g = Function::new("g");
    let s0 = g.add_parameter("s0", F32, [2]).unwrap();
    let xs = g.add_parameter("xs", F32, [2, 3]).unwrap();
    let k = g.add_parameter("k", F32, [2]).unwrap();
    let op = Op::ControlFlow(Arc::new(ControlFlow::Scan(Scan {
        body,
        state: 1,
        scan_inputs: 1,
        input_axes: vec![1],
        input_reverse: vec![true],
        output_axes: vec![1],
        output_reverse: vec![false],
    })));
    let n = g.add_node(op, &[s0.into(), xs.into(), k.into()]).unwrap();
    g.add_result(Output::new(n, 0), None).unwrap();
    g.add_result(Output::new(n, 1), None).unwrap();
    let s0 = Tensor::from_vec(vec![0.0f32, 1.0], [2]).unwrap();
    // Columns (read last first): [3, 6], [2, 5], [1, 4].
    let xs = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3]).unwrap();
    let k = Tensor::from_vec(vec![2.0f32, 10.0], [2]).unwrap();
    let want = run("INTERPRETER", &g, &[s0.clone(), xs.clone(), k.clone()]);
    assert_eq!(f32s(&want[0]), [6.0, 16.0]);
    // Sums [3, 7], [5, 12], [6, 16], times k, stacked along axis 1.
    assert_eq!(f32s(&want[1]), [6.0, 10.0, 12.0, 70.0, 120.0, 160.0]);
    let got = run("CPU-JIT", &g, &[s0, xs, k]);
    assert_eq!(got, want);
}

#[test]
fn deriv_through_a_loop_is_a_named_error() {
    let b = FunctionBuilder::new("grad");
    let m = b.constant(TensorData::I64(vec![2]), Shape::scalar());
    let c = b.constant(TensorData::Bool(vec![true]), Shape::scalar());
    let a = b.parameter("a", F32, [2]);
    let x = b.parameter("x", F32, [2]);
    let op = Op::ControlFlow(Arc::new(ControlFlow::Loop(Loop {
        body: Body::Static(running_sum_body(2)),
        carried: 1,
        scan_outputs: 1,
        scan_length: Some(2),
    })));
    let l = b.op(op, &[m, c, a, x]);
    let total = b.op(
        Op::Reduce(Reduction {
            op: ReduceOp::Sum,
            axes: vec![0],
            keep_dims: false,
        }),
        &[l],
    );
    b.deriv(total, x);
    let e = b.finish(&[]).unwrap_err().to_string();
    assert!(e.contains("no adjoint for Loop"), "{e}");
}

// ----- ONNX -----

fn vi(name: &str, elem_type: i32, dims: &[i64]) -> ValueInfoProto {
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

fn node(
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

fn graph_attr(name: &str, g: GraphProto) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::GRAPH,
        g: Some(g),
        ..Default::default()
    }
}

fn constant(name: &str, data: &TensorData, shape: &[usize]) -> NodeProto {
    let t = graphlift::onnx::tensor_to_proto(name, data, &Shape::new(shape));
    node(
        "Constant",
        name,
        &[],
        &[name],
        vec![AttributeProto {
            name: "value".into(),
            r#type: attribute_type::TENSOR,
            t: Some(t),
            ..Default::default()
        }],
    )
}

fn model(
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
) -> Vec<u8> {
    ModelProto {
        ir_version: 8,
        producer_name: "graphlift-tests".into(),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
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
    .encode_to_vec()
}

/// `If(cond) then x + y else x - y`; both branches read the outer `x` and `y`.
fn if_model(cond: Option<bool>, else_shape: &[i64]) -> Vec<u8> {
    let branch = |name: &str, op: &str, out: &str, shape: &[i64]| GraphProto {
        name: name.into(),
        node: vec![node(op, &format!("{name}_op"), &["x", "y"], &[out], vec![])],
        output: vec![vi(out, data_type::FLOAT, shape)],
        ..Default::default()
    };
    let then_g = branch("then_g", "Add", "t", &[3]);
    let else_g = if else_shape == [3] {
        branch("else_g", "Sub", "e", &[3])
    } else {
        GraphProto {
            name: "else_g".into(),
            node: vec![constant("e", &TensorData::F32(vec![0.0; 2]), &[2])],
            output: vec![vi("e", data_type::FLOAT, else_shape)],
            ..Default::default()
        }
    };
    let mut nodes = Vec::new();
    let mut inputs = vec![
        vi("x", data_type::FLOAT, &[3]),
        vi("y", data_type::FLOAT, &[3]),
    ];
    match cond {
        Some(c) => nodes.push(constant("cond", &TensorData::Bool(vec![c]), &[])),
        None => inputs.insert(0, vi("cond", data_type::BOOL, &[])),
    }
    nodes.push(node(
        "If",
        "the_if",
        &["cond"],
        &["z"],
        vec![
            graph_attr("then_branch", then_g),
            graph_attr("else_branch", else_g),
        ],
    ));
    model(nodes, inputs, vec![vi("z", data_type::FLOAT, &[3])])
}

#[test]
fn onnx_if_with_a_constant_condition_imports_the_taken_branch_inline() {
    let m = import_model_bytes(&if_model(Some(false), &[3])).unwrap();
    assert!(
        !m.function
            .nodes()
            .any(|n| matches!(n.op(), Op::ControlFlow(_))),
        "{}",
        m.function
    );
    assert!(m.function.nodes().any(|n| n.op().type_name() == "Subtract"));
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3]).unwrap();
    let y = Tensor::from_vec(vec![1.0f32, 1.0, 1.0], [3]).unwrap();
    for be in BACKENDS {
        assert_eq!(
            f32s(&run(be, &m.function, &[x.clone(), y.clone()])[0]),
            [0.0, 1.0, 2.0]
        );
    }
}

#[test]
fn onnx_if_with_a_run_time_condition_is_a_real_if() {
    let m = import_model_bytes(&if_model(None, &[3])).unwrap();
    let text = m.function.to_text();
    assert!(text.contains("If<then=`then_g`, else=`else_g`>"), "{text}");
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3]).unwrap();
    let y = Tensor::from_vec(vec![1.0f32, 1.0, 1.0], [3]).unwrap();
    for be in BACKENDS {
        let t = Tensor::from_vec(vec![true], Shape::scalar()).unwrap();
        let f = Tensor::from_vec(vec![false], Shape::scalar()).unwrap();
        assert_eq!(
            f32s(&run(be, &m.function, &[t, x.clone(), y.clone()])[0]),
            [2.0, 3.0, 4.0]
        );
        assert_eq!(
            f32s(&run(be, &m.function, &[f, x.clone(), y.clone()])[0]),
            [0.0, 1.0, 2.0]
        );
    }
}

#[test]
fn onnx_if_branches_that_disagree_are_an_error_naming_the_node() {
    let e = import_model_bytes(&if_model(None, &[2]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("the_if"), "{e}");
    assert!(
        e.contains("the branches disagree on output 0: then gives f32[3], else f32[2]"),
        "{e}"
    );
}

/// A decoder-style loop: `buf` `f32[1, 5, 2]` is carried, and iteration `i` writes row `i`
/// of it from `Slice(x, starts = i, ends = Min(5, i + 1))` plus the carried `h`; the body
/// uses the carried counter `t` as a `Slice` start and `Range` bound, shape operands that
/// change every iteration. The trip count is 10, the condition `t + 1 < 5` stops it after 5.
fn decoder_model() -> Vec<u8> {
    let i64s = |v: &[i64]| TensorData::I64(v.to_vec());
    let body = GraphProto {
        name: "decoder_body".into(),
        input: vec![
            vi("iter", data_type::INT64, &[1]),
            vi("cond_in", data_type::BOOL, &[1]),
            vi("t", data_type::INT64, &[1]),
            vi("h", data_type::FLOAT, &[1, 2]),
            vi("w", data_type::FLOAT, &[2, 2]),
        ],
        node: vec![
            constant("one", &i64s(&[1]), &[1]),
            constant("axis1", &i64s(&[1]), &[1]),
            constant("five", &i64s(&[5]), &[1]),
            node("Add", "t_next", &["t", "one"], &["t1"], vec![]),
            node("Min", "end", &["five", "t1"], &["end"], vec![]),
            // xs[:, t:end, :] is [1, 1, 2].
            node(
                "Slice",
                "row",
                &["xs", "t", "end", "axis1"],
                &["row"],
                vec![],
            ),
            node("Squeeze", "row2", &["row", "axis1"], &["row2"], vec![]),
            // Transpose(Transpose(w)) reads only the invariant `w`: hoisted out of the loop.
            node("Transpose", "wt", &["w"], &["wt"], vec![]),
            node("Transpose", "wtt", &["wt"], &["wtt"], vec![]),
            node("MatMul", "hw", &["h", "wtt"], &["hw"], vec![]),
            node("Add", "h_next", &["hw", "row2"], &["h1"], vec![]),
            node("Less", "go_on", &["t1", "five"], &["cond_out"], vec![]),
            // Range(t, end, 1) is [t]: the row index, also a shape operand.
            node("Squeeze", "t0", &["t"], &["ts"], vec![]),
            node("Squeeze", "e0", &["end"], &["es"], vec![]),
            constant("step", &TensorData::I64(vec![1]), &[]),
            node("Range", "rng", &["ts", "es", "step"], &["idx"], vec![]),
            node(
                "Cast",
                "idxf",
                &["idx"],
                &["idxf"],
                vec![AttributeProto {
                    name: "to".into(),
                    r#type: attribute_type::INT,
                    i: 1,
                    ..Default::default()
                }],
            ),
            node("Add", "h_out", &["h1", "idxf"], &["h_out"], vec![]),
        ],
        output: vec![
            vi("cond_out", data_type::BOOL, &[1]),
            vi("t1", data_type::INT64, &[1]),
            vi("h_out", data_type::FLOAT, &[1, 2]),
            vi("w", data_type::FLOAT, &[2, 2]),
        ],
        ..Default::default()
    };
    let nodes = vec![
        constant("M", &i64s(&[10]), &[1]),
        constant("cond", &TensorData::Bool(vec![true]), &[1]),
        constant("t0", &i64s(&[0]), &[1]),
        constant(
            "wts",
            &TensorData::F32(vec![0.5, -0.25, 0.125, 1.0]),
            &[2, 2],
        ),
        node(
            "Loop",
            "decoder",
            &["M", "cond", "t0", "h0", "wts"],
            &["t_final", "h_final", "w_final"],
            vec![graph_attr("body", body)],
        ),
    ];
    model(
        nodes,
        vec![
            vi("xs", data_type::FLOAT, &[1, 5, 2]),
            vi("h0", data_type::FLOAT, &[1, 2]),
        ],
        vec![
            vi("t_final", data_type::INT64, &[1]),
            vi("h_final", data_type::FLOAT, &[1, 2]),
        ],
    )
}

/// The decoder loop computed directly.
fn decoder_reference(xs: &[f32], h0: [f32; 2]) -> [f32; 2] {
    let w = [0.5f32, -0.25, 0.125, 1.0];
    let mut h = h0;
    for t in 0..5 {
        let hw = [h[0] * w[0] + h[1] * w[2], h[0] * w[1] + h[1] * w[3]];
        h = [
            hw[0] + xs[2 * t] + t as f32,
            hw[1] + xs[2 * t + 1] + t as f32,
        ];
    }
    h
}

/// The one `Loop` of `f`, whose body is specialised per iteration.
fn specialised_loop(f: &Function) -> (&Loop, &Arc<Specialized>) {
    let l = only_loop(f);
    match &l.body {
        Body::Specialized(spec) => (l, spec),
        _ => panic!("not specialised"),
    }
}

/// Runs the imported decoder model twice on each backend against [`decoder_reference`];
/// after each call the loop body holds `cached` specialisations, and CPU-JIT has as many
/// compiled.
fn check_decoder_runs(f: &Function, cached: usize) {
    let (_, spec) = specialised_loop(f);
    let xs: Vec<f32> = (0..10).map(|k| k as f32 * 0.5 - 1.0).collect();
    let want = decoder_reference(&xs, [0.25, -0.5]);
    let xs_t = Tensor::from_vec(xs, [1, 5, 2]).unwrap();
    let h0 = Tensor::from_vec(vec![0.25f32, -0.5], [1, 2]).unwrap();
    for be in BACKENDS {
        let exe = Backend::create(be).unwrap().compile(f).unwrap();
        for call in 0..2 {
            let out = exe.run(&[xs_t.clone(), h0.clone()]).unwrap();
            assert_eq!(out[0].read::<i64>().unwrap(), [5], "{be}");
            let got = f32s(&out[1]);
            for (g, w) in got.iter().zip(want) {
                assert!(
                    (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                    "{be} call {call}: {got:?} vs {want:?}"
                );
            }
            assert_eq!(spec.cached(), cached, "{be} call {call}");
        }
        if be == "CPU-JIT" {
            let how = exe
                .steps()
                .into_iter()
                .find_map(|s| s.control_flow)
                .unwrap_or_default();
            assert!(
                how.contains(&format!(
                    "each specialisation compiled once ({cached} compiled so far)"
                )),
                "{how}"
            );
        }
    }
}

#[test]
fn onnx_loop_with_per_iteration_shape_operands_is_specialised_and_cached() {
    let m = import_model_bytes(&decoder_model()).unwrap();
    let text = m.function.to_text();
    assert!(text.contains("specialised on parameters [2]"), "{text}");
    let (l, spec) = specialised_loop(&m.function);
    // `w` is passed through unchanged: captured, not carried; the transposes of it run
    // once, before the loop, in the outer graph (where, `w` being constant, they fold).
    assert_eq!(l.carried, 2);
    let body = spec.function_for(&[TensorData::I64(vec![0])]).unwrap();
    assert!(
        body.nodes().all(|n| n.op().type_name() != "Transpose"),
        "{body}"
    );
    // One specialisation per value of t, imported once whatever the backends and calls.
    check_decoder_runs(&m.function, 5);
}

#[test]
fn onnx_loop_specialisations_are_bounded_by_the_import_option() {
    let options = ImportOptions {
        specialization_capacity: 2,
        ..ImportOptions::default()
    };
    let m = import_model_bytes_with(&decoder_model(), &options).unwrap();
    assert_eq!(specialised_loop(&m.function).1.capacity(), 2);
    // Five iterations, two kept (the last two): the same results.
    check_decoder_runs(&m.function, 2);
}

#[test]
fn onnx_loop_scan_outputs_with_a_computed_condition_run_as_a_dynamic_step() {
    // The decoder loop with its carried `h_out` also a scan output: the condition is
    // computed, so the scan outputs' length is known only at run time. A plain import says
    // so, naming the node; a Session runs the loop on the host, its body compiled (and
    // specialised per row index, a shape operand) through a session of its own.
    let mut m = ModelProto::decode(decoder_model().as_slice()).unwrap();
    let g = m.graph.as_mut().unwrap();
    let l = g.node.iter_mut().find(|n| n.op_type == "Loop").unwrap();
    l.output.push("scan".into());
    let body = l.attribute[0].g.as_mut().unwrap();
    body.node.push(node(
        "Identity",
        "scan_copy",
        &["h_out"],
        &["h_scan"],
        vec![],
    ));
    body.output.push(vi("h_scan", data_type::FLOAT, &[1, 2]));
    g.output.push(vi("scan", data_type::FLOAT, &[5, 1, 2]));
    let bytes = m.encode_to_vec();
    let e = import_model_bytes_with(&bytes, &ImportOptions::default()).unwrap_err();
    assert!(
        matches!(e, graphlift::onnx::OnnxError::DataDependentShape { .. }),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.contains("decoder") && text.contains("Session"),
        "{text}"
    );

    let path = std::env::temp_dir().join(format!("graphlift-decoder-{}.onnx", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let xs: Vec<f32> = (0..10).map(|k| k as f32 * 0.5 - 1.0).collect();
    // Each iteration's h, from the decoder's reference over the first rows.
    let rows: Vec<[f32; 2]> = (1..=5)
        .map(|t| {
            let mut h = [0.25, -0.5];
            let w = [0.5f32, -0.25, 0.125, 1.0];
            for (r, x) in xs.chunks(2).take(t).enumerate() {
                let hw = [h[0] * w[0] + h[1] * w[2], h[0] * w[1] + h[1] * w[3]];
                h = [hw[0] + x[0] + r as f32, hw[1] + x[1] + r as f32];
            }
            h
        })
        .collect();
    assert_eq!(rows[4], decoder_reference(&xs, [0.25, -0.5]));
    let xs_t = Tensor::from_vec(xs, [1, 5, 2]).unwrap();
    let h0 = Tensor::from_vec(vec![0.25f32, -0.5], [1, 2]).unwrap();
    for be in BACKENDS {
        let session = graphlift::onnx::Session::new(&path, Backend::create(be).unwrap()).unwrap();
        for call in 0..2 {
            let out = session.run(&[xs_t.clone(), h0.clone()]).unwrap();
            assert_eq!(out[0].read::<i64>().unwrap(), [5], "{be}");
            assert_eq!(out[2].shape().dims(), [5, 1, 2], "{be}");
            let got = f32s(&out[2]);
            for (t, row) in rows.iter().enumerate() {
                for k in 0..2 {
                    let (g, w) = (got[2 * t + k], row[k]);
                    assert!(
                        (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                        "{be} call {call}: row {t}: {got:?} vs {rows:?}"
                    );
                }
            }
            assert_eq!(
                &got[8..],
                &f32s(&out[1])[..],
                "{be}: the last row is h_final"
            );
        }
    }
    std::fs::remove_file(path).unwrap();
}

#[test]
fn jit_without_buffer_recycling_computes_the_same() {
    // What specialised loop bodies compile with: no temporaries kept between calls.
    use graphlift::runtime::Backend as _;
    let g = running_sum_loop(3);
    let a = Tensor::from_vec(vec![1.0f32, 2.0], [2]).unwrap();
    let x = Tensor::from_vec(vec![10.0f32, 100.0], [2]).unwrap();
    let want = run("INTERPRETER", &g, &[a.clone(), x.clone()]);
    let be = graphlift::jit::CpuJitBackend::new().with_buffer_recycling(false);
    let exe = be.compile(&g).unwrap();
    for _ in 0..2 {
        assert_eq!(exe.run(&[a.clone(), x.clone()]).unwrap(), want);
    }
}
