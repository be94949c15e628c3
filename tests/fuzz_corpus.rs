//! The checked-in seed corpus of the ONNX-import fuzz target (`fuzz/corpus/onnx_import/`,
//! written by `scripts/make-fuzz-corpus.py`) stays valid: every model is there, imports, and
//! runs on INTERPRETER and CPU-JIT with the same results, so a change to the importer that
//! breaks a seed fails here instead of leaving the fuzzer to start from rejected inputs.

use std::path::PathBuf;

use graphlift::onnx::import_model_file;
use graphlift::{Backend, ElementType, Tensor, TensorData};

/// The operators with a seed, one `<Op>.onnx` each (the script's list).
const OPERATORS: &[&str] = &[
    "Resize",
    "Pad",
    "ConvTranspose",
    "Gemm",
    "Split",
    "LogSoftmax",
    "AveragePool",
    "GlobalMaxPool",
    "ArgMax",
    "ArgMin",
    "Tile",
    "Range",
    "Size",
    "DepthToSpace",
    "SpaceToDepth",
    "Trilu",
    "IsNaN",
    "IsInf",
    "CumSum",
    "LSTM",
    "GRU",
    "RNN",
    "GatherElements",
    "GatherND",
    "OneHot",
    "InstanceNormalization",
    "GroupNormalization",
    "TopK",
    "ScatterND",
    "ScatterElements",
    "Einsum",
    "Mod",
    "QuantizeLinear",
    "DequantizeLinear",
    "DynamicQuantizeLinear",
    "MatMulInteger",
    "ConvInteger",
    "QLinearMatMul",
    "QLinearConv",
    "Sin",
    "Cos",
    "Tan",
    "Asin",
    "Acos",
    "Atan",
    "Sinh",
    "Cosh",
    "Asinh",
    "Acosh",
    "Atanh",
    "NonZero",
    "NonMaxSuppression",
    "If",
    "Loop",
    "Scan",
    "Dropout",
    "Upsample",
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "Hardmax",
    "LpNormalization",
    "MeanVarianceNormalization",
    "Shrink",
    "LRN",
    "EyeLike",
    "Swish",
    "Attention",
    "RMSNormalization",
    "RotaryEmbedding",
    "GridSample",
    "AffineGrid",
    "DFT",
    "STFT",
    "HannWindow",
    "HammingWindow",
    "BlackmanWindow",
    "MelWeightMatrix",
    "LpPool",
    "GlobalLpPool",
    "MaxUnpool",
    "ReverseSequence",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "BitwiseNot",
    "BitShift",
    "CenterCropPad",
    "Compress",
];

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/onnx_import")
}

/// Deterministic input data of `t` and `len` elements: floats in `(-0.95, 0.95)` (inside
/// every domain but `Acosh`'s, whose NaNs must agree too), small integers, alternating bools.
fn input(t: ElementType, len: usize) -> TensorData {
    let values: Vec<f64> = (0..len)
        .map(|i| match t {
            ElementType::Bool => (i % 2) as f64,
            _ if t.is_float() => ((i as f64 * 0.618_034) % 1.0) * 1.9 - 0.95,
            _ => (i * 5 % 7) as f64,
        })
        .collect();
    TensorData::from_f64(t, &values)
}

#[test]
fn every_corpus_model_imports_and_runs_alike_on_both_backends() {
    let mut files: Vec<String> = std::fs::read_dir(corpus_dir())
        .expect("fuzz/corpus/onnx_import exists")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".onnx").map(str::to_string))
        .collect();
    files.sort();
    let mut want: Vec<String> = OPERATORS.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(files, want, "the corpus holds one model per operator");

    for op in OPERATORS {
        let path = corpus_dir().join(format!("{op}.onnx"));
        let model = import_model_file(&path).unwrap_or_else(|e| panic!("{op}: {e}"));
        let inputs: Vec<Tensor> = model
            .function
            .parameter_types()
            .iter()
            .map(|t| {
                let data = input(t.element_type, t.shape.element_count().unwrap());
                Tensor::from_data(data, t.shape.clone()).unwrap()
            })
            .collect();
        let mut results = Vec::new();
        for backend in ["INTERPRETER", "CPU-JIT"] {
            let exe = Backend::create(backend)
                .unwrap()
                .compile(&model.function)
                .unwrap_or_else(|e| panic!("{op} on {backend}: {e}"));
            let out = exe
                .run(&inputs)
                .unwrap_or_else(|e| panic!("{op} on {backend}: {e}"));
            assert_eq!(out.len(), model.outputs.len(), "{op} on {backend}");
            results.push(out);
        }
        for (k, (a, b)) in results[0].iter().zip(&results[1]).enumerate() {
            assert_eq!(a.element_type(), b.element_type(), "{op} output {k}");
            assert_eq!(a.shape(), b.shape(), "{op} output {k}");
            for i in 0..a.data().len() {
                let (x, y) = (a.data().get_f64(i).unwrap(), b.data().get_f64(i).unwrap());
                assert!(
                    x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-5 * (1.0 + x.abs()),
                    "{op} output {k}[{i}]: INTERPRETER {x}, CPU-JIT {y}"
                );
            }
        }
    }
}
