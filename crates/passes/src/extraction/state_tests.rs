//! Subgraph extraction respects state: reads, assigns and variables stay outside every
//! kernel, regions stay convex over the control dependencies that order reads and assigns,
//! and the value a main-stream assign writes fuses like any other. Each test compares the
//! function before and after on the INTERPRETER over several calls.

use graphlift_ir::{ElementType::F32, Function, FunctionBuilder, Op};

use super::tests::{body, kernels, op_counts};
use super::*;
use crate::testing::{assert_same_values, by_name};

/// Runs extraction on a copy of `before` and checks what must hold of any stateful
/// function: it validates, computes and writes the same, no op is lost or computed twice,
/// no kernel body holds state, and no Variable is reported as left outside.
fn extract_stateful(before: &Function) -> (Function, ExtractionReport) {
    let mut f = before.clone();
    let report = extract_subgraphs(&mut f, &ExtractionConfig::default()).unwrap();
    f.validate().unwrap();
    assert_same_values(before, &f);
    assert_eq!(op_counts(&f), op_counts(before), "{f}");
    for k in kernels(&f) {
        let state = body(k).nodes().find(|n| n.op().is_stateful());
        assert!(state.is_none(), "{} holds {state:?}", k.name());
    }
    assert!(report.outside.iter().all(|o| o.op != "Variable"));
    (f, report)
}

/// The index of the kernel of `report` that fused the node named `name`.
fn kernel_of(report: &ExtractionReport, name: &str) -> Option<usize> {
    report
        .kernels
        .iter()
        .position(|k| k.fused_nodes.iter().any(|n| n == name))
}

#[test]
fn regions_stay_convex_over_the_order_of_reads_and_assigns() {
    // y feeds the assign; the read after the assign feeds sum. One kernel holding y and
    // sum would both feed the assign and wait for it.
    let b = FunctionBuilder::new("convex");
    let p = b.parameter("p", F32, [4]);
    let x = b.variable("x", b.constant(vec![0.0f32; 4], [4]));
    let y = (p * 2.0).named("y");
    b.assign(x, y).named("write");
    let z = (x + y).named("sum").relu().named("z");
    let before = b.finish(&[z]).unwrap();
    let (f, report) = extract_stateful(&before);

    assert_eq!(report.kernels.len(), 2, "{f}");
    assert_ne!(kernel_of(&report, "y"), kernel_of(&report, "sum"));
    assert_eq!(kernel_of(&report, "sum"), kernel_of(&report, "z"));
    let write = by_name(&f, "write");
    assert!(matches!(
        f.node(write.inputs()[1].node).unwrap().op(),
        Op::FusedKernel(_)
    ));
    let sum_kernel = f.node(report.kernels[1].node).unwrap();
    let read = sum_kernel
        .inputs()
        .iter()
        .map(|o| f.node(o.node).unwrap())
        .find(|n| matches!(n.op(), Op::ReadVariable))
        .unwrap_or_else(|| panic!("the read is a live-in\n{f}"));
    assert_eq!(read.other_deps(), [write.id()]);
    let mut outside: Vec<(&str, &OutsideReason)> = report
        .outside
        .iter()
        .map(|o| (o.op.as_str(), &o.reason))
        .collect();
    outside.sort_by_key(|&(op, _)| op);
    let not_fusible = |op: &str| OutsideReason::OpNotFusible { op: op.into() };
    assert_eq!(
        outside,
        [
            ("Assign", &not_fusible("Assign")),
            ("ReadVariable", &not_fusible("ReadVariable")),
        ]
    );
}

#[test]
fn the_value_a_main_stream_assign_writes_is_fused() {
    // Nothing but the sink needs `next`: it is live all the same.
    let b = FunctionBuilder::new("sink_value");
    let p = b.parameter("p", F32, [4]);
    let w = b.variable("w", b.constant(vec![1.0f32, -3.0, 0.5, 8.0], [4]));
    let next = ((w * 0.5).named("half") + 1.0).named("next");
    b.assign(w, next).named("write");
    let y = (p.exp() + p).named("y");
    let before = b.finish(&[y]).unwrap();
    let (f, report) = extract_stateful(&before);

    let k = kernel_of(&report, "next").unwrap_or_else(|| panic!("`next` is fused\n{f}"));
    assert_eq!(kernel_of(&report, "half"), Some(k));
    let kernel = f.node(report.kernels[k].node).unwrap();
    let write = by_name(&f, "write");
    assert_eq!(write.inputs()[1].node, kernel.id());
    let live_ins: Vec<&Op> = kernel
        .inputs()
        .iter()
        .map(|o| f.node(o.node).unwrap().op())
        .collect();
    assert!(matches!(live_ins[..], [Op::ReadVariable]), "{f}");
}
