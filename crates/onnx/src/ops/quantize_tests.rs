//! Unit tests of `QuantizeLinear`, `DequantizeLinear`, `DynamicQuantizeLinear`,
//! `MatMulInteger`, `ConvInteger`, `QLinearMatMul` and `QLinearConv`: small hand-computed cases on the reference interpreter
//! (ties rounding to even, saturation at both ends, per axis, blocked), and the errors for
//! bad zero points and scales, each naming the node.

use graphlift_ir::{Shape, TensorData};
use graphlift_runtime::Tensor;

use crate::proto::*;
use crate::tests::{attr_i, err, model_opset, node, run, vi};
use crate::{onnx_data_type, tensor_to_proto, OnnxError};

/// One node `n0` of `op` on the graph input `x` (whose type and shape `x` gives) and the
/// initializers `inits` (`""` for an omitted input), with outputs `outs`, at `opset`.
fn model(
    op: &str,
    x: &Tensor,
    inits: &[(&str, TensorData, &[usize])],
    attrs: Vec<AttributeProto>,
    outs: &[&str],
    opset: i64,
) -> ModelProto {
    let mut inputs = vec!["x"];
    inputs.extend(inits.iter().map(|(n, _, _)| *n));
    let dims: Vec<i64> = x.shape().dims().iter().map(|&d| d as i64).collect();
    let mut m = model_opset(
        vec![node(op, "n0", &inputs, outs, attrs)],
        vec![vi("x", onnx_data_type(x.element_type()), &dims)],
        vec![],
        opset,
    );
    if let Some(g) = m.graph.as_mut() {
        g.initializer = inits
            .iter()
            .filter(|(n, _, _)| !n.is_empty())
            .map(|(n, d, s)| tensor_to_proto(n, d, &Shape::new(*s)))
            .collect();
        g.output = outs
            .iter()
            .map(|o| ValueInfoProto {
                name: (*o).into(),
                ..Default::default()
            })
            .collect();
    }
    m
}

fn tensor(d: TensorData, dims: &[usize]) -> Tensor {
    Tensor::from_data(d, Shape::new(dims)).unwrap()
}

fn f32s(v: &[f32], dims: &[usize]) -> Tensor {
    tensor(TensorData::F32(v.to_vec()), dims)
}

/// Runs `op` on `x` and returns its first output's data.
fn eval(
    op: &str,
    x: Tensor,
    inits: &[(&str, TensorData, &[usize])],
    attrs: Vec<AttributeProto>,
) -> TensorData {
    let m = model(op, &x, inits, attrs, &["y"], 21);
    run(&m, vec![x])[0].data().clone()
}

#[test]
fn quantize_rounds_ties_to_even_and_saturates_both_ends() {
    let x = f32s(&[0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1000.0, -1000.0], &[8]);
    let inits = [
        ("s", TensorData::F32(vec![1.0]), &[][..]),
        ("z", TensorData::I8(vec![0]), &[][..]),
    ];
    assert_eq!(
        eval("QuantizeLinear", x, &inits, vec![]),
        TensorData::I8(vec![0, 2, 2, 0, -2, -2, 127, -128])
    );
    // The division rounds too: 3 / 2 = 1.5 -> 2, 5 / 2 = 2.5 -> 2, plus the zero point 128.
    let x = f32s(&[1.0, 3.0, 5.0, -300.0, 300.0], &[5]);
    let inits = [
        ("s", TensorData::F32(vec![2.0]), &[][..]),
        ("z", TensorData::U8(vec![128]), &[][..]),
    ];
    assert_eq!(
        eval("QuantizeLinear", x, &inits, vec![]),
        TensorData::U8(vec![128, 130, 130, 0, 255])
    );
}

#[test]
fn quantize_without_zero_point_gives_uint8_or_output_dtype() {
    let x = f32s(&[-1.0, 2.5, 300.0], &[3]);
    let s = [("s", TensorData::F32(vec![1.0]), &[][..])];
    assert_eq!(
        eval("QuantizeLinear", x.clone(), &s, vec![]),
        TensorData::U8(vec![0, 2, 255])
    );
    let int16 = attr_i("output_dtype", i64::from(data_type::INT16));
    assert_eq!(
        eval("QuantizeLinear", x, &s, vec![int16]),
        TensorData::I16(vec![-1, 2, 300])
    );
}

#[test]
fn quantize_and_dequantize_per_axis() {
    // x [[1, 2, 4], [-1, 5, -8]] / [1, 2, 4] = [[1, 1, 1], [-1, 2.5, -2]] -> rounded
    // [[1, 1, 1], [-1, 2, -2]] + [0, 1, 2] -> [[1, 2, 3], [-1, 3, 0]] -> UINT8 saturates -1.
    let x = f32s(&[1.0, 2.0, 4.0, -1.0, 5.0, -8.0], &[2, 3]);
    let inits = [
        ("s", TensorData::F32(vec![1.0, 2.0, 4.0]), &[3][..]),
        ("z", TensorData::U8(vec![0, 1, 2]), &[3][..]),
    ];
    let q = eval("QuantizeLinear", x, &inits, vec![]);
    assert_eq!(q, TensorData::U8(vec![1, 2, 3, 0, 3, 0]));
    let y = eval("DequantizeLinear", tensor(q, &[2, 3]), &inits, vec![]);
    assert_eq!(y, TensorData::F32(vec![1.0, 2.0, 4.0, 0.0, 4.0, -8.0]));
    // Along axis 0 instead: one scale per row.
    let x = f32s(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let inits = [("s", TensorData::F32(vec![1.0, 2.0]), &[2][..])];
    assert_eq!(
        eval("QuantizeLinear", x, &inits, vec![attr_i("axis", 0)]),
        TensorData::U8(vec![1, 2, 2, 2])
    );
}

#[test]
fn dequantize_subtracts_the_zero_point_and_rounds_once_to_the_scale_type() {
    let x = tensor(TensorData::I8(vec![-128, 0, 127]), &[3]);
    let inits = [
        ("s", TensorData::F32(vec![0.5]), &[][..]),
        ("z", TensorData::I8(vec![-1]), &[][..]),
    ];
    assert_eq!(
        eval("DequantizeLinear", x.clone(), &inits, vec![]),
        TensorData::F32(vec![-63.5, 0.5, 64.0])
    );
    let no_zp = [("s", TensorData::F32(vec![2.0]), &[][..])];
    assert_eq!(
        eval("DequantizeLinear", x, &no_zp, vec![]),
        TensorData::F32(vec![-256.0, 0.0, 254.0])
    );
}

#[test]
fn blocked_scales_repeat_along_the_axis_and_cut_the_last_block() {
    // x [1, 5], block 2 along axis 1: scales [1, 2, 4] cover [1, 1, 2, 2, 4].
    let x = f32s(&[1.0, 2.0, 3.0, 5.0, 10.0], &[1, 5]);
    let inits = [("s", TensorData::F32(vec![1.0, 2.0, 4.0]), &[1, 3][..])];
    let attrs = vec![attr_i("axis", 1), attr_i("block_size", 2)];
    // 3 / 2 = 1.5 -> 2, 5 / 2 = 2.5 -> 2, 10 / 4 = 2.5 -> 2.
    assert_eq!(
        eval("QuantizeLinear", x, &inits, attrs),
        TensorData::U8(vec![1, 2, 2, 2, 2])
    );
}

#[test]
fn blocked_int4_quantization_saturates_to_its_range_and_comes_back() {
    use graphlift_ir::I4;
    // q = [1, -20, 1.5, 2.5, 25] -> [1, -20, 2, 2, 25]; + zero points [1, 1, -1, -1, 2]
    // -> [2, -19, 1, 1, 27], saturated to INT4's [-8, 7].
    let x = f32s(&[1.0, -40.0, 3.0, 5.0, 100.0], &[1, 5]);
    let zp = TensorData::I4(vec![I4(1), I4(-1), I4(2)]);
    let inits = [
        ("s", TensorData::F32(vec![1.0, 2.0, 4.0]), &[1, 3][..]),
        ("z", zp, &[1, 3][..]),
    ];
    let attrs = || vec![attr_i("axis", 1), attr_i("block_size", 2)];
    let q = eval("QuantizeLinear", x, &inits, attrs());
    assert_eq!(q, TensorData::I4([2, -8, 1, 1, 7].map(I4).to_vec()));
    // (q - z) * s = [1, -9, 4, 4, 20].
    let y = eval("DequantizeLinear", tensor(q, &[1, 5]), &inits, attrs());
    assert_eq!(y, TensorData::F32(vec![1.0, -9.0, 4.0, 4.0, 20.0]));
}

#[test]
fn float8_quantization_follows_the_saturate_attribute() {
    use graphlift_ir::F8E4M3FN;
    let x = || f32s(&[1.0, 1000.0, -1000.0, -0.0], &[4]);
    let inits = [
        ("s", TensorData::F32(vec![1.0]), &[][..]),
        ("z", TensorData::F8E4M3FN(vec![F8E4M3FN(0)]), &[][..]),
    ];
    let bits = |d: TensorData| {
        d.into_vec::<F8E4M3FN>()
            .unwrap()
            .iter()
            .map(|b| b.0)
            .collect::<Vec<_>>()
    };
    // Saturating (the default): ±448; the zero point is not added (-0 stays -0).
    let q = eval("QuantizeLinear", x(), &inits, vec![]);
    assert_eq!(bits(q), [0x38, 0x7e, 0xfe, 0x80]);
    // saturate = 0: E4M3FN has no infinity, so NaN of the sign.
    let q = eval("QuantizeLinear", x(), &inits, vec![attr_i("saturate", 0)]);
    assert_eq!(bits(q), [0x38, 0x7f, 0xff, 0x80]);
}

#[test]
fn dynamic_quantize_linear_scales_the_range_including_zero() {
    let dql = |x: Tensor| {
        let m = model(
            "DynamicQuantizeLinear",
            &x,
            &[],
            vec![],
            &["y", "s", "z"],
            11,
        );
        run(&m, vec![x])
    };
    // max 200, min -55: range 255, scale 1, zero point 55.
    let out = dql(f32s(&[-55.0, 200.0, 0.5, 1.5], &[2, 2]));
    assert_eq!(*out[0].data(), TensorData::U8(vec![0, 255, 55, 57]));
    assert_eq!(*out[1].data(), TensorData::F32(vec![1.0]));
    assert_eq!(*out[2].data(), TensorData::U8(vec![55]));
    // All zeros: the scale is 1 (not 0 / 255), the zero point 0.
    let out = dql(f32s(&[0.0; 3], &[3]));
    assert_eq!(*out[0].data(), TensorData::U8(vec![0, 0, 0]));
    assert_eq!(*out[1].data(), TensorData::F32(vec![1.0]));
    assert_eq!(*out[2].data(), TensorData::U8(vec![0]));
}

#[test]
fn matmul_integer_subtracts_per_row_zero_points() {
    // A [[1, 2], [3, 4]] - [1, 2] per row = [[0, 1], [1, 2]]; B [[1, -1], [2, 0]].
    let a = tensor(TensorData::U8(vec![1, 2, 3, 4]), &[2, 2]);
    let inits = [
        ("b", TensorData::I8(vec![1, -1, 2, 0]), &[2, 2][..]),
        ("za", TensorData::U8(vec![1, 2]), &[2][..]),
    ];
    assert_eq!(
        eval("MatMulInteger", a, &inits, vec![]),
        TensorData::I32(vec![2, 0, 5, -1])
    );
}

#[test]
fn conv_integer_subtracts_per_channel_zero_points_before_padding() {
    // x - 1 = [[0, 1], [2, 3]]; w [2, -1] - [1, -1] per output channel = [1, 0].
    let x = tensor(TensorData::U8(vec![1, 2, 3, 4]), &[1, 1, 2, 2]);
    let inits = [
        ("w", TensorData::I8(vec![2, -1]), &[2, 1, 1, 1][..]),
        ("zx", TensorData::U8(vec![1]), &[][..]),
        ("zw", TensorData::I8(vec![1, -1]), &[2][..]),
    ];
    assert_eq!(
        eval("ConvInteger", x, &inits, vec![]),
        TensorData::I32(vec![0, 1, 2, 3, 0, 0, 0, 0])
    );
    // Padding 1 with a 2x2 filter of ones: the padding is 0 after the shift, as x - 1 is.
    let x = tensor(TensorData::U8(vec![2, 2, 2, 2]), &[1, 1, 2, 2]);
    let inits = [
        ("w", TensorData::U8(vec![1; 4]), &[1, 1, 2, 2][..]),
        ("zx", TensorData::U8(vec![1]), &[][..]),
    ];
    let pads = AttributeProto {
        name: "pads".into(),
        r#type: attribute_type::INTS,
        ints: vec![1, 1, 1, 1],
        ..Default::default()
    };
    assert_eq!(
        eval("ConvInteger", x, &inits, vec![pads]),
        TensorData::I32(vec![1, 2, 1, 2, 4, 2, 1, 2, 1])
    );
}

/// The initializers of a `QLinearMatMul` after `a` (UINT8 `[[2, 4], [6, 8]]`, scale 0.5,
/// zero point 2: `A = [[0, 2], [4, 6]]`), with `b` INT8 `[[1, 3], [2, -1]]` minus the
/// per-column zero points `[0, 1]` (`B = [[1, 2], [2, -2]]`, so `C = [[4, -4], [16, -4]]`)
/// and per-column scales `[1, 0.25]` (multipliers `[0.5, 0.125] / y_scale`).
fn qlinear_matmul_inits(
    y_scale: f32,
    y_zero_point: TensorData,
) -> Vec<(&'static str, TensorData, &'static [usize])> {
    vec![
        ("sa", TensorData::F32(vec![0.5]), &[]),
        ("za", TensorData::U8(vec![2]), &[]),
        ("b", TensorData::I8(vec![1, 3, 2, -1]), &[2, 2]),
        ("sb", TensorData::F32(vec![1.0, 0.25]), &[2]),
        ("zb", TensorData::I8(vec![0, 1]), &[2]),
        ("sy", TensorData::F32(vec![y_scale]), &[]),
        ("zy", y_zero_point, &[]),
    ]
}

#[test]
fn qlinear_matmul_requantizes_per_column_with_ties_to_even_and_saturation() {
    let a = || tensor(TensorData::U8(vec![2, 4, 6, 8]), &[2, 2]);
    // C * [0.5, 0.125] = [[2, -0.5], [8, -0.5]], + 9 = [[11, 8.5], [17, 8.5]]: 8.5 -> 8.
    let inits = qlinear_matmul_inits(1.0, TensorData::U8(vec![9]));
    assert_eq!(
        eval("QLinearMatMul", a(), &inits, vec![]),
        TensorData::U8(vec![11, 8, 17, 8])
    );
    // y_scale 0.01: [[200, -50], [800, -50]], saturated to INT8 and to UINT8.
    let inits = qlinear_matmul_inits(0.01, TensorData::I8(vec![0]));
    assert_eq!(
        eval("QLinearMatMul", a(), &inits, vec![]),
        TensorData::I8(vec![127, -50, 127, -50])
    );
    let inits = qlinear_matmul_inits(0.01, TensorData::U8(vec![0]));
    assert_eq!(
        eval("QLinearMatMul", a(), &inits, vec![]),
        TensorData::U8(vec![200, 0, 255, 0])
    );
}

#[test]
fn qlinear_conv_adds_the_bias_and_scales_per_output_channel() {
    // x - 1 = [0, 1, 2, 3] (scale 0.5); w = [2, -4] per output channel, scales [1, 0.5];
    // bias [1, -2]: C = [1, 3, 5, 7] and [-2, -6, -10, -14], multipliers [0.5, 0.25].
    // + 128: [128.5, 129.5, 130.5, 131.5] and [127.5, 126.5, 125.5, 124.5], ties to even.
    let x = tensor(TensorData::U8(vec![1, 2, 3, 4]), &[1, 1, 2, 2]);
    let inits = [
        ("sx", TensorData::F32(vec![0.5]), &[][..]),
        ("zx", TensorData::U8(vec![1]), &[][..]),
        ("w", TensorData::I8(vec![2, -4]), &[2, 1, 1, 1][..]),
        ("sw", TensorData::F32(vec![1.0, 0.5]), &[2][..]),
        ("zw", TensorData::I8(vec![0, 0]), &[2][..]),
        ("sy", TensorData::F32(vec![1.0]), &[][..]),
        ("zy", TensorData::U8(vec![128]), &[][..]),
        ("bias", TensorData::I32(vec![1, -2]), &[2][..]),
    ];
    assert_eq!(
        eval("QLinearConv", x, &inits, vec![]),
        TensorData::U8(vec![128, 130, 130, 132, 128, 126, 126, 124])
    );
}

#[test]
fn qlinear_bad_scales_and_zero_points_are_errors_naming_the_node() {
    let a = || tensor(TensorData::U8(vec![2, 4, 6, 8]), &[2, 2]);
    let mut inits = qlinear_matmul_inits(0.0, TensorData::U8(vec![0]));
    let e = import_error("QLinearMatMul", a(), &inits, vec![]);
    assert!(
        matches!(&e, OnnxError::InvalidModel { message, .. } if message.contains("input 6")),
        "{e}"
    );
    inits[6].1 = TensorData::I32(vec![0]);
    inits[5].1 = TensorData::F32(vec![1.0]);
    let e = import_error("QLinearMatMul", a(), &inits, vec![]);
    assert!(matches!(e, OnnxError::TypeMismatch { .. }), "{e}");
    let mut inits = qlinear_matmul_inits(1.0, TensorData::U8(vec![0]));
    inits[1].1 = TensorData::I8(vec![2]);
    let e = import_error("QLinearMatMul", a(), &inits, vec![]);
    assert!(matches!(e, OnnxError::TypeMismatch { .. }), "{e}");
    let mut inits = qlinear_matmul_inits(1.0, TensorData::U8(vec![0]));
    inits[3] = ("sb", TensorData::F32(vec![1.0, 1.0, 1.0]), &[3]);
    let e = import_error("QLinearMatMul", a(), &inits, vec![]);
    assert!(matches!(e, OnnxError::ShapeMismatch { .. }), "{e}");
    let x = tensor(TensorData::U8(vec![1, 2, 3, 4]), &[1, 1, 2, 2]);
    let inits = [
        ("sx", TensorData::F32(vec![0.5]), &[][..]),
        ("zx", TensorData::U8(vec![1]), &[][..]),
        ("w", TensorData::I8(vec![2, -4]), &[2, 1, 1, 1][..]),
        ("sw", TensorData::F32(vec![1.0, 0.0]), &[2][..]),
        ("zw", TensorData::I8(vec![0, 0]), &[2][..]),
        ("sy", TensorData::F32(vec![1.0]), &[][..]),
        ("zy", TensorData::U8(vec![128]), &[][..]),
    ];
    let e = import_error("QLinearConv", x, &inits, vec![]);
    assert!(
        matches!(&e, OnnxError::InvalidModel { message, .. } if message.contains("element 1")),
        "{e}"
    );
}

/// The import error of `op` on `x` with `inits`, which must name node `n0`.
fn import_error(
    op: &str,
    x: Tensor,
    inits: &[(&str, TensorData, &[usize])],
    attrs: Vec<AttributeProto>,
) -> OnnxError {
    let e = err(&model(op, &x, inits, attrs, &["y"], 21));
    assert!(e.to_string().contains("n0"), "{e}");
    e
}

#[test]
fn bad_zero_points_and_scales_are_errors_naming_the_node() {
    let x = f32s(&[1.0, 2.0, 3.0], &[3]);
    let wrong_type = [
        ("s", TensorData::F32(vec![1.0]), &[][..]),
        ("z", TensorData::U8(vec![0]), &[][..]),
    ];
    let int8 = attr_i("output_dtype", i64::from(data_type::INT8));
    let e = import_error("QuantizeLinear", x.clone(), &wrong_type, vec![int8]);
    assert!(matches!(e, OnnxError::TypeMismatch { .. }), "{e}");
    let q = tensor(TensorData::I8(vec![1, 2, 3]), &[3]);
    let e = import_error("DequantizeLinear", q, &wrong_type, vec![]);
    assert!(matches!(e, OnnxError::TypeMismatch { .. }), "{e}");
    for bad in [0.0, f32::NAN] {
        let inits = [("s", TensorData::F32(vec![1.0, bad, 1.0]), &[3][..])];
        let axis0 = vec![attr_i("axis", 0)];
        let e = import_error("QuantizeLinear", x.clone(), &inits, axis0);
        assert!(
            matches!(&e, OnnxError::InvalidModel { message, .. } if message.contains("element 1")),
            "{e}"
        );
    }
    let short = [("s", TensorData::F32(vec![1.0, 2.0]), &[2][..])];
    let e = import_error("QuantizeLinear", x.clone(), &short, vec![attr_i("axis", 0)]);
    assert!(matches!(e, OnnxError::ShapeMismatch { .. }), "{e}");
    // FLOAT8E8M0 is a scale type, not a quantized one.
    let e8m0 = attr_i("output_dtype", i64::from(data_type::FLOAT8E8M0));
    let one = [("s", TensorData::F32(vec![1.0]), &[][..])];
    let e = import_error("QuantizeLinear", x, &one, vec![e8m0]);
    assert!(e.to_string().contains("quantizing to f8e8m0"), "{e}");
}
