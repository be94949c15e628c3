//! Function, builder and provenance behaviour through the public API.

use graphlift_ir::{
    BinaryOp,
    ElementType::{F32, F64, I32},
    Function, FunctionBuilder, IrError, Op, Output, Shape, TensorData, UnaryOp,
};

#[test]
fn builder_inserts_broadcasts_and_infers_types() {
    let b = FunctionBuilder::new("f");
    let x = b.parameter("x", F32, [2, 3]);
    let bias = b.parameter("bias", F32, [3]);
    let y = (x + bias).relu() * 2.0;
    let f = b.finish(&[y]).unwrap();
    f.validate().unwrap();
    let broadcasts: Vec<_> = f
        .nodes()
        .filter(|n| matches!(n.op(), Op::Broadcast(_)))
        .map(|n| n.output_type().shape.clone())
        .collect();
    // bias [3] -> [2,3] and the scalar 2.0 -> [2,3].
    assert_eq!(broadcasts, vec![Shape::new([2, 3]), Shape::new([2, 3])]);
    assert_eq!(f.result_types()[0].shape, Shape::new([2, 3]));
    assert_eq!(f.result_types()[0].element_type, F32);
}

#[test]
fn inference_error_names_op_operands_and_site() {
    let b = FunctionBuilder::new("f");
    let x = b.parameter("x", F32, [3]);
    let y = b.parameter("y", F32, [4]);
    let line = line!() + 1;
    let z = x + y;
    let err = b.finish(&[z.exp()]).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("Add"), "{msg}");
    assert!(msg.contains("f32[3], f32[4]"), "{msg}");
    assert!(msg.contains(&format!("function.rs:{line}")), "{msg}");
}

#[test]
fn type_errors_are_errors_not_panics() {
    let b = FunctionBuilder::new("f");
    let i = b.parameter("i", I32, [2]);
    let e = i.exp();
    assert!(matches!(b.finish(&[e]), Err(IrError::Inference(_))));

    let b = FunctionBuilder::new("g");
    let x = b.parameter("x", F32, [2]);
    let i = b.parameter("i", I32, [2]);
    assert!(b.finish(&[x + i]).is_err());

    let mut f = Function::new("h");
    assert!(matches!(
        f.add_parameter("big", F32, [usize::MAX, 4]),
        Err(IrError::ShapeOverflow { .. })
    ));
    assert!(matches!(
        f.add_constant(TensorData::F32(vec![1.0; 3]), [4]),
        Err(IrError::ConstantLength { .. })
    ));
}

#[test]
fn zero_size_and_scalar_shapes_are_legal() {
    let b = FunctionBuilder::new("f");
    let x = b.parameter("x", F64, [0, 5]);
    let s = b.parameter("s", F64, Shape::scalar());
    let f = b.finish(&[x * s, s.sqrt()]).unwrap();
    assert_eq!(f.result_types()[0].shape, Shape::new([0, 5]));
    assert_eq!(f.result_types()[1].shape, Shape::scalar());
}

#[test]
fn names_are_unique() {
    let mut f = Function::new("f");
    let a = f.add_parameter("a", F32, [1]).unwrap();
    assert!(matches!(
        f.add_parameter("a", F32, [1]),
        Err(IrError::DuplicateName { .. })
    ));
    let n = f.add_node(Op::Unary(UnaryOp::Exp), &[a.into()]).unwrap();
    assert!(f.set_name(n, "a").is_err());
    f.set_name(n, "exp_a").unwrap();
    assert_eq!(f.node_by_name("exp_a").unwrap().id(), n);
}

#[test]
fn replace_node_redirects_users_and_hands_over_provenance() {
    // x*1 replaced by x+0 built from a new constant: old's tags reach the replacement and the
    // new constant, but not the shared input x.
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let one = f
        .add_constant(TensorData::F32(vec![1.0, 1.0]), [2])
        .unwrap();
    let mul = f
        .add_node(Op::Binary(BinaryOp::Multiply), &[x.into(), one.into()])
        .unwrap();
    f.add_tag(mul, "onnx:Mul:m").unwrap();
    let r = f.add_result(mul.into(), Some("y".into())).unwrap();

    let zero = f
        .add_constant(TensorData::F32(vec![0.0, 0.0]), [2])
        .unwrap();
    let add = f
        .add_node(Op::Binary(BinaryOp::Add), &[x.into(), zero.into()])
        .unwrap();
    f.replace_node(mul, add).unwrap();

    assert_eq!(f.result_source(r).unwrap(), Output::from(add));
    assert!(f.node(add).unwrap().tags().contains("onnx:Mul:m"));
    assert!(f.node(zero).unwrap().tags().contains("onnx:Mul:m"));
    assert!(f.node(x).unwrap().tags().is_empty());
    assert!(f.get(mul).is_none(), "the replaced node is removed");
    assert!(f.get(one).is_none(), "dead nodes are removed");
    f.validate().unwrap();
}

#[test]
fn replace_input_moves_one_use_and_keeps_the_others() {
    // exp(x) and neg(x): only neg's input moves to y; x keeps exp as its one user.
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let y = f.add_parameter("y", F32, [2]).unwrap();
    let z = f.add_parameter("z", F32, [3]).unwrap();
    let e = f.add_node(Op::Unary(UnaryOp::Exp), &[x.into()]).unwrap();
    let n = f
        .add_node(Op::Unary(UnaryOp::Negative), &[x.into()])
        .unwrap();
    f.add_result(e.into(), None).unwrap();
    f.add_result(n.into(), None).unwrap();

    f.replace_input(n, 0, y.into()).unwrap();
    assert_eq!(f.node(n).unwrap().inputs(), &[Output::from(y)]);
    assert_eq!(f.node(x).unwrap().users(0), &[(e, 0)]);
    assert_eq!(f.node(y).unwrap().users(0), &[(n, 0)]);
    f.validate().unwrap();

    let err = f.replace_input(n, 0, z.into()).unwrap_err();
    assert!(matches!(err, IrError::ReplaceMismatch { .. }), "{err}");
    let err = f.replace_input(n, 1, x.into()).unwrap_err();
    assert!(err.to_string().contains("has no input 1"), "{err}");
    assert_eq!(
        f.node(n).unwrap().inputs(),
        &[Output::from(y)],
        "errors change nothing"
    );
    f.validate().unwrap();
}

#[test]
fn validation_and_order_are_remembered_only_until_the_graph_changes() {
    // exp(x) and neg(exp): validated and ordered, then changed in ways that must show.
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let e = f.add_node(Op::Unary(UnaryOp::Exp), &[x.into()]).unwrap();
    let n = f
        .add_node(Op::Unary(UnaryOp::Negative), &[e.into()])
        .unwrap();
    let r = f.add_result(n.into(), None).unwrap();
    f.validate().unwrap();
    assert_eq!(f.topological_order().unwrap(), vec![x, e, n, r]);

    // A clone keeps the facts; changing it leaves the original's alone.
    let mut g = f.clone();
    let s = g.add_node(Op::Unary(UnaryOp::Sqrt), &[x.into()]).unwrap();
    assert_eq!(g.topological_order().unwrap(), vec![x, e, n, r, s]);
    assert_eq!(f.topological_order().unwrap(), vec![x, e, n, r]);
    g.replace_input(n, 0, s.into()).unwrap();
    assert_eq!(g.topological_order().unwrap(), vec![x, e, s, n, r]);
    assert_eq!(g.remove_dead_nodes(), 1, "exp is dead now");
    assert_eq!(g.topological_order().unwrap(), vec![x, s, n, r]);
    g.validate().unwrap();

    // exp reading neg makes a cycle: both questions must now fail.
    f.replace_input(e, 0, n.into()).unwrap();
    assert!(matches!(f.validate(), Err(IrError::Cycle { .. })));
    assert!(matches!(f.topological_order(), Err(IrError::Cycle { .. })));
}

#[test]
fn replace_node_rejects_type_mismatch() {
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let y = f.add_parameter("y", F32, [3]).unwrap();
    let e = f.add_node(Op::Unary(UnaryOp::Exp), &[x.into()]).unwrap();
    f.add_result(e.into(), None).unwrap();
    let err = f.replace_node(e, y).unwrap_err();
    assert!(matches!(err, IrError::ReplaceMismatch { .. }), "{err}");
}

#[test]
fn replace_node_refuses_results_and_nodes_nothing_uses_as_ngraph_does() {
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let e = f.add_node(Op::Unary(UnaryOp::Exp), &[x.into()]).unwrap();
    let l = f.add_node(Op::Unary(UnaryOp::Log), &[x.into()]).unwrap();
    let r = f.add_result(e.into(), None).unwrap();
    let r2 = f.add_result(x.into(), None).unwrap();
    let before = f.to_text();
    // A Result: replace the value it reads instead.
    let err = f.replace_node(r, r2).unwrap_err();
    assert!(matches!(err, IrError::ReplaceRefused { .. }), "{err}");
    assert!(err.to_string().contains("Result"), "{err}");
    // `l` reaches no result and nothing depends on it.
    assert!(!f.is_used(l).unwrap());
    let err = f.replace_node(l, e).unwrap_err();
    assert!(matches!(err, IrError::ReplaceRefused { .. }), "{err}");
    assert!(err.to_string().contains("nothing uses it"), "{err}");
    assert_eq!(f.to_text(), before, "a refused replacement changes nothing");
    // A control dependency on a node is a use.
    f.add_control_dependency(e, l).unwrap();
    assert!(f.is_used(l).unwrap());
}

#[test]
fn control_dependencies_order_nodes_and_reject_cycles() {
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let a = f.add_node(Op::Unary(UnaryOp::Exp), &[x.into()]).unwrap();
    let b = f.add_node(Op::Unary(UnaryOp::Log), &[x.into()]).unwrap();
    f.add_result(a.into(), None).unwrap();
    f.add_result(b.into(), None).unwrap();
    // Without deps, a (lower id) comes first; make a wait for b.
    f.add_control_dependency(a, b).unwrap();
    let order = f.topological_order().unwrap();
    let pos = |id| order.iter().position(|&o| o == id).unwrap();
    assert!(pos(b) < pos(a));
    assert!(matches!(
        f.add_control_dependency(b, a),
        Err(IrError::Cycle { .. })
    ));
    f.validate().unwrap();
}

#[test]
fn creation_site_and_metadata_are_kept() {
    let b = FunctionBuilder::new("f");
    let x = b.parameter("x", F32, [1]);
    let line = line!() + 1;
    let y = x.tanh().named("t").tagged("scope/tanh");
    let f = b.finish(&[y]).unwrap();
    let t = f.node_by_name("t").unwrap();
    assert_eq!(t.creation_site().line, line);
    assert!(t.creation_site().file.ends_with("function.rs"));
    assert_eq!(t.tags().iter().collect::<Vec<_>>(), vec!["scope/tanh"]);
}

#[test]
fn replace_node_moves_control_dependencies_on_the_old_node() {
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let old = f.add_node(Op::Unary(UnaryOp::Exp), &[x.into()]).unwrap();
    let waiter = f.add_node(Op::Unary(UnaryOp::Log), &[x.into()]).unwrap();
    f.add_control_dependency(waiter, old).unwrap();
    f.add_result(old.into(), None).unwrap();
    f.add_result(waiter.into(), None).unwrap();
    let new = f.add_node(Op::Unary(UnaryOp::Exp), &[x.into()]).unwrap();
    f.replace_node(old, new).unwrap();
    assert_eq!(f.node(waiter).unwrap().other_deps(), &[new]);
    assert!(
        f.get(old).is_none(),
        "no dependency keeps the old node alive"
    );
    f.validate().unwrap();
}

#[test]
fn replace_node_by_its_own_input_hands_the_tags_to_it() {
    // x*1 -> x: the replacement is the replaced node's input, and still takes its tags
    // (nGraph adds the removed subgraph's tags to the replacement unconditionally).
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let y = f.add_node(Op::Unary(UnaryOp::Abs), &[x.into()]).unwrap();
    let one = f
        .add_constant(TensorData::F32(vec![1.0, 1.0]), [2])
        .unwrap();
    let mul = f
        .add_node(Op::Binary(BinaryOp::Multiply), &[y.into(), one.into()])
        .unwrap();
    f.add_tag(mul, "onnx:Mul:m").unwrap();
    let r = f.add_result(mul.into(), None).unwrap();
    f.replace_node(mul, y).unwrap();
    assert_eq!(f.result_source(r).unwrap(), Output::from(y));
    assert!(f.node(y).unwrap().tags().contains("onnx:Mul:m"));
    assert!(
        f.node(x).unwrap().tags().is_empty(),
        "inputs of y untouched"
    );
    f.validate().unwrap();
}

#[test]
fn replace_node_unpruned_keeps_the_old_node_until_pruning() {
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let a = f.add_node(Op::Unary(UnaryOp::Exp), &[x.into()]).unwrap();
    let b = f.add_node(Op::Unary(UnaryOp::Exp), &[x.into()]).unwrap();
    f.add_result(b.into(), None).unwrap();
    f.replace_node_unpruned(b, a).unwrap();
    assert!(!f.node(b).unwrap().has_users());
    f.validate().unwrap();
    assert_eq!(f.remove_dead_nodes(), 1);
    assert!(f.get(b).is_none());
}

#[test]
fn add_constant_at_keeps_the_given_site_and_control_dependencies_can_be_removed() {
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [1]).unwrap();
    let site = graphlift_ir::CreationSite {
        file: "model.onnx".into(),
        line: 7,
        column: 1,
    };
    let c = f
        .add_constant_at(TensorData::F32(vec![2.0]), [1], site.clone())
        .unwrap();
    assert_eq!(f.node(c).unwrap().creation_site(), &site);
    assert!(f
        .add_constant_at(TensorData::F32(vec![2.0]), [2], site)
        .is_err());
    f.add_control_dependency(c, x).unwrap();
    assert!(f.remove_control_dependency(c, x).unwrap());
    assert!(!f.remove_control_dependency(c, x).unwrap());
    assert!(f.node(c).unwrap().other_deps().is_empty());
}

#[test]
fn replace_node_stops_tagging_at_common_arguments() {
    // -(-x) -> x with x = abs(exp(p)): x is not an input of the outer Negative, but it and
    // everything behind it are common arguments, so only x takes the tags.
    let mut f = Function::new("f");
    let p = f.add_parameter("p", F32, [2]).unwrap();
    let e = f.add_node(Op::Unary(UnaryOp::Exp), &[p.into()]).unwrap();
    let x = f.add_node(Op::Unary(UnaryOp::Abs), &[e.into()]).unwrap();
    let n1 = f
        .add_node(Op::Unary(UnaryOp::Negative), &[x.into()])
        .unwrap();
    let n2 = f
        .add_node(Op::Unary(UnaryOp::Negative), &[n1.into()])
        .unwrap();
    f.add_tag(n2, "outer").unwrap();
    f.add_result(n2.into(), None).unwrap();
    f.replace_node(n2, x).unwrap();
    assert!(f.node(x).unwrap().tags().contains("outer"));
    assert!(f.node(e).unwrap().tags().is_empty());
    assert!(f.node(p).unwrap().tags().is_empty());
    assert!(f.get(n1).is_none());
}
