//! Dead code elimination: unreachable nodes go; parameters, results and nodes reached
//! through control dependencies stay.

use graphlift_ir::{ElementType::F32, FunctionBuilder};

use super::*;
use crate::testing::{by_name, id, run_checked};

#[test]
fn unreachable_nodes_are_removed_and_parameters_kept() {
    let b = FunctionBuilder::new("dce");
    let [x, y, unused] = ["x", "y", "unused"].map(|n| b.parameter(n, F32, [2]));
    let live = (x + y).named("live");
    let dead = (x * y).exp().named("dead");
    let _also_dead = (unused.abs() + dead).named("also_dead");
    let mut f = b.finish(&[live]).unwrap();
    assert!(f.node_by_name("also_dead").is_some());
    let n = f.node_count();
    assert!(run_checked(&DeadCodeElimination, &mut f));
    assert_eq!(
        f.node_count(),
        n - 4,
        "multiply, exp, abs, add and nothing else"
    );
    for gone in ["dead", "also_dead"] {
        assert!(f.node_by_name(gone).is_none());
    }
    assert!(f.node_by_name("unused").is_some(), "parameters stay");
    assert_eq!(f.parameters().len(), 3);
}

#[test]
fn nodes_reached_through_control_dependencies_stay() {
    let b = FunctionBuilder::new("ctrl");
    let x = b.parameter("x", F32, [2]);
    let side = x.exp().named("side");
    let feeds_side = x.abs().named("feeds_side");
    let side2 = (side + feeds_side).named("side2");
    let out = x.relu().named("out");
    let mut f = b.finish(&[out]).unwrap();
    f.add_control_dependency(id(out), id(side2)).unwrap();
    assert!(!run_checked(&DeadCodeElimination, &mut f));
    for kept in ["side", "feeds_side", "side2"] {
        assert!(f.node_by_name(kept).is_some(), "{kept}");
    }
    assert_eq!(by_name(&f, "out").other_deps(), [id(side2)]);
}
