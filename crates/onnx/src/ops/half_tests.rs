//! The operators of exported models in FLOAT16 and BFLOAT16: each imports and runs on
//! INTERPRETER and CPU-JIT, and agrees with its FLOAT result to the half types' precision.

use graphlift_ir::{ElementType, TensorData};
use graphlift_runtime::{Backend, InterpreterBackend};

use super::one_node::{model, tensor, values, Operand, Operand::*};
use crate::import_model;
use crate::proto::data_type::{BFLOAT16, FLOAT, FLOAT16};
use crate::proto::AttributeProto;
use crate::tests::{attr_f, attr_i, attr_s};

/// `(op, opset, extra operands after x, attributes)`: each on `x` `[1, 3, 2, 2]`.
fn cases() -> Vec<(&'static str, i64, Vec<Operand>, Vec<AttributeProto>)> {
    let scales = || Init("s", TensorData::F32(vec![1., 1., 2., 1.5]), &[4]);
    let axes = || Init("a", TensorData::I64(vec![1, -1]), &[2]);
    vec![
        ("Dropout", 13, vec![], vec![]),
        (
            "Upsample",
            9,
            vec![scales()],
            vec![attr_s("mode", "linear")],
        ),
        ("Resize", 10, vec![scales()], vec![]),
        ("ReduceL2", 18, vec![axes()], vec![]),
        (
            "ReduceLogSumExp",
            18,
            vec![axes()],
            vec![attr_i("keepdims", 0)],
        ),
        ("Hardmax", 13, vec![], vec![attr_i("axis", 1)]),
        ("LpNormalization", 22, vec![], vec![attr_i("axis", 1)]),
        ("MeanVarianceNormalization", 13, vec![], vec![]),
        ("Shrink", 9, vec![], vec![attr_f("lambd", 0.2)]),
        (
            "LRN",
            13,
            vec![],
            vec![attr_i("size", 3), attr_f("alpha", 0.5)],
        ),
        ("Swish", 24, vec![], vec![]),
    ]
}

#[test]
fn half_precision_agrees_with_float_on_both_backends() {
    let data: Vec<f64> = (0..12).map(|i| ((i * 7 % 12) as f64 - 5.5) / 4.0).collect();
    let backends: [Box<dyn Backend>; 2] = [
        Box::new(InterpreterBackend),
        Box::new(graphlift_jit::CpuJitBackend::new()),
    ];
    for (op, opset, extra, attrs) in cases() {
        let mut results = Vec::new();
        for (code, t) in [
            (FLOAT, ElementType::F32),
            (FLOAT16, ElementType::F16),
            (BFLOAT16, ElementType::BF16),
        ] {
            let mut operands = vec![Input("x", code, &[1, 3, 2, 2])];
            operands.extend(extra.iter().cloned());
            let m = model(op, opset, operands, &["y"], attrs.clone());
            let f = import_model(&m)
                .unwrap_or_else(|e| panic!("{op} {t}: {e}"))
                .function;
            let x = tensor(TensorData::from_f64(t, &data), &[1, 3, 2, 2]);
            for b in &backends {
                let y = b
                    .compile(&f)
                    .and_then(|exe| exe.run(std::slice::from_ref(&x)));
                let y = y.unwrap_or_else(|e| panic!("{op} {t} on {}: {e}", b.name()));
                assert_eq!(y[0].element_type(), t, "{op} on {}", b.name());
                results.push((t, b.name(), values(&y[0])));
            }
        }
        let want = results[0].2.clone();
        for (t, backend, got) in &results {
            let tol = if *t == ElementType::BF16 { 3e-2 } else { 4e-3 };
            let near = got
                .iter()
                .zip(&want)
                .all(|(g, w)| (g - w).abs() <= tol * (1.0 + w.abs()));
            assert!(near, "{op} {t} on {backend}: {got:?}, FLOAT gives {want:?}");
        }
    }
}
