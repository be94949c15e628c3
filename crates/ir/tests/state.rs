//! State in the IR: the control dependencies the builder adds (Nervana Graph's creation
//! order), guarded and main-stream assigns, several computations from one builder, every
//! error of state (each naming its nodes), and exact JSON round trips of stateful functions.

mod common;

use std::collections::BTreeSet;

use common::random::{stateful, Stateful};
use common::same_structure;
use graphlift_ir::{
    ElementType::{F32, F64},
    Function, FunctionBuilder, IrError, NodeId, Op, SerializationErrorKind, Shape, TensorData,
    UnaryOp, Value,
};
use proptest::prelude::*;
use serde_json::{json, Value as Json};

/// The id of the node named `name`.
fn id(f: &Function, name: &str) -> NodeId {
    f.node_by_name(name)
        .unwrap_or_else(|| panic!("no node `{name}` in\n{f}"))
        .id()
}

/// The names of `ids`.
fn names(f: &Function, ids: &[NodeId]) -> Vec<String> {
    ids.iter()
        .map(|&i| f.node(i).unwrap().name().to_string())
        .collect()
}

/// The names of the control dependencies of node `name`, sorted.
fn after(f: &Function, name: &str) -> BTreeSet<String> {
    let n = f.node(id(f, name)).unwrap();
    names(f, n.other_deps()).into_iter().collect()
}

/// A set of names, to compare with [`after`].
fn set<const N: usize>(items: [&str; N]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The name of the node behind input `slot` of node `name`.
fn input(f: &Function, name: &str, slot: usize) -> String {
    let o = f.node(id(f, name)).unwrap().inputs()[slot];
    f.node(o.node).unwrap().name().to_string()
}

/// The read behind input `slot` of node `name`, checked to be a `ReadVariable` of
/// `variable`.
fn read_of(f: &Function, variable: &str, name: &str, slot: usize) -> String {
    let read = input(f, name, slot);
    assert_eq!(f.node(id(f, &read)).unwrap().op(), &Op::ReadVariable, "{f}");
    assert_eq!(f.variable_of(id(f, &read)), Some(id(f, variable)), "{f}");
    read
}

/// Whether node `name` runs in `f` ([`Function::live_nodes`]).
fn is_live(f: &Function, name: &str) -> bool {
    f.live_nodes()[id(f, name).index()]
}

/// The node and message of an [`IrError::State`]; panics on any other error.
fn state_error(e: IrError) -> (String, String) {
    match e {
        IrError::State { node, message, .. } => (node, message),
        other => panic!("expected a state error, got {other:?}: {other}"),
    }
}

/// Asserts that `text` contains every one of `parts`.
#[track_caller]
fn assert_mentions(text: &str, parts: &[&str]) {
    for p in parts {
        assert!(text.contains(p), "`{p}` is missing from: {text}");
    }
}

/// The names of the values `vs` of builder `b`.
fn value_names(b: &FunctionBuilder, vs: &[Value<'_>]) -> Vec<String> {
    b.with_function(|f| {
        Ok(names(
            f,
            &vs.iter()
                .map(|v| v.output().unwrap().node)
                .collect::<Vec<_>>(),
        ))
    })
    .unwrap()
}

/// A Function of no parameters whose one result is the constant `values` of `shape`.
fn initializer(name: &str, values: Vec<f32>, shape: impl Into<Shape>) -> Function {
    let mut init = Function::new(name);
    let c = init.add_constant(TensorData::F32(values), shape).unwrap();
    init.add_result(c.into(), None).unwrap();
    init
}

/// `w: f32[]` (initially 0), a read `r` of it as the result, and an assign `a` of the
/// constant `one` made a sink, built with the Function API: nothing orders `r` and `a`.
fn unordered() -> Function {
    let mut f = Function::new("unordered");
    let w = f
        .add_variable("w", initializer("w_init", vec![0.0], Shape::scalar()))
        .unwrap();
    let r = f.add_node(Op::ReadVariable, &[w.into()]).unwrap();
    f.set_name(r, "r").unwrap();
    let one = f
        .add_constant(TensorData::F32(vec![1.0]), Shape::scalar())
        .unwrap();
    f.set_name(one, "one").unwrap();
    let a = f.add_node(Op::Assign, &[w.into(), one.into()]).unwrap();
    f.set_name(a, "a").unwrap();
    f.add_result(r.into(), Some("out".into())).unwrap();
    f.add_sink(a).unwrap();
    f
}

// ---- What the builder builds -------------------------------------------------------------

#[test]
fn a_read_made_after_an_assign_depends_on_it() {
    // x = variable(0); assign(x, 5); z = x + 1: the read behind z runs after the assign.
    let b = FunctionBuilder::new("read_after_assign");
    let x = b.variable("x", b.scalar(F32, 0.0));
    b.assign(x, b.scalar(F32, 5.0)).named("a");
    let z = (x + 1.0).named("z");
    let f = b.finish(&[z]).unwrap();

    let read = read_of(&f, "x", "z", 0);
    assert_eq!(after(&f, &read), set(["a"]));
    assert!(
        after(&f, "a").is_empty(),
        "nothing read x before the assign"
    );
    assert_eq!(f.variable_of(id(&f, "a")), Some(id(&f, "x")));
    assert_eq!(f.variable_of(id(&f, "z")), None);
    assert_eq!(names(&f, f.sinks()), ["a"]);
    let variables: Vec<&str> = f.variables().map(|n| n.name()).collect();
    assert_eq!(variables, ["x"]);
    let Op::Variable(v) = f.node(id(&f, "x")).unwrap().op() else {
        panic!("x is a Variable");
    };
    assert!(v.initializer.parameters().is_empty());
    assert_eq!(
        v.initializer.result_types(),
        f.node(id(&f, "x")).unwrap().outputs()
    );

    // The text form shows the sink, the variable with its initializer, and the order.
    let text = f.to_text();
    assert_mentions(
        &text,
        &[
            "function read_after_assign() -> (",
            "\n  sinks=[a]\n",
            "\n  x = Variable() : f32[]\n    initializer x_initializer() -> (",
            &format!("\n  {read} = ReadVariable(x) : f32[]  after=[a]\n"),
        ],
    );
}

#[test]
fn an_assign_made_after_a_read_depends_on_it() {
    // y = x * 2; assign(x, 3): the assign waits for the read (write after read).
    let b = FunctionBuilder::new("write_after_read");
    let x = b.variable("x", b.scalar(F32, 1.0));
    let y = (x * 2.0).named("y");
    b.assign(x, b.scalar(F32, 3.0)).named("a");
    let f = b.finish(&[y]).unwrap();
    let read = read_of(&f, "x", "y", 0);
    assert!(after(&f, &read).is_empty(), "no assign before the read");
    assert_eq!(after(&f, "a"), set([read.as_str()]));
}

#[test]
fn a_dependency_that_inputs_imply_is_explicit_too() {
    // assign(x, x + 1) reads x through its value, and still depends on the read: a rewrite
    // may cut the data path (`x - x -> 0`), never the control dependency.
    let b = FunctionBuilder::new("increment");
    let x = b.variable("x", b.scalar(F32, 0.0));
    let sum = (x + 1.0).named("sum");
    b.assign(x, sum).named("a");
    let f = b.finish(&[]).unwrap();
    let read = read_of(&f, "x", "sum", 0);
    assert_eq!(input(&f, "a", 1), "sum");
    assert_eq!(after(&f, "a"), set([read.as_str()]));
    assert_eq!(names(&f, f.sinks()), ["a"]);
}

#[test]
fn accesses_are_ordered_by_creation_variable_by_variable() {
    let b = FunctionBuilder::new("order");
    let x = b.variable("x", b.scalar(F32, 0.0));
    let y = b.variable("y", b.scalar(F32, 0.0));
    b.assign(x, b.scalar(F32, 1.0)).named("a1");
    let rx = (x * 1.0).named("rx");
    let ry = (y * 1.0).named("ry");
    b.assign(x, b.scalar(F32, 2.0)).named("a2");
    // A scalar variable used with a vector is read, then broadcast.
    let v = b.parameter("v", F32, [3]);
    let wide = (v + x).named("wide");
    let f = b.finish(&[rx, ry, wide]).unwrap();

    let read_x = read_of(&f, "x", "rx", 0);
    let read_y = read_of(&f, "y", "ry", 0);
    assert_eq!(after(&f, &read_x), set(["a1"]));
    assert!(after(&f, &read_y).is_empty(), "y is never assigned");
    // a2 after the read of x made since a1, and after a1; nothing of y.
    assert_eq!(after(&f, "a2"), set([read_x.as_str(), "a1"]));
    let broadcast = input(&f, "wide", 1);
    assert!(
        matches!(f.node(id(&f, &broadcast)).unwrap().op(), Op::Broadcast(_)),
        "{f}"
    );
    let read_wide = read_of(&f, "x", &broadcast, 0);
    assert_eq!(after(&f, &read_wide), set(["a2"]));
    assert_eq!(names(&f, f.sinks()), ["a1", "a2"]);
}

#[test]
fn guarded_assigns_run_only_in_computations_that_name_them() {
    let b = FunctionBuilder::new("guarded");
    let w = b.variable("w", b.scalar(F32, 0.0));
    let update = b.saved_user_deps(|| b.assign(w, w + 1.0).named("update"));
    let nested = b.saved_user_deps(|| b.saved_user_deps(|| b.assign(w, w * 2.0).named("double")));
    let seen = (w * 1.0).named("seen");
    // Back in the main stream: a sink again.
    b.assign(w, b.scalar(F32, 0.0)).named("reset");

    let alone = b.computation(&[seen]).unwrap();
    assert_eq!(names(&alone, alone.sinks()), ["reset"]);
    assert!(!is_live(&alone, "update") && !is_live(&alone, "double"));
    let update_id = id(&alone, "update");
    let double_id = id(&alone, "double");
    assert!(
        alone
            .nodes()
            .all(|n| !n.other_deps().contains(&update_id) && !n.other_deps().contains(&double_id)),
        "a guarded assign that does not run orders nothing:\n{alone}"
    );
    let seen_read = read_of(&alone, "w", "seen", 0);
    assert!(after(&alone, &seen_read).is_empty());
    assert_eq!(after(&alone, "reset"), set([seen_read.as_str()]));
    let mut pruned = alone.clone();
    pruned.remove_dead_nodes();
    assert!(pruned.node_by_name("update").is_none());
    assert!(pruned.node_by_name("double").is_none());
    assert!(pruned.node_by_name("reset").is_some(), "sinks stay");
    pruned.validate().unwrap();

    let named = b.computation(&[seen, update, nested]).unwrap();
    assert_eq!(names(&named, named.sinks()), ["reset"], "still no sinks");
    assert!(is_live(&named, "update") && is_live(&named, "double"));
    // double's own read of w (made after update) follows update; seen follows double.
    let double_read = read_of(&named, "w", &input(&named, "double", 1), 0);
    assert_eq!(after(&named, &double_read), set(["update"]));
    assert_eq!(after(&named, &seen_read), set(["double"]));
    assert_eq!(after(&named, "reset"), set([seen_read.as_str(), "double"]));
}

#[test]
fn variables_lists_upstream_variables_in_creation_order() {
    let b = FunctionBuilder::new("parameters");
    let p = b.parameter("p", F32, [2]);
    let w1 = b.variable("w1", b.constant(vec![1.0f32, 2.0], [2]));
    let bias = b.variable("bias", b.scalar(F32, 0.0));
    let w2 = b.variable("w2", b.scalar(F32, 0.5));
    b.variable("unused", b.scalar(F32, 0.0));
    // w2 is used first, w1 last: the list is in creation order all the same.
    let loss = ((p * w2) + w1).named("loss");
    assert_eq!(value_names(&b, &b.variables(loss)), ["w1", "w2"]);
    assert_eq!(
        value_names(&b, &b.variables(loss + bias)),
        ["w1", "bias", "w2"]
    );
    assert_eq!(value_names(&b, &b.variables(w2)), ["w2"]);
    assert!(b.variables(p).is_empty());
    // An assign has the variable it writes (input 0) upstream, and those its value reads.
    let step = b.assign(bias, (w2 * 2.0).named("twice"));
    assert_eq!(value_names(&b, &b.variables(step)), ["bias", "w2"]);
    b.finish(&[loss, step]).unwrap();
}

#[test]
fn one_builder_gives_several_computations() {
    let b = FunctionBuilder::new("train");
    let x = b.parameter("x", F32, [2]);
    let w = b.variable("w", b.constant(vec![0.5f32, -0.5], [2]));
    let y = (x * w).named("y");
    let step = b.saved_user_deps(|| b.assign(w, w - y * 0.1).named("step"));
    let infer = || b.computation(&[y]).unwrap();

    let train = b.computation(&[y, step]).unwrap();
    let inference = infer();
    assert_eq!(train.results().len(), 2);
    assert_eq!(inference.results().len(), 1);
    assert!(is_live(&train, "step"));
    assert!(!is_live(&inference, "step"));
    assert!(train.sinks().is_empty() && inference.sinks().is_empty());
    // `computation` leaves the builder as it was: asked again, it gives the same function.
    assert_eq!(infer().to_json(), inference.to_json());
    assert_eq!(infer(), inference);

    // The builder keeps building; `finish` hands out the last function and starts afresh.
    let z = (y + 1.0).named("z");
    let last = b.finish(&[z]).unwrap();
    assert!(last.node_by_name("step").is_some() && last.node_by_name("z").is_some());
    assert_eq!(b.finish(&[]).unwrap().node_count(), 0);
}

#[test]
fn function_api_orders_by_control_dependencies() {
    // Either order of the read and the assign validates; the assign's value computed from
    // the read is ordered by inputs alone.
    for (later, earlier) in [("r", "a"), ("a", "r")] {
        let mut f = unordered();
        f.add_control_dependency(id(&f, later), id(&f, earlier))
            .unwrap();
        f.validate().unwrap();
    }
    let mut f = Function::new("through_inputs");
    let w = f
        .add_variable("w", initializer("init", vec![1.0, 2.0], [2]))
        .unwrap();
    let r = f.add_node(Op::ReadVariable, &[w.into()]).unwrap();
    let neg = f
        .add_node(Op::Unary(UnaryOp::Negative), &[r.into()])
        .unwrap();
    let a = f.add_node(Op::Assign, &[w.into(), neg.into()]).unwrap();
    f.add_result(r.into(), None).unwrap();
    f.add_sink(a).unwrap();
    f.add_sink(a).unwrap();
    assert_eq!(f.sinks(), [a], "a sink is listed once");
    f.validate().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Whatever the builder is asked, its computation validates (every live read and assign
    /// is ordered), its sinks are the main stream's assigns in creation order, and no
    /// guarded assign is a sink.
    #[test]
    fn builder_computations_are_valid(case in stateful()) {
        let Stateful { function, main_assigns, guarded_assigns } = case;
        let f = match function {
            Ok(f) => f,
            Err(e) => return Err(TestCaseError::fail(format!("computation failed: {e}"))),
        };
        f.validate().unwrap();
        prop_assert_eq!(names(&f, f.sinks()), main_assigns.clone());
        for g in &guarded_assigns {
            prop_assert!(!f.sinks().contains(&id(&f, g)));
        }
        let mut pruned = f.clone();
        pruned.remove_dead_nodes();
        prop_assert!(pruned.validate().is_ok(), "{}", pruned);
        for a in &main_assigns {
            prop_assert!(pruned.node_by_name(a).is_some(), "sink {} removed", a);
        }
    }
}

// ---- Errors ------------------------------------------------------------------------------

#[test]
fn assigning_a_value_of_another_type_is_an_inference_error() {
    type MakeValue = fn(&FunctionBuilder) -> Value<'_>;
    let cases: [(&str, MakeValue); 2] = [
        ("assigns a value of f64[] to a variable of f32[]", |b| {
            b.scalar(F64, 1.0)
        }),
        ("assigns a value of f32[2] to a variable of f32[]", |b| {
            b.constant(vec![1.0f32, 2.0], [2])
        }),
    ];
    for (expected, value) in cases {
        let b = FunctionBuilder::new("mistyped");
        let x = b.variable("x", b.scalar(F32, 0.0));
        b.assign(x, value(&b));
        let err = b.finish(&[x]).unwrap_err();
        let IrError::Inference(e) = &err else {
            panic!("expected an inference error, got {err:?}");
        };
        assert_eq!(e.op, "Assign");
        assert!(e.name.starts_with("Assign_"), "{err}");
        assert_mentions(&err.to_string(), &[expected, "state.rs"]);
    }
    // The same through the Function API.
    let mut f = Function::new("mistyped");
    let w = f
        .add_variable("w", initializer("init", vec![0.0], Shape::scalar()))
        .unwrap();
    let c = f
        .add_constant(TensorData::I32(vec![1]), Shape::scalar())
        .unwrap();
    let err = f.add_node(Op::Assign, &[w.into(), c.into()]).unwrap_err();
    assert!(matches!(err, IrError::Inference(_)), "{err:?}");
    assert_mentions(
        &err.to_string(),
        &["assigns a value of i32[] to a variable of f32[]"],
    );
}

#[test]
fn assigning_to_something_that_is_not_a_variable_is_refused() {
    let b = FunctionBuilder::new("not_a_variable");
    let x = b.variable("x", b.scalar(F32, 0.0));
    b.assign((x + 1.0).named("sum"), b.scalar(F32, 1.0));
    let (node, message) = state_error(b.finish(&[x]).unwrap_err());
    assert!(node.starts_with("Assign_"), "{node}");
    assert_mentions(
        &message,
        &["assigns to `sum` (Add), which is not a Variable"],
    );

    let b = FunctionBuilder::new("not_a_variable");
    let p = b.parameter("p", F32, Shape::scalar());
    b.assign(p, b.scalar(F32, 1.0));
    let (node, message) = state_error(b.finish(&[p]).unwrap_err());
    assert!(node.starts_with("Assign_"), "{node}");
    assert_mentions(
        &message,
        &["assigns to `p` (Parameter), which is not a Variable"],
    );

    // The Function API refuses reads and assigns of non-variables, and variables used as
    // plain values.
    let mut f = Function::new("api");
    let w = f
        .add_variable("w", initializer("init", vec![0.0], Shape::scalar()))
        .unwrap();
    let p = f.add_parameter("p", F32, Shape::scalar()).unwrap();
    let read = |e: IrError| state_error(e).1;
    let cases = [
        (
            Op::ReadVariable,
            vec![p.into()],
            "reads `p` (Parameter), which is not a Variable",
        ),
        (
            Op::Assign,
            vec![p.into(), p.into()],
            "assigns to `p` (Parameter)",
        ),
        (
            Op::Unary(UnaryOp::Abs),
            vec![w.into()],
            "uses variable `w` as input 0",
        ),
        (
            Op::Assign,
            vec![w.into(), w.into()],
            "uses variable `w` as input 1",
        ),
    ];
    for (op, inputs, expected) in cases {
        let before = f.node_count();
        let message = read(f.add_node(op, &inputs).unwrap_err());
        assert_mentions(&message, &[expected]);
        assert_eq!(f.node_count(), before, "a refused node is not added");
    }
    // A Result of the variable itself is refused, naming both.
    let (node, message) = state_error(f.add_result(w.into(), Some("out".into())).unwrap_err());
    assert_eq!(node, "out");
    assert_mentions(&message, &["uses variable `w` as input 0"]);
}

#[test]
fn initializers_compute_from_constants_only() {
    // Built: a variable as the initial value, a read of one, a parameter.
    /// The initial value of `y`, from variable `x` and parameter `p`.
    type Init = for<'b> fn(Value<'b>, Value<'b>) -> Value<'b>;
    let cases: [(Init, &[&str]); 3] = [
        (|x, _| x, &["the initializer uses state (`x`, a Variable)"]),
        (
            |x, _| x + 1.0,
            &["the initializer uses state (`x`, a Variable)"],
        ),
        (|_, p| p * 2.0, &["the initializer takes parameter `p`"]),
    ];
    for (initial, expected) in cases {
        let b = FunctionBuilder::new("initializers");
        let p = b.parameter("p", F32, Shape::scalar());
        let x = b.variable("x", b.scalar(F32, 0.0));
        let y = b.variable("y", initial(x, p));
        let (node, message) = state_error(b.finish(&[y]).unwrap_err());
        assert_eq!(node, "y");
        assert_mentions(&message, expected);
    }

    // Through the Function API: a parameter, no result or two, state inside.
    let with_parameter = {
        let mut g = Function::new("g");
        let q = g.add_parameter("q", F32, Shape::scalar()).unwrap();
        g.add_result(q.into(), None).unwrap();
        g
    };
    let two_results = {
        let mut g = initializer("g", vec![0.0], Shape::scalar());
        let r = g.results()[0];
        let c = g.result_source(r).unwrap();
        g.add_result(c, None).unwrap();
        g
    };
    let stateful = {
        let mut g = Function::new("g");
        let v = g
            .add_variable("inner", initializer("i", vec![0.0], Shape::scalar()))
            .unwrap();
        let r = g.add_node(Op::ReadVariable, &[v.into()]).unwrap();
        g.add_result(r.into(), None).unwrap();
        g
    };
    let cases = [
        (with_parameter, "takes parameter `q`"),
        (Function::new("g"), "must have one result, has 0"),
        (two_results, "must have one result, has 2"),
        (stateful, "uses state (`inner`, a Variable)"),
    ];
    for (init, expected) in cases {
        let mut f = Function::new("f");
        let (node, message) = state_error(f.add_variable("v", init).unwrap_err());
        assert_eq!(node, "v");
        assert_mentions(&message, &[expected]);
        assert_eq!(f.node_count(), 0);
    }
}

#[test]
fn two_variables_of_one_name_are_refused() {
    let b = FunctionBuilder::new("twice");
    let x = b.variable("x", b.scalar(F32, 0.0));
    let first = x.output().unwrap().node;
    b.variable("x", b.scalar(F32, 1.0));
    match b.finish(&[x]).unwrap_err() {
        IrError::DuplicateName { name, node, .. } => {
            assert_eq!(name, "x");
            assert_eq!(node, first);
        }
        other => panic!("expected DuplicateName, got {other:?}"),
    }
    let mut f = Function::new("twice");
    let p = f.add_parameter("p", F32, Shape::scalar()).unwrap();
    let err = f
        .add_variable("p", initializer("i", vec![0.0], Shape::scalar()))
        .unwrap_err();
    assert_eq!(
        err,
        IrError::DuplicateName {
            function: "twice".into(),
            name: "p".into(),
            node: p
        }
    );
}

#[test]
fn a_control_dependency_cycle_is_refused() {
    let b = FunctionBuilder::new("cycle");
    let x = b.variable("x", b.scalar(F32, 0.0));
    b.assign(x, b.scalar(F32, 5.0)).named("a");
    let z = (x + 1.0).named("z");
    let mut f = b.finish(&[z]).unwrap();
    let read = read_of(&f, "x", "z", 0);
    let err = f
        .add_control_dependency(id(&f, "a"), id(&f, &read))
        .unwrap_err();
    let IrError::Cycle { node, .. } = &err else {
        panic!("expected a cycle, got {err:?}");
    };
    assert!(node == "a" || *node == read, "{err}");
    assert!(
        after(&f, "a").is_empty(),
        "the refused dependency is not kept"
    );
    f.validate().unwrap();
    // A node after itself is a cycle too.
    let a = id(&f, "a");
    assert!(matches!(
        f.add_control_dependency(a, a),
        Err(IrError::Cycle { .. })
    ));
}

// ---- JSON --------------------------------------------------------------------------------

/// A stateful function: variables `w: f32[2]` and `count: i64[]` with computed
/// initializers, a main-stream assign `tick` (the sink), a guarded assign `learn` that a
/// result names, control dependencies, tags and metadata.
fn stateful_sample() -> Function {
    let b = FunctionBuilder::new("stateful \"sample\"");
    let x = b.parameter("x", F32, [2]);
    let w = b.variable(
        "w",
        (b.constant(vec![0.25f32, -0.0], [2]) * 2.0)
            .exp()
            .named("w0"),
    );
    let count = b.variable("count", b.constant(vec![-7i64], Shape::scalar()).abs());
    b.assign(count, count + 1.0)
        .named("tick")
        .tagged("onnx:Assign_1");
    let y = (x * w).named("y");
    let learn = b.saved_user_deps(|| b.assign(w, w - y * 0.5).named("learn"));
    let mut f = b.finish(&[y, learn, count]).unwrap();
    f.set_metadata(id(&f, "learn"), "optimizer", "sgd").unwrap();
    f
}

/// The JSON document of `f`.
fn doc_of(f: &Function) -> Json {
    serde_json::from_str(&f.to_json()).unwrap()
}

/// The node object named `name` in the top-level function of `doc`.
fn node_mut<'a>(doc: &'a mut Json, name: &str) -> &'a mut Json {
    doc["function"]["nodes"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no node `{name}`"))
}

/// The message (location included) of loading `doc`, which must fail as `Invalid`.
fn load_invalid(doc: &Json) -> String {
    match Function::from_json(&doc.to_string()).unwrap_err() {
        IrError::Serialization(e) => {
            assert_eq!(e.kind, SerializationErrorKind::Invalid, "{e}");
            e.to_string()
        }
        other => panic!("expected a serialization error, got {other:?}"),
    }
}

#[test]
fn stateful_json_round_trip_is_exact() {
    let f = stateful_sample();
    f.validate().unwrap();
    let count_read = input(&f, f.node(f.results()[2]).unwrap().name(), 0);
    assert_eq!(after(&f, &count_read), set(["tick"]), "{f}");
    assert!(!f.nodes().all(|n| n.other_deps().is_empty()));

    let text = f.to_json();
    let g = Function::from_json(&text).unwrap();
    same_structure(&f, &g).unwrap();
    assert_eq!(g, f);
    assert_eq!(g.to_json(), text);
    assert_eq!(names(&g, g.sinks()), ["tick"]);

    let doc = doc_of(&f);
    assert_eq!(doc["version"], 2);
    assert_eq!(doc["function"]["sinks"], json!(["tick"]));
    let nodes = doc["function"]["nodes"].as_array().unwrap();
    let w = nodes.iter().find(|n| n["name"] == "w").unwrap();
    assert_eq!(w["op"]["type"], "Variable");
    assert_eq!(w["inputs"], json!([]));
    let init = &w["op"]["initializer"];
    assert_eq!(init["name"], "w_initializer");
    assert_eq!(init["parameters"], json!([]));
    assert_eq!(init["results"].as_array().unwrap().len(), 1);
    let init_ops: Vec<&str> = init["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["op"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        init_ops,
        [
            "Constant",
            "Constant",
            "Broadcast",
            "Multiply",
            "Exp",
            "Result"
        ]
    );
}

#[test]
fn stateless_documents_have_no_sinks_field() {
    let b = FunctionBuilder::new("plain");
    let x = b.parameter("x", F32, [2]);
    let doc = doc_of(&b.finish(&[x.relu()]).unwrap());
    assert!(doc["function"].get("sinks").is_none(), "{doc}");
}

#[test]
fn broken_state_in_json_is_invalid_and_named() {
    let f = stateful_sample();
    let count_read = input(&f, f.node(f.results()[2]).unwrap().name(), 0);
    let initializer_with_parameter = {
        let mut g = Function::new("bad_init");
        let q = g.add_parameter("q", F32, [2]).unwrap();
        g.add_result(q.into(), None).unwrap();
        doc_of(&g)["function"].clone()
    };
    type Edit = Box<dyn Fn(&mut Json)>;
    let cases: Vec<(&str, Edit, Vec<String>)> = vec![
        (
            "an assign of a missing variable",
            Box::new(|d| node_mut(d, "tick")["inputs"][0]["node"] = json!("ghost")),
            vec![
                "`tick`".into(),
                "input 0 refers to `ghost`, which is not a node of this function".into(),
            ],
        ),
        (
            "an assign to a non-variable",
            Box::new(|d| node_mut(d, "learn")["inputs"][0]["node"] = json!("x")),
            vec![
                "node `learn`".into(),
                "assigns to `x` (Parameter), which is not a Variable".into(),
            ],
        ),
        (
            "a variable used as a plain value",
            Box::new(|d| node_mut(d, "y")["inputs"][1]["node"] = json!("w")),
            vec!["node `y`".into(), "uses variable `w` as input 1".into()],
        ),
        (
            "two variables of one name",
            Box::new(|d| node_mut(d, "count")["name"] = json!("w")),
            vec!["`w`".into(), "the name is already used by node".into()],
        ),
        (
            "a cycle through control dependencies",
            {
                let read = count_read.clone();
                Box::new(move |d| node_mut(d, "tick")["other_deps"] = json!([read]))
            },
            vec!["cycle through node".into()],
        ),
        (
            "an initializer that takes a parameter",
            Box::new(move |d| {
                node_mut(d, "w")["op"]["initializer"] = initializer_with_parameter.clone()
            }),
            vec![
                "node `w`".into(),
                "the initializer takes parameter `q`".into(),
            ],
        ),
        (
            "a sink that is not a node",
            Box::new(|d| d["function"]["sinks"] = json!(["tock"])),
            vec!["sink 0 refers to `tock`".into()],
        ),
    ];
    for (what, edit, expected) in cases {
        let mut doc = doc_of(&f);
        edit(&mut doc);
        let message = load_invalid(&doc);
        for part in &expected {
            assert!(
                message.contains(part),
                "{what}: `{part}` is missing from: {message}"
            );
        }
    }

    // A ReadVariable of something else: `y` reads `w` through a read; point that read at
    // the parameter `x` (same type, so only the state check can refuse it).
    let y_read = read_of(&f, "w", "y", 1);
    let mut doc = doc_of(&f);
    node_mut(&mut doc, &y_read)["inputs"][0]["node"] = json!("x");
    assert_mentions(
        &load_invalid(&doc),
        &[
            &format!("node `{y_read}`"),
            "reads `x` (Parameter), which is not a Variable",
        ],
    );
    // An unordered read and assign: drop the dependency of the result's read on `tick`.
    let mut doc = doc_of(&f);
    node_mut(&mut doc, &count_read)
        .as_object_mut()
        .unwrap()
        .remove("other_deps");
    assert_mentions(
        &load_invalid(&doc),
        &[
            &format!("node `{count_read}`"),
            "variable `count`",
            "assign `tick` are not ordered",
        ],
    );
}

// ---- Validation of hand-built Functions ----------------------------------------------------

#[test]
fn an_unordered_read_and_assign_are_refused_naming_both() {
    let f = unordered();
    let (node, message) = state_error(f.validate().unwrap_err());
    assert_eq!(node, "r");
    assert_mentions(&message, &["variable `w`", "assign `a`", "not ordered"]);

    // Only live accesses count: without the sink, `a` never runs.
    let mut g = Function::new("dead_assign");
    let w = g
        .add_variable("w", initializer("w_init", vec![0.0], Shape::scalar()))
        .unwrap();
    let r = g.add_node(Op::ReadVariable, &[w.into()]).unwrap();
    let one = g
        .add_constant(TensorData::F32(vec![1.0]), Shape::scalar())
        .unwrap();
    let a = g.add_node(Op::Assign, &[w.into(), one.into()]).unwrap();
    g.add_result(r.into(), None).unwrap();
    g.validate().unwrap();
    g.add_sink(a).unwrap();
    assert!(g.validate().is_err(), "a sink runs, so it must be ordered");
}

#[test]
fn two_unordered_assigns_are_refused_naming_both() {
    let mut f = Function::new("two_writers");
    let w = f
        .add_variable("w", initializer("w_init", vec![0.0], Shape::scalar()))
        .unwrap();
    for (name, value) in [("first", 1.0), ("second", 2.0)] {
        let c = f
            .add_constant(TensorData::F32(vec![value]), Shape::scalar())
            .unwrap();
        let a = f.add_node(Op::Assign, &[w.into(), c.into()]).unwrap();
        f.set_name(a, name).unwrap();
        f.add_sink(a).unwrap();
    }
    let err = f.validate().unwrap_err();
    let text = err.to_string();
    let (node, message) = state_error(err);
    assert!(node == "first" || node == "second", "{text}");
    assert_mentions(
        &text,
        &["`first`", "`second`", "variable `w`", "not ordered"],
    );
    assert!(message.contains("Assign"), "{message}");
    let (first, second) = (id(&f, "first"), id(&f, "second"));
    f.add_control_dependency(second, first).unwrap();
    f.validate().unwrap();
}

#[test]
fn computations_leave_the_builder_as_it_is() {
    let b = FunctionBuilder::new("reads");
    let w = b.variable("w", b.scalar(F32, 0.0));
    let reads = |f: &Function| {
        f.nodes()
            .filter(|n| matches!(n.op(), Op::ReadVariable))
            .count()
    };
    let first = b.computation(&[w]).unwrap();
    let second = b.computation(&[w]).unwrap();
    assert_eq!((reads(&first), reads(&second)), (1, 1));
    assert_eq!(reads(&b.finish(&[]).unwrap()), 0);
}
