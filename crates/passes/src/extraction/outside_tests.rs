//! Tests of the nodes left outside every kernel and the reason given for each.

use graphlift_ir::{ElementType::F32, Function, FunctionBuilder};

use super::tests::extract_checked;
use super::*;

/// The reason reported for the node named `name`.
fn reason_of<'r>(report: &'r ExtractionReport, name: &str) -> Option<&'r OutsideReason> {
    report
        .outside
        .iter()
        .find(|o| o.name == name)
        .map(|o| &o.reason)
}

/// a = x + y; e = exp(a); c = a * e, with `e` made a barrier by `barrier`.
fn diamond(barrier: impl Fn(&mut Function, &str)) -> Function {
    let b = FunctionBuilder::new("diamond");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [4]));
    let a = (x + y).named("a");
    let e = a.exp().named("e");
    let c = (a * e).named("c");
    let mut f = b.finish(&[c]).expect("builds");
    barrier(&mut f, "e");
    f
}

#[test]
fn excluded_op_and_would_create_cycle() {
    let mut f = diamond(|_, _| {});
    let report = extract_checked(&mut f, &ExtractionConfig::default().exclude("Exp"));
    assert!(report.kernels.is_empty());
    assert_eq!(
        reason_of(&report, "e"),
        Some(&OutsideReason::OpExcluded { op: "Exp".into() })
    );
    assert_eq!(
        reason_of(&report, "a"),
        Some(&OutsideReason::WouldCreateCycle)
    );
    assert_eq!(
        reason_of(&report, "c"),
        Some(&OutsideReason::WouldCreateCycle)
    );
    assert_eq!(
        report.outside.len(),
        3,
        "parameters and results are not listed"
    );
}

#[test]
fn stop_fusion_barrier() {
    let mut f = diamond(|f, name| {
        let id = f.node_by_name(name).expect("node").id();
        f.set_metadata(id, STOP_FUSION_KEY, "true").expect("node");
    });
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(reason_of(&report, "e"), Some(&OutsideReason::StopFusion));
    assert!(reason_of(&report, "e").is_some_and(|r| r.to_string().contains("stop_fusion")));
}

#[test]
fn op_not_fusible_names_the_op() {
    let b = FunctionBuilder::new("twice");
    let x = b.parameter("x", F32, [4]);
    let mut f = b.finish(&[(x.abs() + x).relu()]).expect("builds");
    let first = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(first.kernels.len(), 1);
    assert!(first.outside.is_empty());
    let second = extract_checked(&mut f, &ExtractionConfig::default());
    assert!(second.kernels.is_empty());
    let reason = reason_of(&second, &first.kernels[0].name);
    assert_eq!(
        reason,
        Some(&OutsideReason::OpNotFusible {
            op: "FusedKernel".into()
        })
    );
    assert!(reason.is_some_and(|r| r.to_string().contains("`FusedKernel`")));
}

#[test]
fn size_cap() {
    let b = FunctionBuilder::new("chain");
    let x = b.parameter("x", F32, [4]);
    let r1 = x.relu().named("r1");
    let r3 = r1.abs().named("r2").relu().named("r3");
    let mut f = b.finish(&[r3]).expect("builds");
    let report = extract_checked(&mut f, &ExtractionConfig::default().with_max_ops(2));
    assert_eq!(report.kernels.len(), 1);
    assert_eq!(
        reason_of(&report, "r1"),
        Some(&OutsideReason::SizeCap { max_ops: 2 })
    );
}

#[test]
fn alone() {
    let b = FunctionBuilder::new("single");
    let x = b.parameter("x", F32, [4]);
    let mut f = b.finish(&[x.relu().named("r")]).expect("builds");
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(reason_of(&report, "r"), Some(&OutsideReason::Alone));
}

#[test]
fn different_iteration_space() {
    let b = FunctionBuilder::new("shapes");
    let x = b.parameter("x", F32, [4]);
    let y = b.parameter("y", F32, [2, 4]);
    let r = x.relu().named("small");
    let mut f = b.finish(&[(r + y).named("big")]).expect("builds");
    let report = extract_checked(&mut f, &ExtractionConfig::default());
    assert_eq!(report.kernels.len(), 1, "Broadcast and Add");
    assert_eq!(
        reason_of(&report, "small"),
        Some(&OutsideReason::DifferentIterationSpace)
    );
    assert_eq!(report.outside.len(), 1);
}

#[test]
fn element_types_outside_the_configured_set_stay_outside() {
    // h: f16 -> a = |h| (f16) -> c = convert(a, f32) -> d = c + c (f32) -> e = exp(d).
    let b = FunctionBuilder::new("half");
    let h = b.parameter("h", graphlift_ir::ElementType::F16, [4]);
    let a = h.abs().named("a");
    let c = a.convert(F32).named("c");
    let d = (c + c).named("d");
    let e = d.exp().named("e");
    let mut f = b.finish(&[e]).expect("builds");
    let config = ExtractionConfig::default().with_element_types([F32]);
    let report = extract_checked(&mut f, &config);
    let f16 = OutsideReason::ElementType {
        element_type: graphlift_ir::ElementType::F16,
    };
    assert_eq!(reason_of(&report, "a"), Some(&f16));
    assert_eq!(reason_of(&report, "c"), Some(&f16), "Convert reads f16");
    assert!(f16.to_string().contains("f16"), "{f16}");
    assert_eq!(report.kernels.len(), 1, "d and e fuse in f32");
}
