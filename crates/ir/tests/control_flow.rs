//! `Op::ControlFlow`: the type and shape checks of `If`, `Loop` and `Scan` when a node is
//! built, and each error they give; printing and JSON of a Function with control flow.

use std::sync::Arc;

use graphlift_ir::control_flow::{Body, ControlFlow, If, Loop, Scan, Specialized, Specializer};
use graphlift_ir::{
    BinaryOp,
    ElementType::{Bool, F32, I64},
    Function, IrError, Op, Output, Shape, TensorData, TensorType,
};

/// `(i, cond, acc, x) -> (cond, acc + x, acc + x)`: a running-sum loop body with one carried
/// value `acc` `f32[n]`, one captured `x` `f32[n]` and one scan output.
fn sum_body(n: usize) -> Function {
    let mut f = Function::new("sum_body");
    let _i = f.add_parameter("i", I64, Shape::scalar()).unwrap();
    let c = f.add_parameter("cond", Bool, Shape::scalar()).unwrap();
    let acc = f.add_parameter("acc", F32, [n]).unwrap();
    let x = f.add_parameter("x", F32, [n]).unwrap();
    let s = f
        .add_node(Op::Binary(BinaryOp::Add), &[acc.into(), x.into()])
        .unwrap();
    f.add_result(c.into(), Some("cond_out".into())).unwrap();
    f.add_result(s.into(), Some("acc_out".into())).unwrap();
    f.add_result(s.into(), Some("scan_out".into())).unwrap();
    f
}

fn loop_op(body: Function, scan_length: Option<usize>) -> Op {
    Op::ControlFlow(Arc::new(ControlFlow::Loop(Loop {
        body: Body::Static(body),
        carried: 1,
        scan_outputs: 1,
        scan_length,
    })))
}

/// An outer function with `M`, `cond`, `acc0` and `x` as parameters.
fn outer(n: usize) -> (Function, Vec<Output>) {
    let mut g = Function::new("outer");
    let m = g.add_parameter("M", I64, Shape::scalar()).unwrap();
    let c = g.add_parameter("c", Bool, Shape::scalar()).unwrap();
    let a = g.add_parameter("a", F32, [n]).unwrap();
    let x = g.add_parameter("x", F32, [n]).unwrap();
    (g, vec![m.into(), c.into(), a.into(), x.into()])
}

fn message(e: IrError) -> String {
    e.to_string()
}

#[test]
fn loop_types_carried_then_stacked_scan_outputs() {
    let (mut g, ins) = outer(3);
    let id = g.add_node(loop_op(sum_body(3), Some(5)), &ins).unwrap();
    let n = g.node(id).unwrap();
    assert_eq!(n.outputs()[0], TensorType::new(F32, Shape::new([3])));
    assert_eq!(n.outputs()[1], TensorType::new(F32, Shape::new([5, 3])));
    assert_eq!(n.op().type_name(), "Loop");
}

#[test]
fn loop_carried_value_changing_shape_is_an_error() {
    // The body's carried result is f32[4] for an f32[3] carried value.
    let mut body = Function::new("grows");
    body.add_parameter("i", I64, Shape::scalar()).unwrap();
    let c = body.add_parameter("cond", Bool, Shape::scalar()).unwrap();
    let acc = body.add_parameter("acc", F32, [3]).unwrap();
    body.add_parameter("x", F32, [3]).unwrap();
    let wider = body
        .add_node(
            Op::Pad(graphlift_ir::Pad {
                low: vec![0],
                high: vec![1],
                interior: vec![0],
                mode: graphlift_ir::PadMode::Edge,
            }),
            &[acc.into()],
        )
        .unwrap();
    body.add_result(c.into(), None).unwrap();
    body.add_result(wider.into(), None).unwrap();
    body.add_result(acc.into(), None).unwrap();
    let (mut g, ins) = outer(3);
    let e = message(g.add_node(loop_op(body, Some(2)), &ins).unwrap_err());
    assert!(
        e.contains("loop-carried value 0 changes from f32[3] to f32[4]"),
        "{e}"
    );
}

#[test]
fn loop_body_with_wrong_parameter_or_result_count_is_an_error() {
    let (mut g, ins) = outer(3);
    // Three operands only: the body takes four parameters.
    let e = message(
        g.add_node(loop_op(sum_body(3), Some(2)), &ins[..3])
            .unwrap_err(),
    );
    assert!(e.contains("the body has 4 parameter(s), needs 3"), "{e}");
    // Two scan outputs declared, one given.
    let op = Op::ControlFlow(Arc::new(ControlFlow::Loop(Loop {
        body: Body::Static(sum_body(3)),
        carried: 1,
        scan_outputs: 2,
        scan_length: Some(2),
    })));
    let e = message(g.add_node(op, &ins).unwrap_err());
    assert!(e.contains("the body has 3 result(s), needs 4"), "{e}");
}

#[test]
fn loop_scan_outputs_need_a_static_length() {
    let (mut g, ins) = outer(3);
    let e = message(g.add_node(loop_op(sum_body(3), None), &ins).unwrap_err());
    assert!(
        e.contains("scan outputs need a static iteration count"),
        "{e}"
    );
}

#[test]
fn loop_trip_count_and_condition_types_are_checked() {
    let mut g = Function::new("g");
    let m = g.add_parameter("M", F32, Shape::scalar()).unwrap();
    let c = g.add_parameter("c", Bool, Shape::scalar()).unwrap();
    let a = g.add_parameter("a", F32, [3]).unwrap();
    let x = g.add_parameter("x", F32, [3]).unwrap();
    let ins: Vec<Output> = vec![m.into(), c.into(), a.into(), x.into()];
    let e = message(g.add_node(loop_op(sum_body(3), Some(1)), &ins).unwrap_err());
    assert!(e.contains("the trip count must be one i64 element"), "{e}");
}

fn branch(name: &str, value: f32, shape: &[usize]) -> Function {
    let mut f = Function::new(name);
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let n: usize = shape.iter().product();
    let k = f
        .add_constant(TensorData::F32(vec![value; n]), Shape::new(shape))
        .unwrap();
    let out = if shape == [2] {
        f.add_node(Op::Binary(BinaryOp::Add), &[x.into(), k.into()])
            .unwrap()
    } else {
        k
    };
    f.add_result(out.into(), None).unwrap();
    f
}

#[test]
fn if_branches_must_agree() {
    let mut g = Function::new("g");
    let c = g.add_parameter("c", Bool, [1]).unwrap();
    let x = g.add_parameter("x", F32, [2]).unwrap();
    let ok = Op::ControlFlow(Arc::new(ControlFlow::If(If {
        then_branch: branch("then", 1.0, &[2]),
        else_branch: branch("else", 2.0, &[2]),
    })));
    let id = g.add_node(ok, &[c.into(), x.into()]).unwrap();
    assert_eq!(
        g.node(id).unwrap().outputs()[0],
        TensorType::new(F32, Shape::new([2]))
    );
    let bad = Op::ControlFlow(Arc::new(ControlFlow::If(If {
        then_branch: branch("then", 1.0, &[2]),
        else_branch: branch("else", 2.0, &[3]),
    })));
    let e = message(g.add_node(bad, &[c.into(), x.into()]).unwrap_err());
    assert!(
        e.contains("the branches disagree on output 0: then gives f32[2], else f32[3]"),
        "{e}"
    );
    // A condition that is not bool.
    let e = message(
        g.add_node(
            Op::ControlFlow(Arc::new(ControlFlow::If(If {
                then_branch: branch("then", 1.0, &[2]),
                else_branch: branch("else", 2.0, &[2]),
            }))),
            &[x.into(), x.into()],
        )
        .unwrap_err(),
    );
    assert!(e.contains("the condition must be one bool element"), "{e}");
}

fn scan_body() -> Function {
    let mut f = Function::new("scan_body");
    let s = f.add_parameter("s", F32, [2]).unwrap();
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let y = f
        .add_node(Op::Binary(BinaryOp::Add), &[s.into(), x.into()])
        .unwrap();
    f.add_result(y.into(), None).unwrap();
    f.add_result(y.into(), None).unwrap();
    f
}

#[test]
fn scan_types_and_errors() {
    let mut g = Function::new("g");
    let s = g.add_parameter("s", F32, [2]).unwrap();
    let x = g.add_parameter("x", F32, [3, 2]).unwrap();
    let scan = |axes: Vec<usize>, out_axes: Vec<usize>| {
        Op::ControlFlow(Arc::new(ControlFlow::Scan(Scan {
            body: scan_body(),
            state: 1,
            scan_inputs: 1,
            input_axes: axes,
            input_reverse: vec![false],
            output_axes: out_axes,
            output_reverse: vec![true],
        })))
    };
    let id = g
        .add_node(scan(vec![0], vec![1]), &[s.into(), x.into()])
        .unwrap();
    let n = g.node(id).unwrap();
    assert_eq!(n.outputs()[0], TensorType::new(F32, Shape::new([2])));
    assert_eq!(n.outputs()[1], TensorType::new(F32, Shape::new([2, 3])));
    // Slices along axis 1 are f32[3], the body takes f32[2].
    let e = message(
        g.add_node(scan(vec![1], vec![0]), &[s.into(), x.into()])
            .unwrap_err(),
    );
    assert!(
        e.contains("the body's parameter 1 is f32[2], scan input 0's slice is f32[3]"),
        "{e}"
    );
    // A body with one parameter too few.
    let e = message(g.add_node(scan(vec![0], vec![0]), &[x.into()]).unwrap_err());
    assert!(e.contains("Scan needs 1 state value(s)"), "{e}");
}

#[derive(Debug)]
struct Fixed(Function);

impl Specializer for Fixed {
    fn specialize(&self, _: &[TensorData]) -> Result<Function, String> {
        Ok(self.0.clone())
    }
}

#[test]
fn specialised_body_signature_is_checked_per_specialisation() {
    let body = sum_body(3);
    let good = Specialized::new(
        "b",
        vec![0],
        body.parameter_types(),
        body.result_types(),
        Arc::new(Fixed(body.clone())),
    );
    let f = good.function_for(&[TensorData::I64(vec![4])]).unwrap();
    assert_eq!(f.parameter_types(), body.parameter_types());
    assert_eq!(good.cached(), 1);
    good.function_for(&[TensorData::I64(vec![4])]).unwrap();
    assert_eq!(good.cached(), 1, "a second lookup hits the cache");
    // Declared f32[4] carried values: the specialisation's f32[3] does not fit.
    let mut params = body.parameter_types();
    params[2] = TensorType::new(F32, Shape::new([4]));
    let bad = Specialized::new(
        "b",
        vec![0],
        params,
        body.result_types(),
        Arc::new(Fixed(body)),
    );
    let e = bad.function_for(&[TensorData::I64(vec![1])]).unwrap_err();
    assert!(
        e.contains("body `b` specialised for [1]: parameter 2 is f32[3], needs f32[4]"),
        "{e}"
    );
}

#[test]
fn lru_evicts_the_least_recently_used() {
    let mut c = graphlift_ir::Lru::new(2);
    c.insert(vec![1], "a");
    c.insert(vec![2], "b");
    assert_eq!(c.get(&[1]), Some(&"a"));
    c.insert(vec![3], "c");
    assert_eq!(c.get(&[2]), None, "2 was the least recently used");
    assert_eq!(c.get(&[1]), Some(&"a"));
    assert_eq!(c.len(), 2);
    assert_eq!(c.evictions(), 1);
}

#[test]
fn text_names_the_body_and_json_refuses_clearly() {
    let (mut g, ins) = outer(3);
    let id = g.add_node(loop_op(sum_body(3), Some(5)), &ins).unwrap();
    g.add_result(Output::new(id, 0), None).unwrap();
    g.add_result(Output::new(id, 1), None).unwrap();
    let text = g.to_text();
    assert!(
        text.contains("Loop<carried=1, scan_outputs=1, length=5, body=`sum_body`>"),
        "{text}"
    );
    assert!(
        text.contains("    body sum_body(i, cond, acc, x)"),
        "{text}"
    );
    let e = Function::from_json(&g.to_json()).unwrap_err().to_string();
    assert!(e.contains("op `Loop` is control flow"), "{e}");
    assert!(e.contains("cannot be loaded from JSON"), "{e}");
}
