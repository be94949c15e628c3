//! The bitwise operators on every integer type, and `BitShift` past the type's width, on
//! both backends (whose outputs must agree exactly); named errors.

use graphlift_ir::TensorData;

use super::one_node::{model, run_both, tensor, values, Operand::*, NUMERIC};
use crate::onnx_data_type;
use crate::proto::data_type::{FLOAT, INT8, UINT8};
use crate::tests::{attr_s, err};

#[test]
fn and_or_xor_not_on_every_integer_type() {
    let (a, b) = ([0x5a, 0x0f, 0x7f, 0x00], [0x33, 0x70, 0x01, 0x7f]);
    for t in NUMERIC.into_iter().filter(|t| t.is_integer()) {
        let data = |v: &[i64]| {
            let f: Vec<f64> = v.iter().map(|&x| x as f64).collect();
            tensor(TensorData::from_f64(t, &f), &[4])
        };
        let code = onnx_data_type(t);
        for (op, want) in [
            ("BitwiseAnd", [0x12, 0x00, 0x01, 0x00]),
            ("BitwiseOr", [0x7b, 0x7f, 0x7f, 0x7f]),
            ("BitwiseXor", [0x69, 0x7f, 0x7e, 0x7f]),
        ] {
            let m = model(
                op,
                18,
                vec![Input("a", code, &[4]), Input("b", code, &[4])],
                &["y"],
                vec![],
            );
            let y = values(&run_both(&m, &[data(&a), data(&b)])[0]);
            let want: Vec<f64> = want.iter().map(|&v| f64::from(v)).collect();
            assert_eq!(y, want, "{op} {t}");
        }
        let m = model(
            "BitwiseNot",
            18,
            vec![Input("a", code, &[4])],
            &["y"],
            vec![],
        );
        let y = run_both(&m, &[data(&a)]).remove(0);
        // The complement of 0x0f: -16 signed, its width's maximum minus 15 unsigned.
        let want = if t.is_signed_integer() {
            -16.0
        } else {
            2f64.powi(8 * t.size_bytes() as i32) - 16.0
        };
        assert_eq!(y.data().get_f64(1), Some(want), "BitwiseNot {t}");
    }
}

#[test]
fn shifts_wrap_and_give_zero_past_the_width() {
    let x = tensor(TensorData::U8(vec![0x81, 0x81, 0x81, 0x81]), &[4]);
    let by = tensor(TensorData::U8(vec![1, 7, 8, 200]), &[4]);
    for (direction, want) in [
        ("LEFT", [2.0, 128.0, 0.0, 0.0]),
        ("RIGHT", [64.0, 1.0, 0.0, 0.0]),
    ] {
        let m = model(
            "BitShift",
            11,
            vec![Input("x", UINT8, &[4]), Input("y", UINT8, &[4])],
            &["z"],
            vec![attr_s("direction", direction)],
        );
        assert_eq!(
            values(&run_both(&m, &[x.clone(), by.clone()])[0]),
            want,
            "{direction}"
        );
    }
    let x = tensor(TensorData::U64(vec![u64::MAX, 1]), &[2]);
    let by = tensor(TensorData::U64(vec![63, 64]), &[2]);
    let m = model(
        "BitShift",
        11,
        vec![Input("x", 13, &[2]), Input("y", 13, &[2])],
        &["z"],
        vec![attr_s("direction", "RIGHT")],
    );
    assert_eq!(
        run_both(&m, &[x, by])[0].data(),
        &TensorData::U64(vec![1, 0])
    );
}

#[test]
fn signed_shifts_and_float_operands_are_errors_naming_the_node() {
    let cases = [
        model(
            "BitShift",
            11,
            vec![Input("x", INT8, &[2]), Input("y", INT8, &[2])],
            &["z"],
            vec![attr_s("direction", "LEFT")],
        ),
        model(
            "BitShift",
            11,
            vec![Input("x", UINT8, &[2]), Input("y", UINT8, &[2])],
            &["z"],
            vec![attr_s("direction", "UP")],
        ),
        model(
            "BitwiseAnd",
            18,
            vec![Input("a", FLOAT, &[2]), Input("b", FLOAT, &[2])],
            &["y"],
            vec![],
        ),
    ];
    for m in &cases {
        let e = err(m).to_string();
        assert!(e.contains("`n0`"), "{e}");
    }
}
