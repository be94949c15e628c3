//! The rewrite passes respect state (issue 24): no pass folds, merges, rewrites or moves a
//! `Variable`, `ReadVariable` or `Assign` in a way that changes what a stateful function
//! computes or writes. Each test builds a function with variables, runs a pass (or the
//! default pipeline), checks the structure, and runs the function before and after on the
//! INTERPRETER executable, comparing results and variables over several calls
//! ([`assert_same_values`], through [`run_checked`]). Subgraph extraction's are in
//! `extraction/state_tests.rs`.

use std::sync::Arc;

use graphlift_ir::{
    BinaryOp,
    ElementType::{F32, I32},
    Function, FunctionBuilder, FusedKernel, Node, NodeId, Op, Output, Shape, TensorData,
};

use crate::testing::{assert_same_values, by_name, count_op, id, run_checked, same_function, tags};
use crate::{
    AlgebraicSimplification, CommonSubexpressionElimination, ConstantFolding, DeadCodeElimination,
    ExtractionConfig, FusedOpExpansion, Pass, PassManager,
};

/// A variable's initializer: a Function of no parameters whose one result is the f32 scalar
/// `x`.
fn scalar_initializer(x: f32) -> Function {
    let mut init = Function::new("init");
    let c = init
        .add_constant(TensorData::F32(vec![x]), Shape::scalar())
        .unwrap();
    init.add_result(c.into(), None).unwrap();
    init
}

/// The node producing input `slot` of `n`.
fn input<'f>(f: &'f Function, n: &Node, slot: usize) -> &'f Node {
    f.node(n.inputs()[slot].node).unwrap()
}

#[test]
fn cse_merges_reads_before_an_assign_but_not_across_it() {
    let b = FunctionBuilder::new("reads");
    let x = b.variable("x", b.constant(vec![1.0f32, -2.0], [2]));
    let before = (x * 2.0).named("before");
    let write = b.assign(x, (x + 1.0).named("next")).named("write");
    let after = (x * 2.0).named("after");
    let mut f = b.finish(&[before, after]).unwrap();
    assert_eq!(count_op(&f, "ReadVariable"), 3);

    assert!(run_checked(&CommonSubexpressionElimination, &mut f));
    assert_eq!(
        count_op(&f, "ReadVariable"),
        2,
        "the two reads before the assign merge, the one after it stays\n{f}"
    );
    assert_eq!(count_op(&f, "Multiply"), 2, "x * 2 before and after differ");
    let read_after = input(&f, by_name(&f, "after"), 0);
    assert!(matches!(read_after.op(), Op::ReadVariable));
    assert_eq!(read_after.other_deps(), [id(write)]);
    let read_before = input(&f, by_name(&f, "before"), 0);
    assert_eq!(input(&f, by_name(&f, "next"), 0).id(), read_before.id());
    assert_eq!(f.sinks(), [id(write)]);
}

#[test]
fn cse_never_merges_variables_even_with_equal_initializers() {
    // a' = a + b and b' = 2 b, both starting at 1: two variables, one initializer.
    let mut f = Function::new("twins");
    let init = scalar_initializer(1.0);
    let a = f.add_variable("a", init.clone()).unwrap();
    let b = f.add_variable("b", init).unwrap();
    let ra = f.add_node(Op::ReadVariable, &[a.into()]).unwrap();
    let rb = f.add_node(Op::ReadVariable, &[b.into()]).unwrap();
    let two = f
        .add_constant(TensorData::F32(vec![2.0]), Shape::scalar())
        .unwrap();
    let binary = |f: &mut Function, op, x: NodeId, y: NodeId| {
        f.add_node(Op::Binary(op), &[x.into(), y.into()]).unwrap()
    };
    let sum = binary(&mut f, BinaryOp::Add, ra, rb);
    let twice = binary(&mut f, BinaryOp::Multiply, rb, two);
    for (v, value) in [(a, sum), (b, twice)] {
        let w = f.add_node(Op::Assign, &[v.into(), value.into()]).unwrap();
        f.add_sink(w).unwrap();
    }
    f.add_result(ra.into(), None).unwrap();
    f.add_result(rb.into(), None).unwrap();
    f.validate().unwrap();

    assert!(!run_checked(&CommonSubexpressionElimination, &mut f));
    assert_eq!(count_op(&f, "Variable"), 2);
    assert_eq!(count_op(&f, "Assign"), 2);
}

#[test]
fn folding_never_treats_a_read_as_the_initial_value() {
    let b = FunctionBuilder::new("fold");
    let w = b.variable("w", b.scalar(F32, 2.0));
    let k = (b.scalar(F32, 3.0) + b.scalar(F32, 1.0)).named("k");
    let y = (w * k).named("y");
    let wide = (w.broadcast_to([3]) * 0.5).named("wide");
    b.assign(w, y);
    let mut f = b.finish(&[y, wide]).unwrap();

    assert!(run_checked(&ConstantFolding::new(), &mut f));
    assert!(f.node_by_name("k").is_none(), "3 + 1 folds\n{f}");
    assert_eq!(count_op(&f, "Multiply"), 2, "w * 4 and bcast(w) * 0.5 stay");
    assert!(matches!(
        input(&f, by_name(&f, "y"), 0).op(),
        Op::ReadVariable
    ));
    let bcast = input(&f, by_name(&f, "wide"), 0);
    assert!(matches!(bcast.op(), Op::Broadcast(_)), "{f}");
    assert!(matches!(input(&f, bcast, 0).op(), Op::ReadVariable));
    assert_eq!((count_op(&f, "Variable"), count_op(&f, "Assign")), (1, 1));
}

#[test]
fn dce_keeps_sinks_and_the_reads_they_wait_for() {
    let b = FunctionBuilder::new("dce");
    let p = b.parameter("p", F32, [2]);
    let w = b.variable("w", b.constant(vec![0.0f32, 1.0], [2]));
    let v = b.variable("v", b.constant(vec![1.0f32, -1.0], [2]));
    let update = b.assign(w, (w + p).named("w_next")).named("update");
    let _guarded = b.saved_user_deps(|| b.assign(v, v * 2.0)).named("guarded");
    let _dead = p.exp().named("dead");
    let mut f = b.finish(&[p * 3.0, v]).unwrap();
    assert_eq!(f.sinks(), [id(update)]);

    assert!(run_checked(&DeadCodeElimination, &mut f));
    for gone in ["dead", "guarded"] {
        assert!(f.node_by_name(gone).is_none(), "{gone}\n{f}");
    }
    for kept in ["update", "w_next", "w", "v"] {
        assert!(f.node_by_name(kept).is_some(), "{kept}\n{f}");
    }
    assert_eq!(f.sinks(), [id(update)]);
    assert!(matches!(
        input(&f, by_name(&f, "w_next"), 0).op(),
        Op::ReadVariable
    ));
}

#[test]
fn simplification_keeps_assigns_and_their_writes() {
    let b = FunctionBuilder::new("simplify");
    // x * 1 -> x: the assign writes the read.
    let w = b.variable("w", b.scalar(F32, 2.5));
    b.assign(w, (w * 1.0).named("times_one")).named("scale");
    // step - step -> 0 would drop an assign that only this result needs.
    let n = b.variable("n", b.scalar(I32, 0.0));
    let step = b.saved_user_deps(|| b.assign(n, n + 1.0)).named("step");
    let kept = (step - step).named("kept");
    // A main-stream assign runs anyway: bump - bump -> 0.
    let m = b.variable("m", b.scalar(I32, 0.0));
    let bump = b.assign(m, m + 1.0).named("bump");
    let zero = (bump - bump).named("zero");
    let mut f = b.finish(&[kept, zero]).unwrap();

    assert!(run_checked(&AlgebraicSimplification, &mut f));
    assert!(f.node_by_name("times_one").is_none(), "{f}");
    let scale = by_name(&f, "scale");
    assert!(matches!(input(&f, scale, 1).op(), Op::ReadVariable), "{f}");
    assert!(matches!(
        by_name(&f, "kept").op(),
        Op::Binary(BinaryOp::Subtract)
    ));
    assert!(f.node_by_name("step").is_some());
    assert!(f.node_by_name("zero").is_none(), "{f}");
    assert_eq!(f.sinks(), [scale.id(), id(bump)]);
}

#[test]
fn expansion_refuses_a_kernel_whose_body_holds_state() {
    let mut body = Function::new("stateful_body");
    let v = body.add_variable("v", scalar_initializer(1.0)).unwrap();
    let r = body.add_node(Op::ReadVariable, &[v.into()]).unwrap();
    body.add_result(r.into(), None).unwrap();
    let mut f = Function::new("outer");
    let kernel = Op::FusedKernel(Arc::new(FusedKernel { body }));
    let k = f.add_node(kernel, &[]).unwrap();
    f.add_result(Output::from(k), None).unwrap();
    // The IR refuses such a kernel; expansion refuses it too, leaving the function as it was.
    let invalid = f.validate().unwrap_err();
    assert!(
        invalid.to_string().contains("state stays outside them"),
        "{invalid}"
    );
    let before = f.clone();

    FusedOpExpansion.run(&mut f).unwrap_err();
    assert!(same_function(&f, &before));
}

#[test]
fn the_pipeline_keeps_assigns_their_tags_and_their_order() {
    let b = FunctionBuilder::new("pipeline");
    let p = b.parameter("p", F32, [4]);
    let w = b.variable("w", b.constant(vec![0.0f32, 1.0, -1.0, 4.0], [4]));
    let one = (w * 1.0).tagged("onnx:Mul:one");
    let next = ((one + p).tagged("onnx:Add:sum") * 0.5).tagged("onnx:Mul:next");
    b.assign(w, next)
        .named("update")
        .tagged("onnx:Assign:update");
    let y = (p.relu() * 2.0).tagged("onnx:Mul:y");
    let before = b.finish(&[y, w]).unwrap();
    let mut f = before.clone();
    let pm = PassManager::default_pipeline(ExtractionConfig::default());
    pm.run(&mut f).unwrap();
    assert_same_values(&before, &f);

    // The assign: untouched, still the sink, its tags as set, no pass history.
    let update = by_name(&f, "update");
    assert_eq!(f.sinks(), [update.id()]);
    assert_eq!(tags(update), ["onnx:Assign:update"]);
    assert!(update.pass_history().is_empty());
    // The value it writes: a kernel with the tags of what it fused.
    let writer = input(&f, update, 1);
    assert!(matches!(writer.op(), Op::FusedKernel(_)), "{f}");
    assert_eq!(tags(writer), ["onnx:Add:sum", "onnx:Mul:next"]);
    assert_eq!(writer.pass_history(), ["subgraph_extraction"]);
    // The read that `w * 1` became: a live-in, with the Multiply's tag.
    let read = writer
        .inputs()
        .iter()
        .map(|o| f.node(o.node).unwrap())
        .find(|n| matches!(n.op(), Op::ReadVariable))
        .unwrap_or_else(|| panic!("the kernel reads w\n{f}"));
    assert_eq!(tags(read), ["onnx:Mul:one"]);
    assert_eq!(read.pass_history(), ["algebraic_simplification"]);
    // The result's read of w runs after the assign.
    let result_read = input(&f, f.node(f.results()[1]).unwrap(), 0);
    assert_eq!(result_read.other_deps(), [update.id()]);
    assert_eq!(pm.run(&mut f).map(|r| r.changed()).ok(), Some(false));
}

#[test]
fn rewrites_keep_an_order_that_only_data_implies() {
    // Built through the Function API with no control dependencies: the assign is after the
    // read only because its value, `r - r`, reads it. `x - x -> 0` would cut that path and
    // leave the read (still a result) and the assign unordered.
    let mut init = Function::new("init");
    let c = init
        .add_constant(TensorData::I32(vec![32]), Shape::scalar())
        .unwrap();
    init.add_result(c.into(), None).unwrap();
    let mut f = Function::new("data_order");
    let v = f.add_variable("v", init).unwrap();
    let r = f.add_node(Op::ReadVariable, &[v.into()]).unwrap();
    let diff = f
        .add_node(Op::Binary(BinaryOp::Subtract), &[r.into(), r.into()])
        .unwrap();
    let a = f.add_node(Op::Assign, &[v.into(), diff.into()]).unwrap();
    f.add_sink(a).unwrap();
    f.add_result(r.into(), None).unwrap();
    f.validate().unwrap();
    let before = f.clone();
    let pm = PassManager::default_pipeline(ExtractionConfig::default());
    pm.run(&mut f).unwrap();
    assert_same_values(&before, &f);
}
