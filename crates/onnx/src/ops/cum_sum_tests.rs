//! Unit tests of `CumSum`: hand-computed cases of every numeric element type run on the
//! INTERPRETER and CPU-JIT (which must agree bit for bit), infinities and NaN, a long axis,
//! and named errors.

use graphlift_ir::{ElementType, Shape, TensorData};
use graphlift_jit::CpuJitBackend;
use graphlift_runtime::{Backend, InterpreterBackend, Tensor};
use prost::Message;

use super::one_node::NUMERIC;
use crate::proto::*;
use crate::tests::{attr_i, err, model_opset, node, vi};
use crate::{import_model_bytes, onnx_data_type, tensor_to_proto, OnnxError};

/// `CumSum(x, axis)`, node `cs`, on a graph input `x` of `t` and `dims`, with `axis` an
/// initializer (opset 14).
fn model(
    t: ElementType,
    dims: &[usize],
    axis: &TensorData,
    attrs: Vec<AttributeProto>,
) -> ModelProto {
    let axis_shape = Shape::new(if axis.len() == 1 {
        vec![]
    } else {
        vec![axis.len()]
    });
    with_axis(t, dims, axis, &axis_shape, attrs)
}

/// [`model`] with the axis tensor's shape given.
fn with_axis(
    t: ElementType,
    dims: &[usize],
    axis: &TensorData,
    axis_shape: &Shape,
    attrs: Vec<AttributeProto>,
) -> ModelProto {
    let x_dims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    let mut m = model_opset(
        vec![node("CumSum", "cs", &["x", "axis"], &["y"], attrs)],
        vec![vi("x", onnx_data_type(t), &x_dims)],
        vec![],
        14,
    );
    if let Some(g) = m.graph.as_mut() {
        g.initializer = vec![tensor_to_proto("axis", axis, axis_shape)];
        g.output = vec![ValueInfoProto {
            name: "y".into(),
            ..Default::default()
        }];
    }
    m
}

/// `m` run on `x` on CPU-JIT and on the INTERPRETER, which must agree exactly (NaN equal
/// to NaN, zeros by sign); the output, as `f64` values.
fn both(m: &ModelProto, x: TensorData, dims: &[usize]) -> Vec<f64> {
    let imported = import_model_bytes(&m.encode_to_vec()).unwrap();
    let x = Tensor::from_data(x, Shape::new(dims)).unwrap();
    let backends: [Box<dyn Backend>; 2] =
        [Box::new(InterpreterBackend), Box::new(CpuJitBackend::new())];
    let outs: Vec<TensorData> = backends
        .iter()
        .map(|b| {
            let exe = b.compile(&imported.function).unwrap();
            exe.run(std::slice::from_ref(&x)).unwrap()[0].data().clone()
        })
        .collect();
    assert_eq!(format!("{:?}", outs[0]), format!("{:?}", outs[1]));
    assert_eq!(outs[0].element_type(), x.element_type());
    (0..outs[0].len())
        .filter_map(|i| outs[0].get_f64(i))
        .collect()
}

#[test]
fn every_numeric_type_along_a_middle_axis() {
    // x[a, b, c] = 6a + 2b + c on [2, 3, 2], summed along b (axis -2).
    let x: Vec<f64> = (0..12).map(f64::from).collect();
    let dims = [2, 3, 2];
    for t in NUMERIC {
        let axis = TensorData::I64(vec![-2]);
        let m = model(t, &dims, &axis, vec![]);
        let inclusive = both(&m, TensorData::from_f64(t, &x), &dims);
        let want = [0., 1., 2., 4., 6., 9., 6., 7., 14., 16., 24., 27.];
        assert_eq!(inclusive, want, "{t}");
        // Exclusive and reverse, the axis an INT32 tensor of one element.
        let attrs = vec![attr_i("exclusive", 1), attr_i("reverse", 1)];
        let m = with_axis(t, &dims, &TensorData::I32(vec![1]), &Shape::new([1]), attrs);
        let reversed = both(&m, TensorData::from_f64(t, &x), &dims);
        let want = [6., 8., 4., 5., 0., 0., 18., 20., 10., 11., 0., 0.];
        assert_eq!(reversed, want, "{t}");
    }
}

#[test]
fn integers_wrap_in_their_type() {
    let m = model(ElementType::U8, &[3], &TensorData::I64(vec![0]), vec![]);
    assert_eq!(
        both(&m, TensorData::U8(vec![200, 100, 1]), &[3]),
        [200., 44., 45.]
    );
    let m = model(ElementType::I16, &[2], &TensorData::I64(vec![0]), vec![]);
    let y = both(&m, TensorData::I16(vec![i16::MAX, 1]), &[2]);
    assert_eq!(y, [f64::from(i16::MAX), f64::from(i16::MIN)]);
}

#[test]
fn half_floats_round_at_every_step_on_both_backends() {
    // bf16 keeps 8 significant bits: 256 + 1 rounds (to even) back to 256 at every step;
    // a sum kept in f32 and rounded once per output would give 256, 256, 258.
    let x: Vec<f64> = vec![256., 1., 1.];
    for t in [ElementType::BF16, ElementType::F16] {
        let big = if t == ElementType::F16 { 2048. } else { 256. };
        let x: Vec<f64> = x.iter().map(|&v| if v == 256. { big } else { v }).collect();
        let m = model(t, &[3], &TensorData::I64(vec![0]), vec![]);
        assert_eq!(both(&m, TensorData::from_f64(t, &x), &[3]), [big; 3], "{t}");
    }
}

#[test]
fn inf_and_nan_reach_only_the_later_sums() {
    let x = || TensorData::F32(vec![1., 2., f32::INFINITY, 3., f32::NAN, 4.]);
    let m = model(ElementType::F32, &[6], &TensorData::I64(vec![0]), vec![]);
    let y = both(&m, x(), &[6]);
    assert_eq!(y[..4], [1., 3., f64::INFINITY, f64::INFINITY]);
    assert!(y[4..].iter().all(|v| v.is_nan()));
    let attrs = vec![attr_i("reverse", 1), attr_i("exclusive", 1)];
    let m = model(ElementType::F32, &[6], &TensorData::I64(vec![0]), attrs);
    let y = both(&m, x(), &[6]);
    assert!(y[..4].iter().all(|v| v.is_nan()));
    assert_eq!(y[4..], [4., 0.]);
}

#[test]
fn a_long_axis_is_one_op() {
    // 100,000 elements: the matrix of a product would hold 10^10.
    let n = 100_000;
    let m = model(ElementType::F32, &[1, n], &TensorData::I64(vec![1]), vec![]);
    let imported = import_model_bytes(&m.encode_to_vec()).unwrap();
    let ops: Vec<&str> = imported
        .function
        .nodes()
        .map(|n| n.op().type_name())
        .collect();
    assert_eq!(ops.iter().filter(|&&o| o == "CumSum").count(), 1, "{ops:?}");
    assert!(!ops.contains(&"MatMul"), "{ops:?}");
    let y = both(&m, TensorData::F32(vec![1.0; n]), &[1, n]);
    assert_eq!((y[0], y[n - 1]), (1.0, n as f64));
}

#[test]
fn errors_name_the_node() {
    let f = ElementType::F32;
    let i64s = |v: &[i64]| TensorData::I64(v.to_vec());
    // An axis out of range, of two values, of floats; a boolean x.
    for (t, axis) in [
        (f, i64s(&[2])),
        (f, i64s(&[-3])),
        (f, i64s(&[0, 1])),
        (f, TensorData::F32(vec![0.0])),
        (ElementType::Bool, i64s(&[0])),
    ] {
        let e = err(&model(t, &[2, 3], &axis, vec![]));
        assert!(
            matches!(
                e,
                OnnxError::BadAttribute { .. }
                    | OnnxError::ShapeMismatch { .. }
                    | OnnxError::TypeMismatch { .. }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("CumSum `cs`"), "{e}");
    }
    // An axis known only at run time.
    let mut m = model(f, &[2, 3], &i64s(&[0]), vec![]);
    if let Some(g) = m.graph.as_mut() {
        g.initializer.clear();
        g.input.push(vi("axis", data_type::INT64, &[]));
    }
    assert!(matches!(err(&m), OnnxError::RunTimeOperand { .. }));
}
