//! Algebraic simplification: each rule, its provenance, and the rewrites that would be
//! wrong (signed zeros, NaN, infinities) and must not happen.

use graphlift_ir::{
    ElementType::{self, *},
    Function, FunctionBuilder, Op, Output, TensorData, Value,
};

use super::*;
use crate::testing::{
    assert_same_values, by_name, count_op, edge_inputs, eval, id, result_node, run_checked,
    same_bits, tags,
};

const NAME: &str = AlgebraicSimplification::NAME;

/// A function computing `op(x, c)` (or `op(c, x)` with `c_first`) for a Constant `c` of
/// x's shape holding `value` everywhere, with x = abs(p) tagged `x`, the op tagged `op`.
fn with_constant(
    t: ElementType,
    value: f64,
    c_first: bool,
    op: impl for<'b> Fn(Value<'b>, Value<'b>) -> Value<'b>,
) -> Function {
    let b = FunctionBuilder::new("rule");
    let p = b.parameter("p", t, [12]);
    let x = (-p).named("x").tagged("x");
    let c = b.scalar(t, value).broadcast_to([12]).named("c");
    let y = if c_first { op(c, x) } else { op(x, c) };
    let y = y.named("y").tagged("op");
    b.finish(&[y]).unwrap()
}

/// Runs the pass; asserts whether the op was removed, and if so that `x` took its place,
/// its tags and the pass's name.
fn check(mut f: Function, removed: bool) {
    let changed = run_checked(&AlgebraicSimplification, &mut f);
    assert_eq!(changed, removed, "\n{f}");
    if removed {
        let x = result_node(&f, 0);
        assert_eq!(x.name(), "x");
        assert_eq!(tags(x), ["x", "op"]);
        assert_eq!(x.pass_history(), [NAME]);
        assert!(f.node_by_name("y").is_none() && f.node_by_name("c").is_none());
    } else {
        assert_eq!(result_node(&f, 0).name(), "y");
    }
}

#[test]
fn multiplying_or_dividing_by_one_is_removed_for_every_numeric_type() {
    for t in [F32, F64, I32, I64] {
        check(with_constant(t, 1.0, false, |x, c| x * c), true);
        check(with_constant(t, 1.0, true, |c, x| c * x), true);
        check(with_constant(t, 1.0, false, |x, c| x / c), true);
        check(with_constant(t, 1.0, true, |c, x| c / x), false);
        check(with_constant(t, 2.0, false, |x, c| x * c), false);
        check(with_constant(t, -1.0, false, |x, c| x / c), false);
    }
}

#[test]
fn adding_zero_is_removed_for_integers_and_for_negative_zero_only_on_floats() {
    for t in [I32, I64] {
        check(with_constant(t, 0.0, false, |x, c| x + c), true);
        check(with_constant(t, 0.0, true, |c, x| c + x), true);
        check(with_constant(t, 0.0, false, |x, c| x - c), true);
        check(with_constant(t, 0.0, true, |c, x| c - x), false);
    }
    for t in [F32, F64] {
        // -0 + +0 = +0: `x + 0.0 -> x` would turn a -0 into +0 (the inputs hold -0).
        check(with_constant(t, 0.0, false, |x, c| x + c), false);
        check(with_constant(t, 0.0, true, |c, x| c + x), false);
        check(with_constant(t, -0.0, false, |x, c| x + c), true);
        check(with_constant(t, -0.0, true, |c, x| c + x), true);
        // x - (+0) = x + (-0) = x; x - (-0) = x + (+0) is not.
        check(with_constant(t, 0.0, false, |x, c| x - c), true);
        check(with_constant(t, -0.0, false, |x, c| x - c), false);
    }
}

#[test]
fn the_signed_zero_oracle_catches_a_wrong_rule() {
    // Apply the wrong rewrite `x + 0.0 -> x` by hand: the comparison on edge-case inputs
    // (which hold -0) must see the difference, so the tests above would fail on it.
    let f = with_constant(F32, 0.0, false, |x, c| x + c);
    let mut wrong = f.clone();
    let y = by_name(&wrong, "y").id();
    let x = by_name(&wrong, "x").id();
    wrong.replace_node(y, x).unwrap();
    let differs = (0..4).any(|seed| {
        let inputs = edge_inputs(&f, seed);
        !same_bits(&eval(&f, &inputs), &eval(&wrong, &inputs))
    });
    assert!(differs, "-0 + 0 = +0 must be visible");

    // Same for `x - x -> 0` on floats: inf - inf and NaN - NaN are NaN.
    let b = FunctionBuilder::new("sub_self");
    let x = b.parameter("x", F32, [12]);
    let f = b.finish(&[x - x]).unwrap();
    let mut wrong = f.clone();
    let sub = result_node(&wrong, 0).id();
    let z = wrong
        .add_constant(TensorData::F32(vec![0.0; 12]), [12])
        .unwrap();
    wrong.replace_node(sub, z).unwrap();
    let inputs = edge_inputs(&f, 0);
    assert!(!same_bits(&eval(&f, &inputs), &eval(&wrong, &inputs)));
}

#[test]
fn x_minus_x_is_zero_for_integers_only() {
    for t in [I32, I64] {
        let b = FunctionBuilder::new("sub_self");
        let p = b.parameter("p", t, [2, 3]);
        let x = p.abs().named("x");
        let y = (x - x).named("y").tagged("op");
        let mut f = b.finish(&[y]).unwrap();
        assert!(run_checked(&AlgebraicSimplification, &mut f));
        // The zero is a scalar Constant broadcast to x's shape; both new nodes take the
        // Subtract's tags (the replacement subgraph) and the pass's name.
        let z = result_node(&f, 0);
        assert!(
            matches!(z.op(), Op::Broadcast(s) if s.dims() == [2, 3]),
            "{f}"
        );
        let c = f.node(z.inputs()[0].node).unwrap();
        assert!(matches!(c.op(), Op::Constant(d) if **d == TensorData::zeros(t, 1)));
        for n in [z, c] {
            assert_eq!(tags(n), ["op"]);
            assert_eq!(n.pass_history(), [NAME]);
        }
        assert!(f.node_by_name("x").is_none(), "x is dead now");
        assert!(
            tags(by_name(&f, "p")).is_empty(),
            "p is not part of the replacement"
        );
    }
    for t in [F32, F64] {
        let b = FunctionBuilder::new("sub_self");
        let x = b.parameter("x", t, [4]);
        let mut f = b.finish(&[x - x]).unwrap();
        assert!(!run_checked(&AlgebraicSimplification, &mut f));
    }
    // A 0-d x - x becomes the scalar Constant itself.
    let b = FunctionBuilder::new("scalar");
    let x = b.parameter("x", I32, []);
    let mut f = b.finish(&[x - x]).unwrap();
    assert!(run_checked(&AlgebraicSimplification, &mut f));
    assert!(matches!(result_node(&f, 0).op(), Op::Constant(_)));
}

#[test]
fn double_negation_and_double_not_cancel() {
    for t in [F32, F64, I32, I64] {
        let b = FunctionBuilder::new("neg");
        let p = b.parameter("p", t, [12]);
        let x = p.abs().named("x");
        let once = (-x).named("once");
        let twice = (-once).named("twice").tagged("outer");
        let thrice = -(-(-x)); // a single negation remains
        let mut f = b.finish(&[twice, thrice, once]).unwrap();
        assert!(run_checked(&AlgebraicSimplification, &mut f));
        let x = result_node(&f, 0);
        assert_eq!(x.name(), "x");
        assert_eq!(tags(x), ["outer"]);
        assert_eq!(x.pass_history(), [NAME]);
        let r1 = result_node(&f, 1);
        assert!(matches!(r1.op(), Op::Unary(UnaryOp::Negative)));
        assert_eq!(r1.inputs(), [Output::from(x.id())]);
        assert_eq!(
            count_op(&f, "Negative"),
            2,
            "`once` is still a result; thrice -> -x"
        );
    }
    let b = FunctionBuilder::new("not");
    let p = b.parameter("p", Bool, [12]);
    let q = b.parameter("q", Bool, [12]);
    let x = p.xor(q).named("x");
    let y = (!!x).named("y").tagged("op");
    let mut f = b.finish(&[y]).unwrap();
    assert!(run_checked(&AlgebraicSimplification, &mut f));
    assert_eq!(result_node(&f, 0).name(), "x");
    assert_eq!(count_op(&f, "Not"), 0);
}

#[test]
fn chains_simplify_in_one_run_and_a_parameter_can_take_the_place() {
    // ((p * 1) + (-0)) / 1 -> p: the parameter takes the tags (nGraph tags the replacement
    // whatever it is), the rewritten node's first, then those of the bypassed `1`.
    let b = FunctionBuilder::new("chain");
    let p = b.parameter("p", F32, [12]);
    let one = b.scalar(F32, 1.0).tagged("one");
    let y = ((p * one).tagged("mul") + (-0.0)).tagged("add");
    let y = (y / 1.0).tagged("div");
    let mut f = b.finish(&[y]).unwrap();
    assert!(run_checked(&AlgebraicSimplification, &mut f));
    let p = result_node(&f, 0);
    assert!(matches!(p.op(), Op::Parameter));
    assert_eq!(
        tags(p),
        ["mul", "one", "add", "div"],
        "in the order of the rewrites"
    );
    assert_eq!(p.pass_history(), [NAME], "recorded once per run");
    assert_eq!(f.node_count(), 2);
}

#[test]
fn constants_that_are_not_all_ones_or_zeros_are_kept() {
    let b = FunctionBuilder::new("almost");
    let x = b.parameter("x", F32, [4]);
    let c = b.constant(vec![1.0f32, 1.0, 1.0, 1.0000001], [4]);
    let z = b.constant(vec![-0.0f32, -0.0, 0.0, -0.0], [4]);
    let mut f = b.finish(&[x * c, x + z]).unwrap();
    assert!(!run_checked(&AlgebraicSimplification, &mut f));

    // A Constant of ones in full (not broadcast) is recognised too.
    let b = FunctionBuilder::new("full");
    let x = b.parameter("x", F32, [4]);
    let c = b.constant(vec![1.0f32; 4], [4]);
    let mut f = b.finish(&[x * c]).unwrap();
    assert!(run_checked(&AlgebraicSimplification, &mut f));
    assert!(matches!(result_node(&f, 0).op(), Op::Parameter));
}

#[test]
fn control_dependencies_block_a_rewrite() {
    // y = x * 1 waits for t; in z = x * one, `one` waits for t; w = -(-x) with the inner
    // negation waiting for t. None is rewritten: each would drop an ordering.
    let b = FunctionBuilder::new("ctrl");
    let x = b.parameter("x", F32, [4]);
    let t = x.tanh().named("t");
    let y = x * 1.0;
    let one = b.constant(vec![1.0f32; 4], [4]);
    let z = x * one;
    let inner = -x;
    let w = -inner;
    let mut f = b.finish(&[y, z, w, t]).unwrap();
    for n in [id(y), id(one), id(inner)] {
        f.add_control_dependency(n, id(t)).unwrap();
    }
    assert!(!run_checked(&AlgebraicSimplification, &mut f));
}

#[test]
fn an_output_of_a_multi_output_kernel_can_take_the_place() {
    // relu and abs of x*y fuse into a 2-output kernel; kernel output 1 * 1 -> output 1.
    let b = FunctionBuilder::new("multi");
    let [x, y] = ["x", "y"].map(|n| b.parameter(n, F32, [4]));
    let t = x * y;
    let mut f = b.finish(&[t.relu(), t.abs()]).unwrap();
    crate::extract_subgraphs(&mut f, &crate::ExtractionConfig::default()).unwrap();
    let k = result_node(&f, 1).id();
    let one = f.add_constant(TensorData::F32(vec![1.0; 4]), [4]).unwrap();
    let m = f
        .add_node(
            Op::Binary(graphlift_ir::BinaryOp::Multiply),
            &[Output::new(k, 1), one.into()],
        )
        .unwrap();
    f.add_tag(m, "mul").unwrap();
    f.add_result(m.into(), None).unwrap();
    let before = f.clone();
    assert!(run_checked(&AlgebraicSimplification, &mut f));
    assert_same_values(&before, &f);
    assert_eq!(f.result_source(f.results()[2]).unwrap(), Output::new(k, 1));
    let kernel = f.node(k).unwrap();
    assert!(kernel.tags().contains("mul"));
    assert_eq!(kernel.pass_history(), ["subgraph_extraction", NAME]);
}

#[test]
fn max_or_min_of_a_value_with_itself_and_abs_of_abs_are_the_value() {
    for t in [F32, F64, I32, I64] {
        let b = FunctionBuilder::new("same");
        let p = b.parameter("p", t, [12]);
        let q = b.parameter("q", t, [12]);
        let x = (-p).named("x").tagged("x");
        let hi = x.max(x).named("hi").tagged("op");
        let lo = x.min(x).named("lo");
        let both = x.max(q).named("both");
        let a = p.abs().named("a");
        let aa = a.abs().named("aa").tagged("outer");
        let mut f = b.finish(&[hi, lo, both, aa]).unwrap();
        // (`run_checked` compares the values on NaN, signed zeros and infinities.)
        assert!(run_checked(&AlgebraicSimplification, &mut f));
        let x = result_node(&f, 0);
        assert_eq!((x.name(), tags(x)), ("x", vec!["x", "op"]));
        assert_eq!(x.pass_history(), [NAME]);
        assert_eq!(result_node(&f, 1).name(), "x");
        assert_eq!(
            result_node(&f, 2).name(),
            "both",
            "Max of two values is kept"
        );
        let a = result_node(&f, 3);
        assert_eq!((a.name(), tags(a)), ("a", vec!["outer"]));
        assert_eq!(count_op(&f, "Abs"), 1);
    }
}
