//! INTERPRETER backend and registry behaviour.

use graphlift_ir::{
    select,
    ElementType::{F32, F64, I32, I64},
    FunctionBuilder, Shape,
};
use graphlift_runtime::{Backend, RuntimeError, Tensor};

fn backend() -> std::sync::Arc<dyn Backend> {
    <dyn Backend>::create("INTERPRETER").unwrap()
}

#[test]
fn unknown_backend_lists_known_names() {
    let err = <dyn Backend>::create("GPU").err().unwrap();
    let msg = err.to_string();
    assert!(msg.contains("GPU") && msg.contains("INTERPRETER"), "{msg}");
}

#[test]
fn halide_subgraph_reference() {
    let b = FunctionBuilder::new("halide_subgraph");
    let [a, bb, c, d] = ["A", "B", "C", "D"].map(|n| b.parameter(n, F32, [8]));
    let f = b.finish(&[((a + bb) * c).relu() + d]).unwrap();
    let exe = backend().compile(&f).unwrap();
    let x = Tensor::from_vec(vec![-1.0f32, 4.0, -2.0, 5.0, 1.0, 5.0, 7.0, 9.0], [8]).unwrap();
    let out = exe.run(&[x.clone(), x.clone(), x.clone(), x]).unwrap();
    assert_eq!(
        out[0].read::<f32>().unwrap(),
        &[1.0, 36.0, 6.0, 55.0, 3.0, 55.0, 105.0, 171.0]
    );
}

#[test]
fn call_with_validate_names_the_offending_parameter() {
    let b = FunctionBuilder::new("f");
    let x = b.parameter("x", F32, [2]);
    let y = b.parameter("y", F32, [2]);
    let f = b.finish(&[x + y]).unwrap();
    let exe = backend().compile(&f).unwrap();
    let good = Tensor::zeros(F32, [2]).unwrap();
    let wrong_shape = Tensor::zeros(F32, [3]).unwrap();
    let wrong_type = Tensor::zeros(I32, [2]).unwrap();
    let mut out = vec![Tensor::zeros(F32, [2]).unwrap()];

    let e = exe
        .call_with_validate(&mut out, &[good.clone(), wrong_shape])
        .unwrap_err();
    assert!(
        matches!(&e, RuntimeError::ArgumentType { index: 1, name, .. } if name == "y"),
        "{e}"
    );
    let e = exe
        .call_with_validate(&mut out, &[wrong_type, good.clone()])
        .unwrap_err();
    assert!(
        e.to_string().contains("`x`") && e.to_string().contains("i32[2]"),
        "{e}"
    );
    let e = exe
        .call_with_validate(&mut out, std::slice::from_ref(&good))
        .unwrap_err();
    assert!(matches!(
        e,
        RuntimeError::ArgumentCount {
            expected: 2,
            got: 1,
            ..
        }
    ));
    let mut bad_out = vec![Tensor::zeros(F64, [2]).unwrap()];
    let e = exe
        .call_with_validate(&mut bad_out, &[good.clone(), good])
        .unwrap_err();
    assert!(matches!(
        e,
        RuntimeError::ArgumentType { what: "output", .. }
    ));
}

#[test]
fn select_compare_convert_and_broadcast() {
    let b = FunctionBuilder::new("f");
    let x = b.parameter("x", F32, [2, 3]);
    let t = b.parameter("t", F32, Shape::scalar());
    let y = select(x.gt(t), x.convert(I32).convert(F32), -x);
    let f = b.finish(&[y]).unwrap();
    let exe = backend().compile(&f).unwrap();
    let xs = Tensor::from_vec(vec![1.5f32, -2.5, 3.7, 0.0, 9.9, -0.1], [2, 3]).unwrap();
    let ts = Tensor::from_vec(vec![1.0f32], Shape::scalar()).unwrap();
    let out = exe.run(&[xs, ts]).unwrap();
    assert_eq!(
        out[0].read::<f32>().unwrap(),
        &[1.0, 2.5, 3.0, -0.0, 9.0, 0.1]
    );
}

#[test]
fn tensors_check_their_data() {
    assert!(Tensor::from_vec(vec![1.0f32; 3], [4]).is_err());
    assert!(Tensor::zeros(F32, [usize::MAX / 2, 4]).is_err());
    let mut t = Tensor::zeros(I64, [2]).unwrap();
    assert!(t.write(&[1.0f32, 2.0]).is_err());
    assert!(t.write(&[1i64]).is_err());
    t.write(&[1i64, 2]).unwrap();
    assert_eq!(t.read::<i64>().unwrap(), &[1, 2]);
    assert!(t.read::<f32>().is_err());
}

/// A tensor refitted to another shape of its element type keeps its allocation (its
/// leading elements, zeros after them); to another element type, or to a size no allocation
/// can hold, it is declined.
#[test]
fn refit_keeps_the_allocation_of_its_element_type() {
    use graphlift_ir::TensorType;
    let t = Tensor::from_vec((1..=12).map(|i| i as f32).collect(), [3, 4]).unwrap();
    let at = t.data().as_ptr();
    let small = t.refit(&TensorType::new(F32, [2, 2])).unwrap();
    assert_eq!(
        (small.shape().dims(), small.data().as_ptr()),
        (&[2, 2][..], at)
    );
    assert_eq!(small.read::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
    let large = small.refit(&TensorType::new(F32, [2, 5])).unwrap();
    assert_eq!(
        large.data().as_ptr(),
        at,
        "within the allocation's 12 elements"
    );
    let want = [1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    assert_eq!(large.read::<f32>().unwrap(), &want);
    let same = large.clone().refit(&TensorType::new(F32, [2, 5])).unwrap();
    assert_eq!(same, large);
    assert!(large.clone().refit(&TensorType::new(I64, [2, 5])).is_none());
    assert!(large
        .refit(&TensorType::new(F32, [usize::MAX / 2, 4]))
        .is_none());
}
