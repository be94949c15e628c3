//! Common subexpression elimination: what merges (and which node survives, with which
//! provenance), what must not.

use graphlift_ir::{
    ElementType::{F32, F64, I32},
    Function, FunctionBuilder, Op, Output, TensorData,
};

use super::*;
use crate::testing::{by_name, count_op, id, result_node, run_checked, tags};

const NAME: &str = CommonSubexpressionElimination::NAME;

#[test]
fn equal_nodes_merge_into_the_lowest_id_which_takes_the_union_of_tags() {
    // exp(x + y) * exp(x + y), built twice: one Add and one Exp remain.
    let b = FunctionBuilder::new("cse");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [4]));
    let a1 = (x + y).named("a1").tagged("tf/add_1");
    let a2 = (x + y).named("a2").tagged("tf/add_2").tagged("tf/add_1");
    let e1 = a1.exp().named("e1").tagged("tf/exp_1");
    let e2 = a2.exp().named("e2").tagged("tf/exp_2");
    let m = (e1 * e2).named("m");
    let mut f = b.finish(&[m]).unwrap();
    assert!(id(a1) < id(a2) && id(e1) < id(e2));

    assert!(run_checked(&CommonSubexpressionElimination, &mut f));
    assert_eq!((count_op(&f, "Add"), count_op(&f, "Exp")), (1, 1));
    let a = by_name(&f, "a1");
    assert_eq!(tags(a), ["tf/add_1", "tf/add_2"]);
    assert_eq!(a.pass_history(), [NAME], "recorded once");
    let e = by_name(&f, "e1");
    assert_eq!(tags(e), ["tf/exp_1", "tf/exp_2"]);
    assert_eq!(e.inputs(), [Output::from(a.id())]);
    let m = by_name(&f, "m");
    assert_eq!(m.inputs(), [Output::from(e.id()); 2]);
    assert!(m.pass_history().is_empty(), "m's inputs changed, m did not");
    assert!(f.node_by_name("a2").is_none() && f.node_by_name("e2").is_none());
}

#[test]
fn constants_merge_only_when_equal_bit_for_bit() {
    let b = FunctionBuilder::new("constants");
    let x = b.parameter("x", F32, [2]);
    let one_a = b.constant(vec![1.0f32, 1.0], [2]).named("one_a");
    let one_b = b.constant(vec![1.0f32, 1.0], [2]).named("one_b");
    let pz = b.constant(vec![0.0f32, 0.0], [2]).named("pz");
    let nz = b.constant(vec![-0.0f32, -0.0], [2]).named("nz");
    let nan1 = b.constant(vec![f32::NAN; 2], [2]).named("nan1");
    let nan2 = b
        .constant(vec![f32::from_bits(0x7fc0_0001); 2], [2])
        .named("nan2");
    let col = b.constant(vec![1.0f32, 1.0], [2, 1]).named("col");
    let outs = [one_a, one_b, pz, nz, nan1, nan2].map(|c| x + c);
    let mut all: Vec<_> = outs.to_vec();
    all.push(col);
    let mut f = b.finish(&all).unwrap();
    assert!(run_checked(&CommonSubexpressionElimination, &mut f));
    assert!(f.node_by_name("one_b").is_none(), "equal ones merge");
    for kept in ["one_a", "pz", "nz", "nan1", "nan2", "col"] {
        assert!(f.node_by_name(kept).is_some(), "{kept} stays\n{f}");
    }
    assert_eq!(count_op(&f, "Add"), 5, "x + one_a and x + one_b merge too");
}

#[test]
fn different_attributes_operand_orders_and_types_do_not_merge() {
    let b = FunctionBuilder::new("distinct");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [2]));
    let s = b.parameter("s", F32, []);
    let outs = [
        x - y,
        y - x,
        x + y,
        y + x, // no commutativity: operand order is part of the key
        x.convert(F64).convert(F32),
        x.convert(I32).convert(F32),
        s.broadcast_to([2]),
        s.broadcast_to([3, 2]).convert(I32).convert(F32).abs(),
    ];
    let mut f = b.finish(&outs).unwrap();
    assert!(!run_checked(&CommonSubexpressionElimination, &mut f));
}

#[test]
fn nodes_with_control_dependencies_do_not_merge() {
    let b = FunctionBuilder::new("ctrl");
    let x = b.parameter("x", F32, [2]);
    let t = x.tanh().named("t");
    let e1 = x.exp().named("e1");
    let e2 = x.exp().named("e2");
    let e3 = x.exp().named("e3");
    let e4 = x.exp().named("e4");
    let mut f = b.finish(&[e1, e2, e3, e4, t]).unwrap();
    // e2 waits for t: it must not merge with e1 (which does not wait). e3 and e4 both wait
    // for t: still left alone (a node ordered after something is never merged).
    for e in [e2, e3, e4] {
        f.add_control_dependency(id(e), id(t)).unwrap();
    }
    assert!(!run_checked(&CommonSubexpressionElimination, &mut f));
    assert_eq!(count_op(&f, "Exp"), 4);
}

#[test]
fn dependents_of_a_merged_node_wait_for_the_kept_one_and_results_never_merge() {
    let b = FunctionBuilder::new("dependents");
    let x = b.parameter("x", F32, [2]);
    let e1 = x.exp().named("e1");
    let e2 = x.exp().named("e2");
    let w = x.log().named("w");
    let mut f = b.finish(&[e1, e2, w, e1]).unwrap();
    f.add_control_dependency(id(w), id(e2)).unwrap();
    assert!(run_checked(&CommonSubexpressionElimination, &mut f));
    assert_eq!(by_name(&f, "w").other_deps(), [id(e1)]);
    assert_eq!(f.results().len(), 4, "Results stay, even two of one value");
    assert_eq!(count_op(&f, "Result"), 4);
    assert_eq!(result_node(&f, 1).id(), id(e1));
}

#[test]
fn merging_inputs_makes_users_equal_up_to_a_fixed_point() {
    // Two equal chains of depth 4 collapse into one, deterministically.
    let build = || {
        let b = FunctionBuilder::new("chains");
        let x = b.parameter("x", I32, [3]);
        let mut p = x;
        let mut q = x;
        for _ in 0..4 {
            p = (p * x).abs();
            q = (q * x).abs();
        }
        b.finish(&[p - q]).unwrap()
    };
    let mut f = build();
    assert!(run_checked(&CommonSubexpressionElimination, &mut f));
    assert_eq!((count_op(&f, "Multiply"), count_op(&f, "Abs")), (4, 4));
    let mut g = build();
    CommonSubexpressionElimination.run(&mut g).unwrap();
    assert_eq!(f, g, "deterministic");
}

#[test]
fn equal_fused_kernels_merge() {
    let mut f = Function::new("kernels");
    let x = f.add_parameter("x", F32, [2]).unwrap();
    let body = {
        let b = FunctionBuilder::new("body");
        let p = b.parameter("p", F32, [2]);
        b.finish(&[p.exp().abs()]).unwrap()
    };
    let k = Op::FusedKernel(std::sync::Arc::new(graphlift_ir::FusedKernel { body }));
    let k1 = f.add_node(k.clone(), &[x.into()]).unwrap();
    let k2 = f.add_node(k, &[x.into()]).unwrap();
    f.add_result(k1.into(), None).unwrap();
    f.add_result(k2.into(), None).unwrap();
    let c = f
        .add_constant(TensorData::F32(vec![1.0, 2.0]), [2])
        .unwrap();
    f.add_result(c.into(), None).unwrap();
    assert!(run_checked(&CommonSubexpressionElimination, &mut f));
    assert_eq!(count_op(&f, "FusedKernel"), 1);
    assert_eq!(result_node(&f, 1).id(), k1);
}
