//! nGraph's provenance rules checked through every pass, one at a time and through the
//! pipeline: how tags move, what pass histories record, and the per-function switch.

use graphlift_ir::{ElementType::F32, Function, FunctionBuilder, Node, Op};

use super::*;
use crate::{FusedOpExpansion, Pass};

/// c1 * c2 folds; exp(x) twice merges; `* 1.0` simplifies; a dead branch; the rest fuses.
fn sample() -> Function {
    let b = FunctionBuilder::new("sample");
    let x = b.parameter("x", F32, [4]);
    let c1 = b.constant(vec![1.0f32, 2.0, 3.0, 4.0], [4]);
    let c2 = b.constant(vec![0.5f32; 4], [4]);
    let scale = (c1 * c2).tagged("onnx:Mul:scale");
    let e1 = x.exp().tagged("onnx:Exp:e1");
    let e2 = x.exp().tagged("onnx:Exp:e2");
    let one = (e1 * 1.0).tagged("onnx:Mul:one");
    let y = ((one + e2).tagged("onnx:Add:sum") * scale).tagged("onnx:Mul:out");
    let _dead = x.sigmoid().tagged("onnx:Sigmoid:dead");
    b.finish(&[y]).unwrap()
}

fn tags(n: &Node) -> Vec<&str> {
    n.tags().iter().collect()
}

fn find<'f>(f: &'f Function, op: &str) -> Vec<&'f Node> {
    f.nodes().filter(|n| n.op().type_name() == op).collect()
}

fn run(pass: &dyn Pass, f: &mut Function) {
    assert!(pass.run(f).unwrap(), "{} changes the sample", pass.name());
    f.validate().unwrap();
}

/// A replacement takes the tags of what it replaces, a fused kernel the union of its nodes',
/// an expanded kernel hands its tags to every node it produced; every pass that creates or
/// rewrites a node appends its name to the node's pass history.
#[test]
fn each_pass_follows_the_provenance_rules() {
    // Constant folding: the new Constant takes the Multiply's tags and records the pass.
    let mut f = sample();
    run(&ConstantFolding::new(), &mut f);
    let folded = f
        .nodes()
        .find(|n| n.tags().contains("onnx:Mul:scale"))
        .unwrap();
    assert!(matches!(folded.op(), Op::Constant(_)), "{f}");
    assert_eq!(folded.pass_history(), ["constant_folding"]);

    // CSE: the surviving Exp takes the other's tags.
    run(&CommonSubexpressionElimination, &mut f);
    let exps = find(&f, "Exp");
    assert_eq!(exps.len(), 1);
    assert_eq!(tags(exps[0]), ["onnx:Exp:e1", "onnx:Exp:e2"]);
    assert_eq!(exps[0].pass_history(), ["common_subexpression_elimination"]);

    // Algebraic simplification: `e * 1 -> e`; e takes the Multiply's tag.
    run(&AlgebraicSimplification, &mut f);
    let exp = find(&f, "Exp")[0];
    assert!(exp.tags().contains("onnx:Mul:one"), "{f}");
    assert_eq!(
        exp.pass_history().last().map(String::as_str),
        Some("algebraic_simplification")
    );

    // Every changing pass prunes, so DCE has nothing left; on a fresh graph it removes the
    // dead branch and touches no tag.
    let mut g = sample();
    let before: Vec<(String, Vec<String>)> = g
        .nodes()
        .filter(|n| !n.tags().contains("onnx:Sigmoid:dead"))
        .map(|n| (n.name().into(), n.tags().iter().map(Into::into).collect()))
        .collect();
    run(&DeadCodeElimination, &mut g);
    let after: Vec<(String, Vec<String>)> = g
        .nodes()
        .map(|n| (n.name().into(), n.tags().iter().map(Into::into).collect()))
        .collect();
    assert_eq!(before, after);

    // Extraction: the kernel takes the union of its nodes' tags; body nodes keep theirs and
    // their histories.
    run(&SubgraphExtraction::default(), &mut f);
    let k = find(&f, "FusedKernel")[0];
    assert_eq!(k.pass_history(), ["subgraph_extraction"]);
    for t in [
        "onnx:Exp:e1",
        "onnx:Exp:e2",
        "onnx:Mul:one",
        "onnx:Add:sum",
        "onnx:Mul:out",
        "onnx:Mul:scale",
    ] {
        assert!(k.tags().contains(t), "{t} lost: {f}");
    }
    assert!(!k.tags().contains("onnx:Sigmoid:dead"));
    let Op::FusedKernel(fk) = k.op() else {
        unreachable!()
    };
    let body_exp = find(&fk.body, "Exp")[0];
    assert_eq!(
        body_exp.pass_history(),
        [
            "common_subexpression_elimination",
            "algebraic_simplification"
        ]
    );

    // Fused-op expansion: every node it produced has the kernel's tags and records the pass.
    let kernel_tags = k.tags().clone();
    run(&FusedOpExpansion, &mut f);
    for n in f
        .nodes()
        .filter(|n| !matches!(n.op(), Op::Parameter | Op::Result))
    {
        for t in kernel_tags.iter() {
            assert!(n.tags().contains(t), "{} lacks {t}", n.name());
        }
        assert_eq!(
            n.pass_history().last().map(String::as_str),
            Some("fused_op_expansion"),
            "{}",
            n.name()
        );
    }
}

#[test]
fn the_pipeline_keeps_histories_and_reports_extraction() {
    let mut f = sample();
    let report = PassManager::default_pipeline(ExtractionConfig::default())
        .run(&mut f)
        .unwrap();
    let extraction = report.extraction().unwrap();
    assert_eq!(extraction.kernels.len(), 1);
    assert!(extraction.outside.is_empty());
    let k = find(&f, "FusedKernel")[0];
    let Op::FusedKernel(fk) = k.op() else {
        unreachable!()
    };
    let exp = find(&fk.body, "Exp")[0];
    assert_eq!(
        exp.pass_history(),
        [
            "common_subexpression_elimination",
            "algebraic_simplification"
        ]
    );
    assert_eq!(tags(exp), ["onnx:Exp:e1", "onnx:Exp:e2", "onnx:Mul:one"]);
}

#[test]
fn with_provenance_disabled_no_pass_moves_tags() {
    let mut f = sample();
    f.set_provenance_enabled(false);
    PassManager::default_pipeline(ExtractionConfig::default())
        .run(&mut f)
        .unwrap();
    assert!(!f.provenance_enabled(), "the switch survives the passes");
    let k = find(&f, "FusedKernel")[0];
    assert!(k.tags().is_empty(), "{:?}", tags(k));
    assert_eq!(
        k.pass_history(),
        ["subgraph_extraction"],
        "histories still kept"
    );
    let Op::FusedKernel(fk) = k.op() else {
        unreachable!()
    };
    let exp = find(&fk.body, "Exp")[0];
    assert_eq!(tags(exp), ["onnx:Exp:e1"], "its own tag only");
}
