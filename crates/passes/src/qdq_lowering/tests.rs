//! The QDQ lowering's round-trip rewrite on graphs written as the ONNX importer composes
//! `QuantizeLinear -> DequantizeLinear`, checked bit for bit against the reference on edge
//! cases (NaN, infinities, ties, values far out of range). The products are checked end to
//! end against onnxruntime's integer arithmetic in `graphlift-onnx` (`ops/qdq_tests.rs`).

use graphlift_ir::{BinaryOp, ElementType, Function, Op, Output, Shape, TensorData, UnaryOp};

use super::QdqLowering;
use crate::testing::{count_op, run_checked};
use crate::Pass;

/// `c` broadcast to `[n]`.
fn splat(f: &mut Function, c: f32, n: usize) -> Output {
    let k = f
        .add_constant(TensorData::F32(vec![c]), Shape::scalar())
        .unwrap();
    f.add_node(Op::Broadcast(Shape::new([n])), &[k.into()])
        .unwrap()
        .into()
}

fn binary(f: &mut Function, op: BinaryOp, a: Output, b: Output) -> Output {
    f.add_node(Op::Binary(op), &[a, b]).unwrap().into()
}

/// `x [12]` through `QuantizeLinear` (scale 0.5, zero point `zp`, to `to`) and back, or with
/// `rounded` false the clamp of `x` itself (no `Round`: the conversion then truncates, which
/// the rewrite must not drop).
fn round_trip(to: ElementType, zp: f32, rounded: bool) -> Function {
    let n = 12;
    let mut f = Function::new("qdq");
    let x: Output = f
        .add_parameter("x", ElementType::F32, Shape::new([n]))
        .unwrap()
        .into();
    let (lo, hi) = if to == ElementType::I8 {
        (-128.0, 127.0)
    } else {
        (0.0, 255.0)
    };
    let s = splat(&mut f, 0.5, n);
    let q = binary(&mut f, BinaryOp::Divide, x, s);
    let mut v = q;
    if rounded {
        v = f.add_node(Op::Unary(UnaryOp::Round), &[q]).unwrap().into();
    }
    let z = splat(&mut f, zp, n);
    let v = binary(&mut f, BinaryOp::Add, v, z);
    let lo = splat(&mut f, lo, n);
    let hi = splat(&mut f, hi, n);
    let v = binary(&mut f, BinaryOp::Maximum, v, lo);
    let v = binary(&mut f, BinaryOp::Minimum, v, hi);
    let q8 = f.add_node(Op::Convert(to), &[v]).unwrap();
    let back = f
        .add_node(Op::Convert(ElementType::F32), &[q8.into()])
        .unwrap();
    let z = splat(&mut f, zp, n);
    let d = binary(&mut f, BinaryOp::Subtract, back.into(), z);
    let s = splat(&mut f, 0.5, n);
    let y = binary(&mut f, BinaryOp::Multiply, d, s);
    f.add_result(y, None).unwrap();
    f
}

#[test]
fn a_round_trip_through_eight_bits_becomes_the_clamp_bit_for_bit() {
    for (to, zp) in [(ElementType::U8, 3.0), (ElementType::I8, -5.0)] {
        let mut f = round_trip(to, zp, true);
        assert!(run_checked(&QdqLowering, &mut f), "{f}");
        assert_eq!(count_op(&f, "Convert"), 0, "{f}");
        let report = QdqLowering
            .run_with_report(&mut round_trip(to, zp, true))
            .unwrap()
            .qdq
            .unwrap();
        assert_eq!(report.round_trips, 1);
        assert!(report.lowered.is_empty() && report.stayed_float.is_empty());
    }
}

#[test]
fn a_clamp_of_values_that_are_not_integers_keeps_its_conversion() {
    let mut f = round_trip(ElementType::U8, 3.0, false);
    assert!(!run_checked(&QdqLowering, &mut f), "{f}");
    assert_eq!(count_op(&f, "Convert"), 2);
}
