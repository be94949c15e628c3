//! nGraph's provenance rules on the IR: groups, tags above a base, replacement, the
//! per-function switch.

use graphlift_ir::ElementType::F32;
use graphlift_ir::{BinaryOp, Function, FunctionBuilder, Op, Output, ProvenanceTags, UnaryOp};

fn tags(f: &Function, name_op: &str) -> Vec<String> {
    f.nodes()
        .find(|n| n.op().type_name() == name_op)
        .map(|n| n.tags().iter().map(str::to_string).collect())
        .unwrap_or_default()
}

#[test]
fn builder_group_tags_reach_every_node_of_the_subgraph() {
    let b = FunctionBuilder::new("f");
    let x = b.parameter("x", F32, [4]);
    let y = b.parameter("y", F32, [4]);
    let pre = (x + y).tagged("onnx:Add:a");
    let silu = b.provenance_group(|| pre * pre.sigmoid());
    let silu = silu.tagged("onnx:Silu:s");
    let f = b.finish(&[silu]).unwrap();
    assert_eq!(tags(&f, "Multiply"), ["onnx:Silu:s"]);
    assert_eq!(tags(&f, "Sigmoid"), ["onnx:Silu:s"]);
    // Nodes built before the group, and parameters, are not members.
    assert_eq!(tags(&f, "Add"), ["onnx:Add:a"]);
    assert!(tags(&f, "Parameter").is_empty());
}

#[test]
fn group_members_above_and_nested_groups() {
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let e = f.add_node(Op::Unary(UnaryOp::Exp), &[x.into()]).unwrap();
    let n = f
        .add_node(Op::Unary(UnaryOp::Negative), &[e.into()])
        .unwrap();
    let m = f
        .add_node(Op::Binary(BinaryOp::Multiply), &[n.into(), x.into()])
        .unwrap();
    f.add_result(m.into(), None).unwrap();
    // n's group is {e}; m's group is everything above it down to the parameter: {n, e}.
    f.add_provenance_group_members(n, &[e]).unwrap();
    let members = f.add_provenance_group_members_above(m, &[]).unwrap();
    assert_eq!(members, vec![n, e]);
    assert_eq!(f.provenance_group(n), &[e]);
    f.add_tag(m, "outer").unwrap();
    for id in [m, n, e] {
        assert!(f.node(id).unwrap().tags().contains("outer"));
    }
    assert!(f.node(x).unwrap().tags().is_empty());
    // A tag on the inner root reaches its own group only.
    f.add_tag(n, "inner").unwrap();
    assert!(f.node(e).unwrap().tags().contains("inner"));
    assert!(!f.node(m).unwrap().tags().contains("inner"));
}

#[test]
fn tags_above_stop_at_the_base() {
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let a = f.add_node(Op::Unary(UnaryOp::Abs), &[x.into()]).unwrap();
    let e = f.add_node(Op::Unary(UnaryOp::Exp), &[a.into()]).unwrap();
    let n = f
        .add_node(Op::Unary(UnaryOp::Negative), &[e.into()])
        .unwrap();
    f.add_result(n.into(), None).unwrap();
    let t: ProvenanceTags = ["t"].into_iter().collect();
    f.add_provenance_tags_above(n, &[Output::from(a)], &t)
        .unwrap();
    assert!(f.node(n).unwrap().tags().contains("t"));
    assert!(f.node(e).unwrap().tags().contains("t"));
    assert!(f.node(a).unwrap().tags().is_empty());
}

#[test]
fn replace_node_moves_no_tags_when_provenance_is_disabled() {
    let mut f = Function::new("f");
    assert!(f.provenance_enabled(), "on by default");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let e = f.add_node(Op::Unary(UnaryOp::Exp), &[x.into()]).unwrap();
    f.add_tag(e, "onnx:Exp:e").unwrap();
    f.add_result(e.into(), None).unwrap();
    let mut g = f.clone();
    let a = f.add_node(Op::Unary(UnaryOp::Abs), &[x.into()]).unwrap();
    f.replace_node(e, a).unwrap();
    assert!(f.node(a).unwrap().tags().contains("onnx:Exp:e"));

    g.set_provenance_enabled(false);
    let a = g.add_node(Op::Unary(UnaryOp::Abs), &[x.into()]).unwrap();
    g.replace_node(e, a).unwrap();
    assert!(g.node(a).unwrap().tags().is_empty());
    let t: ProvenanceTags = ["p"].into_iter().collect();
    g.propagate_tags(a, &t).unwrap();
    assert!(
        g.node(a).unwrap().tags().is_empty(),
        "passes propagate nothing"
    );
    g.add_tag(a, "explicit").unwrap();
    assert!(
        g.node(a).unwrap().tags().contains("explicit"),
        "explicit tags stay"
    );
}
