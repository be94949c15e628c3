//! Constant folding: what folds (and with which provenance), what must not.

use graphlift_ir::{
    select, BinaryOp,
    ElementType::{F32, I32},
    Function, FunctionBuilder, Op, Output, TensorData, UnaryOp,
};

use super::*;
use crate::testing::{by_name, count_op, id, result_node, run_checked, tags};

fn constant_data(f: &Function, node: &graphlift_ir::Node) -> TensorData {
    match f.node(node.id()).expect("live").op() {
        Op::Constant(d) => (**d).clone(),
        op => panic!("`{}` is {op}, not a Constant", node.name()),
    }
}

#[test]
fn a_constant_subexpression_becomes_one_constant_with_the_replaced_nodes_provenance() {
    // y = x + exp(c1 * c2): the product and the exp fold; x + ... stays.
    let b = FunctionBuilder::new("fold");
    let x = b.parameter("x", F32, [3]);
    let c1 = b
        .constant(vec![1.0f32, -2.0, 0.5], [3])
        .named("c1")
        .tagged("onnx:init:c1");
    let c2 = b.constant(vec![3.0f32, 0.25, -0.0], [3]).named("c2");
    let line = line!() + 1;
    let m = (c1 * c2).named("m").tagged("onnx:Mul:m");
    let e = m.exp().named("e").tagged("onnx:Exp:e");
    let y = (x + e).named("y").tagged("onnx:Add:y");
    let mut f = b.finish(&[y]).unwrap();

    assert!(run_checked(&ConstantFolding::new(), &mut f));
    assert_eq!(
        count_op(&f, "Constant"),
        1,
        "c1, c2 and the product are gone\n{f}"
    );
    assert_eq!(count_op(&f, "Multiply") + count_op(&f, "Exp"), 0);
    let add = by_name(&f, "y");
    assert_eq!(tags(add), ["onnx:Add:y"], "the Add is not rewritten");
    assert!(add.pass_history().is_empty());
    let folded = f.node(add.inputs()[1].node).unwrap();
    // nGraph's rule: the Constant that replaced `m` took m's tags and c1's (its removed
    // inputs); the one that replaced `e` took e's and then those of its input.
    assert_eq!(tags(folded), ["onnx:Exp:e", "onnx:Mul:m", "onnx:init:c1"]);
    assert_eq!(folded.pass_history(), ["constant_folding"]);
    assert_eq!(folded.creation_site().line, line + 1, "the site of `e`");
    let want: Vec<f32> = [3.0f64, -0.5, -0.0]
        .iter()
        .map(|p| p.exp() as f32)
        .collect();
    assert_eq!(constant_data(&f, folded), TensorData::F32(want));
}

#[test]
fn folding_keeps_signed_zero_nan_and_integer_edge_cases_of_the_reference() {
    // -(+0) = -0; i32 division by zero is 0; NaN converts to 0; NaN compares unequal.
    let b = FunctionBuilder::new("edges");
    let z = b.constant(vec![0.0f32, f32::NAN], [2]);
    let neg = (-z).named("neg");
    let n = b.constant(vec![7i32, i32::MIN], [2]);
    let d = b.constant(vec![0i32, -1], [2]);
    let div = (n / d).named("div");
    let conv = z.convert(I32).named("conv");
    let ne = z.ne(z).named("ne");
    let sel = select(ne, n, d).named("sel");
    let mut f = b.finish(&[neg, div, conv, ne, sel]).unwrap();
    assert!(run_checked(&ConstantFolding::new(), &mut f));
    let data = |i| constant_data(&f, result_node(&f, i));
    let TensorData::F32(v) = data(0) else {
        panic!("f32")
    };
    assert!(v[0] == 0.0 && v[0].is_sign_negative() && v[1].is_nan());
    assert_eq!(data(1), TensorData::I32(vec![0, i32::MIN]));
    assert_eq!(data(2), TensorData::I32(vec![0, 0]));
    assert_eq!(data(3), TensorData::Bool(vec![false, true]));
    assert_eq!(data(4), TensorData::I32(vec![0, i32::MIN]));
    for i in 0..5 {
        assert_eq!(result_node(&f, i).pass_history(), ["constant_folding"]);
    }
}

#[test]
fn trigonometric_and_hyperbolic_functions_fold_to_the_reference_values() {
    // Each of the eleven on constants folds to the interpreter's f32 values (f64, rounded
    // once), NaN outside a domain included.
    let xs = [-0.0f32, 0.5, -0.9, 1.5, 3.0];
    for op in UnaryOp::TRIG {
        let b = FunctionBuilder::new("trig");
        let c = b.constant(xs.to_vec(), [xs.len()]);
        let y = b.op(Op::Unary(op), &[c]).named("y");
        let mut f = b.finish(&[y]).unwrap();
        assert!(
            run_checked(&ConstantFolding::new(), &mut f),
            "{}",
            op.name()
        );
        let TensorData::F32(v) = constant_data(&f, result_node(&f, 0)) else {
            panic!("f32")
        };
        for (x, got) in xs.iter().zip(v) {
            let want = graphlift_runtime::reference::unary_f32(op, *x);
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{}({x}) folded to {got}, the reference gives {want}",
                op.name()
            );
        }
    }
}

#[test]
fn broadcasts_are_folded_through_never_materialized() {
    // relu(bcast(-2)) * bcast(3) over 2^20 + 1024 elements becomes bcast(relu(-2) * 3): a
    // scalar Constant broadcast, beyond the cap and without materializing anything.
    let b = FunctionBuilder::new("through");
    let c = b.scalar(F32, -2.0).tagged("c");
    let r = c
        .broadcast_to([1025, 1024])
        .relu()
        .named("r")
        .tagged("onnx:Relu:r");
    let m = (r * 3.0).named("m").tagged("onnx:Mul:m");
    let mut f = b.finish(&[m]).unwrap();
    assert!(ConstantFolding::new().run(&mut f).unwrap());
    f.validate().unwrap();
    let out = result_node(&f, 0);
    assert!(
        matches!(out.op(), Op::Broadcast(s) if s.dims() == [1025, 1024]),
        "{f}"
    );
    let scalar = f.node(out.inputs()[0].node).unwrap();
    assert_eq!(constant_data(&f, scalar), TensorData::F32(vec![0.0]));
    assert_eq!(f.node_count(), 3, "Constant, Broadcast, Result");
    for n in [out, scalar] {
        assert_eq!(n.pass_history(), ["constant_folding"]);
        assert_eq!(tags(n), ["onnx:Mul:m", "onnx:Relu:r", "c"], "{}", n.name());
    }

    // The same on a small shape, checked against the reference.
    let b = FunctionBuilder::new("through_small");
    let c = b.scalar(I32, -2.0);
    let d = b.constant(vec![5i32, 7], [2, 1]);
    let r = c.broadcast_to([2, 3]).abs() - d.broadcast_to([2, 3]);
    let mut f = b.finish(&[r]).unwrap();
    assert!(run_checked(&ConstantFolding::new(), &mut f));
    // abs is folded at the scalar; the subtraction mixes a [] and a [2, 1] source, so it is
    // evaluated at full size.
    assert_eq!(
        constant_data(&f, result_node(&f, 0)),
        TensorData::I32(vec![-3, -3, -3, -5, -5, -5])
    );
}

#[test]
fn a_lone_broadcast_of_a_constant_stays() {
    let b = FunctionBuilder::new("lone");
    let x = b.parameter("x", F32, [4, 8]);
    let c = b.scalar(F32, 2.0);
    let mut f = b.finish(&[c.broadcast_to([4, 8]), x * 2.0]).unwrap();
    assert!(!run_checked(&ConstantFolding::new(), &mut f));
    assert_eq!(count_op(&f, "Broadcast"), 2);
}

#[test]
fn a_broadcast_to_the_same_shape_folds_to_a_plain_constant() {
    let mut f = Function::new("same_shape");
    let c = f
        .add_constant(TensorData::F32(vec![1.0, -4.0]), [2])
        .unwrap();
    let bc = f
        .add_node(Op::Broadcast(graphlift_ir::Shape::new([2])), &[c.into()])
        .unwrap();
    let a = f.add_node(Op::Unary(UnaryOp::Abs), &[bc.into()]).unwrap();
    f.add_result(a.into(), None).unwrap();
    assert!(run_checked(&ConstantFolding::new(), &mut f));
    let r = result_node(&f, 0);
    assert_eq!(constant_data(&f, r), TensorData::F32(vec![1.0, 4.0]));
    assert_eq!(count_op(&f, "Broadcast"), 0);
}

#[test]
fn the_cap_stops_evaluation_at_full_size() {
    // c[8] + bcast(3): one input is full size, so the sum is evaluated at 8 elements.
    let build = || {
        let b = FunctionBuilder::new("cap");
        let x = b.parameter("x", F32, [8]);
        let c = b.constant(vec![1.0f32; 8], [8]);
        let y = (x * (c + 3.0)).named("y");
        b.finish(&[y]).unwrap()
    };
    let mut f = build();
    assert!(!run_checked(&ConstantFolding::with_max_elements(7), &mut f));
    assert_eq!(count_op(&f, "Add"), 1);
    let mut f = build();
    assert!(run_checked(&ConstantFolding::with_max_elements(8), &mut f));
    assert_eq!(count_op(&f, "Add") + count_op(&f, "Broadcast"), 0);
    let folded = f.node(by_name(&f, "y").inputs()[1].node).unwrap();
    assert_eq!(constant_data(&f, folded), TensorData::F32(vec![4.0; 8]));
    // A value evaluated at its sources' shape is capped by that shape: a cap of 0 stops it.
    let b = FunctionBuilder::new("cap0");
    let c = b.scalar(F32, 1.0).broadcast_to([4]);
    let mut f = b.finish(&[c.exp()]).unwrap();
    assert!(!run_checked(&ConstantFolding::with_max_elements(0), &mut f));
    assert!(run_checked(&ConstantFolding::with_max_elements(1), &mut f));
}

#[test]
fn control_dependencies_behind_an_input_block_folding() {
    let b = FunctionBuilder::new("blocked");
    let x = b.parameter("x", F32, [2]);
    let t = x.tanh();
    let c = b.constant(vec![1.0f32, 2.0], [2]);
    let e = c.exp();
    let mut f = b.finish(&[e, t]).unwrap();
    f.add_control_dependency(id(c), id(t)).unwrap();
    assert!(!run_checked(&ConstantFolding::new(), &mut f));
}

#[test]
fn nodes_with_a_non_constant_input_and_fused_kernels_are_not_folded() {
    let b = FunctionBuilder::new("no_fold");
    let x = b.parameter("x", F32, [2]);
    let c = b.constant(vec![1.0f32, 2.0], [2]);
    let y = (x + c).exp();
    let z = (c * c).abs();
    let mut f = b.finish(&[y, z]).unwrap();
    // Fuse the constant branch into a kernel whose inputs are all Constants (none: they are
    // copied in): folding leaves kernels alone.
    crate::extract_subgraphs(&mut f, &crate::ExtractionConfig::default()).unwrap();
    let kernels = count_op(&f, "FusedKernel");
    assert_eq!(kernels, 2);
    assert!(!run_checked(&ConstantFolding::new(), &mut f));
    assert_eq!(count_op(&f, "FusedKernel"), kernels);
}

#[test]
fn a_folded_node_hands_its_control_dependencies_to_the_constant() {
    let b = FunctionBuilder::new("deps");
    let x = b.parameter("x", F32, [2]);
    let pre = x.tanh().named("pre");
    let c = b.constant(vec![1.0f32, 4.0], [2]);
    let s = c.sqrt().named("s");
    let post = x.exp().named("post");
    let y = (post + s).named("y");
    let (ipre, is, ipost) = (id(pre), id(s), id(post));
    let mut f = b.finish(&[y, pre]).unwrap();
    f.add_control_dependency(is, ipre).unwrap();
    f.add_control_dependency(ipost, is).unwrap();
    assert!(run_checked(&ConstantFolding::new(), &mut f));
    let folded = f.node(by_name(&f, "y").inputs()[1].node).unwrap();
    assert!(matches!(folded.op(), Op::Constant(_)));
    assert_eq!(folded.other_deps(), [ipre]);
    assert_eq!(f.node(ipost).unwrap().other_deps(), [folded.id()]);
}

#[test]
fn a_function_that_does_not_validate_is_an_error_and_is_left_unchanged() {
    let mut f = Function::new("bad");
    let x = f.add_parameter("x", F32, [1]).unwrap();
    let a = f.add_node(Op::Unary(UnaryOp::Abs), &[x.into()]).unwrap();
    let c = f.add_constant(TensorData::F32(vec![1.0]), [1]).unwrap();
    let m = f
        .add_node(Op::Binary(BinaryOp::Add), &[a.into(), c.into()])
        .unwrap();
    f.add_result(m.into(), None).unwrap();
    f.replace_output(Output::from(a), Output::from(m)).unwrap(); // a cycle
    let before = f.clone();
    let err = ConstantFolding::new().run(&mut f).unwrap_err();
    assert!(matches!(err, PassError::Ir(_)), "{err}");
    assert_eq!(f, before);
}
