//! Test support for the operator tests: a one-node model whose operands are typed graph
//! inputs, initializers or omitted optional inputs, at a chosen opset, and running it on the
//! reference interpreter.

use graphlift_ir::{ElementType, Shape, TensorData};
use graphlift_runtime::{Backend, InterpreterBackend, Tensor};

use crate::import_model;
use crate::proto::*;
use crate::tests::{model_opset, node, vi};

/// Every numeric element type (floats, then the integers signed and unsigned by width).
pub(super) const NUMERIC: [ElementType; 12] = [
    ElementType::F32,
    ElementType::F64,
    ElementType::F16,
    ElementType::BF16,
    ElementType::I8,
    ElementType::U8,
    ElementType::I16,
    ElementType::U16,
    ElementType::I32,
    ElementType::U32,
    ElementType::I64,
    ElementType::U64,
];

/// An operand of the node.
#[derive(Clone)]
pub(super) enum Operand {
    /// A graph input of an ONNX `data_type` and shape.
    Input(&'static str, i32, &'static [i64]),
    /// An initializer.
    Init(&'static str, TensorData, &'static [usize]),
    /// An omitted optional input (`""`).
    Skip,
}

/// The model of one node `n0` of `op` at `opset`, reading `operands` and writing
/// `outputs` (untyped).
pub(super) fn model(
    op: &str,
    opset: i64,
    operands: Vec<Operand>,
    outputs: &[&str],
    attrs: Vec<AttributeProto>,
) -> ModelProto {
    let mut names = Vec::new();
    let mut inputs = Vec::new();
    let mut inits = Vec::new();
    for o in operands {
        match o {
            Operand::Input(name, t, dims) => {
                inputs.push(vi(name, t, dims));
                names.push(name);
            }
            Operand::Init(name, data, dims) => {
                inits.push(crate::tensor_to_proto(name, &data, &Shape::new(dims)));
                names.push(name);
            }
            Operand::Skip => names.push(""),
        }
    }
    let untyped = outputs
        .iter()
        .map(|n| ValueInfoProto {
            name: (*n).into(),
            ..Default::default()
        })
        .collect();
    let mut m = model_opset(
        vec![node(op, "n0", &names, outputs, attrs)],
        inputs,
        untyped,
        opset,
    );
    if let Some(g) = m.graph.as_mut() {
        g.initializer = inits;
    }
    m
}

/// Imports `m` and runs it on INTERPRETER with `inputs`.
pub(super) fn run(m: &ModelProto, inputs: &[Tensor]) -> Vec<Tensor> {
    let imported = import_model(m).unwrap_or_else(|e| panic!("{e}"));
    let exe = InterpreterBackend.compile(&imported.function).unwrap();
    exe.run(inputs).unwrap()
}

/// Imports `m` and runs it with `inputs` on INTERPRETER and on CPU-JIT, whose outputs must
/// agree in type and shape and to 1e-6 relative in value (NaN with NaN: the two may add in
/// different orders); the INTERPRETER's outputs.
pub(super) fn run_both(m: &ModelProto, inputs: &[Tensor]) -> Vec<Tensor> {
    let imported = import_model(m).unwrap_or_else(|e| panic!("{e}"));
    let jit = graphlift_jit::CpuJitBackend::new().compile(&imported.function);
    let jit = jit.unwrap().run(inputs).unwrap();
    let want = InterpreterBackend
        .compile(&imported.function)
        .unwrap()
        .run(inputs)
        .unwrap();
    assert_eq!(jit.len(), want.len());
    for (got, want) in jit.iter().zip(&want) {
        assert_eq!(got.tensor_type(), want.tensor_type());
        for (g, w) in values(got).into_iter().zip(values(want)) {
            let same =
                g == w || (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-6 * (1.0 + w.abs());
            assert!(same, "CPU-JIT {g} vs INTERPRETER {w}");
        }
    }
    want
}

/// A tensor of `data` and `dims`.
pub(super) fn tensor(data: TensorData, dims: &[usize]) -> Tensor {
    Tensor::from_data(data, Shape::new(dims)).unwrap()
}

/// The elements of `t` as `f64`.
pub(super) fn values(t: &Tensor) -> Vec<f64> {
    (0..t.data().len())
        .map(|i| t.data().get_f64(i).unwrap())
        .collect()
}

/// A FLOAT tensor of `v` (each rounded to `f32`) and `dims`.
pub(super) fn f32s(v: &[f64], dims: &[usize]) -> Tensor {
    tensor(TensorData::F32(v.iter().map(|&x| x as f32).collect()), dims)
}

/// Asserts that the elements of `got` are `want` within `1e-5 · (1 + |want|)`, NaN where
/// `want` is NaN.
pub(super) fn close(got: &Tensor, want: &[f64]) {
    let got = values(got);
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        let ok = (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-5 * (1.0 + w.abs());
        assert!(ok, "{got:?} vs {want:?}");
    }
}

/// A FLOATS attribute.
pub(super) fn attr_floats(name: &str, v: &[f32]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::FLOATS,
        floats: v.to_vec(),
        ..Default::default()
    }
}
