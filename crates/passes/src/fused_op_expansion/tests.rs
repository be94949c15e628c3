//! Fused-op expansion: the inverse of subgraph extraction, with nGraph's provenance rule
//! for expanded fused ops.

use std::sync::Arc;

use graphlift_ir::{ElementType::F32, Function, FunctionBuilder, FusedKernel, Op, Output};

use super::*;
use crate::testing::{assert_same_values, by_name, count_op, id, run_checked, tags};
use crate::{extract_subgraphs, ExtractionConfig};

const NAME: &str = FusedOpExpansion::NAME;

/// nGraph's halide_subgraph graph, tagged: relu((A + B) * C) + D.
fn halide_subgraph() -> Function {
    let b = FunctionBuilder::new("halide_subgraph");
    let [a, bb, c, d] = ["A", "B", "C", "D"].map(|n| b.parameter(n, F32, [8]));
    let add = (a + bb).named("add").tagged("tf/add");
    let mul = (add * c).named("mul").tagged("tf/mul");
    let relu = mul.relu().named("relu").tagged("tf/relu");
    let r = (relu + d).named("add_d");
    b.finish(&[r]).unwrap()
}

#[test]
fn expansion_undoes_extraction_and_hands_the_kernel_tags_to_every_node() {
    let original = halide_subgraph();
    let mut f = original.clone();
    extract_subgraphs(&mut f, &ExtractionConfig::default()).unwrap();
    assert_eq!(count_op(&f, "FusedKernel"), 1);
    assert!(run_checked(&FusedOpExpansion, &mut f));
    assert_eq!(count_op(&f, "FusedKernel"), 0);
    assert_same_values(&original, &f);
    for (name, op) in [
        ("add", "Add"),
        ("mul", "Multiply"),
        ("relu", "Relu"),
        ("add_d", "Add"),
    ] {
        let n = by_name(&f, name);
        assert_eq!(n.op().type_name(), op);
        // Its own tags first (kept in the body), then the kernel's union.
        let own = tags(by_name(&original, name));
        let t = tags(n);
        assert_eq!(t[..own.len()], own[..]);
        for tag in ["tf/add", "tf/mul", "tf/relu"] {
            assert!(n.tags().contains(tag), "{name} lacks {tag}");
        }
        assert_eq!(n.pass_history(), [NAME]);
        assert_eq!(
            n.creation_site(),
            by_name(&original, name).creation_site(),
            "sites survive the round trip"
        );
    }
    // Extracting again gives the same kernel.
    let mut again = f.clone();
    let report = extract_subgraphs(&mut again, &ExtractionConfig::default()).unwrap();
    assert_eq!(report.kernels.len(), 1);
    assert_eq!(
        report.kernels[0].fused_nodes,
        ["add", "mul", "relu", "add_d"]
    );
}

#[test]
fn multi_output_kernels_with_copied_constants_expand() {
    let b = FunctionBuilder::new("multi");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [2, 4]));
    let t = ((x + y) * 2.0).named("t").tagged("t");
    let u = t.relu().named("u").tagged("u");
    let v = t.exp().named("v");
    let original = b.finish(&[u, t, v]).unwrap();
    let mut f = original.clone();
    let config = ExtractionConfig::default().exclude("Exp");
    let report = extract_subgraphs(&mut f, &config).unwrap();
    assert_eq!(report.kernels[0].outputs, 2);
    assert!(run_checked(&FusedOpExpansion, &mut f));
    assert_same_values(&original, &f);
    assert_eq!(
        count_op(&f, "Constant"),
        1,
        "the copied scalar comes back once"
    );
    assert_eq!(
        by_name(&f, "v").inputs(),
        [Output::from(by_name(&f, "t").id())]
    );
}

#[test]
fn control_dependencies_of_and_on_the_kernel_are_kept() {
    // pre -> kernel {a, b} -> post, through control dependencies.
    let b = FunctionBuilder::new("ctrl");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [4]));
    let pre = x.tanh().named("pre");
    let a = (x + y).named("a");
    let bb = a.relu().named("b");
    let post = y.tanh().named("post");
    let mut f = b.finish(&[bb, post, pre]).unwrap();
    f.add_control_dependency(id(a), id(pre)).unwrap();
    f.add_control_dependency(id(post), id(bb)).unwrap();
    let config = ExtractionConfig::default().exclude("Tanh");
    extract_subgraphs(&mut f, &config).unwrap();
    let k = f
        .nodes()
        .find(|n| matches!(n.op(), Op::FusedKernel(_)))
        .unwrap()
        .id();
    assert_eq!(f.node(k).unwrap().other_deps(), [id(pre)]);
    assert!(run_checked(&FusedOpExpansion, &mut f));
    let a = by_name(&f, "a");
    let b = by_name(&f, "b");
    assert_eq!(a.other_deps(), [id(pre)], "the entry node waits for pre");
    assert!(b.other_deps().is_empty());
    assert_eq!(
        by_name(&f, "post").other_deps(),
        [b.id()],
        "post waits for the sink"
    );
}

#[test]
fn kernels_inside_bodies_are_expanded_too() {
    // The body of the outer kernel is a function that holds a kernel itself.
    let inner = {
        let mut g = halide_subgraph();
        extract_subgraphs(&mut g, &ExtractionConfig::default()).unwrap();
        g
    };
    let mut f = Function::new("outer");
    let params: Vec<Output> = ["A", "B", "C", "D"]
        .iter()
        .map(|n| f.add_parameter(*n, F32, [8]).unwrap().into())
        .collect();
    let k = f
        .add_node(
            Op::FusedKernel(Arc::new(FusedKernel { body: inner })),
            &params,
        )
        .unwrap();
    f.add_tag(k, "outer").unwrap();
    f.add_result(k.into(), None).unwrap();
    let original = halide_subgraph();
    assert!(run_checked(&FusedOpExpansion, &mut f));
    assert_eq!(count_op(&f, "FusedKernel"), 0);
    assert_same_values(&original, &f);
    let relu = by_name(&f, "relu");
    assert!(relu.tags().contains("outer") && relu.tags().contains("tf/add"));
    assert_eq!(relu.pass_history(), [NAME], "recorded once per run");
}

#[test]
fn nodes_of_an_unused_kernel_output_are_dead_and_removed() {
    let body = {
        let b = FunctionBuilder::new("body");
        let p = b.parameter("p", F32, [2]);
        b.finish(&[p.exp(), p.abs()]).unwrap()
    };
    let mut f = Function::new("f");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let k = f
        .add_node(Op::FusedKernel(Arc::new(FusedKernel { body })), &[x.into()])
        .unwrap();
    f.add_result(Output::new(k, 1), None).unwrap();
    assert!(run_checked(&FusedOpExpansion, &mut f));
    assert_eq!(count_op(&f, "Exp"), 0, "output 0 was not used");
    assert_eq!(count_op(&f, "Abs"), 1);
}
