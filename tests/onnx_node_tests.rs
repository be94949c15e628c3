//! Conformance: the ONNX backend node tests of onnx 1.22.0 on every graphlift backend.
//!
//! The data (`<test>/model.onnx` and `<test>/test_data_set_N/{input,output}_K.pb`) ships in
//! the onnx wheel; `bash scripts/fetch-onnx-tests.sh` extracts it into
//! `target/onnx-node-tests/node` (or set `GRAPHLIFT_ONNX_NODE_TESTS` to a directory holding
//! the test directories). Without the data this test fails and says so.
//!
//! Selected: every test whose model uses only operators graphlift imports
//! ([`graphlift::onnx::SUPPORTED_OPS`], which includes the operators the `_expanded` variants
//! inline, such as `Constant` and `CastLike`), plus every test named after one of the
//! operators of [`LISTED`] (`test_<op>` or `test_<op>_*`). Each runs on every backend of
//! [`BACKENDS`] through `graphlift::Backend::create`, and every output is compared with
//! `|got - want| <= ATOL + RTOL * |want|` (NaN equals NaN; integers and booleans exactly).
//!
//! A case whose types graphlift does not have (sequences, optionals, ...)
//! or that uses a documented unsupported feature of a supported operator (training-mode
//! `BatchNormalization` and `Dropout`, `LayerNormalization`'s statistics outputs:
//! [`graphlift::onnx::OnnxError::UnsupportedFeature`]) is unsupported; such cases
//! are a checked-in list with reasons ([`EXPECTED_UNSUPPORTED`]). A case that is
//! unsupported and not on the list (or for another reason than its line gives), a listed
//! case that now runs, and every other failure fail the test, which lists each with its
//! error. A shape-like operand that a graph input gives (`Resize` scales, `Pad` pads:
//! [`graphlift::onnx::OnnxError::RunTimeOperand`]) is given to the importer from the data
//! set ([`graphlift::onnx::ImportOptions::input_values`]). A case whose model draws random
//! numbers ([`RANDOM_OPS`]: the reference outputs are numpy's own draws, which no other
//! generator reproduces) is random by design: its outputs are checked for element type,
//! shape and finite values, and counted apart. On CPU-JIT, every fused kernel's
//! provenance must name the ONNX nodes of all the ops it contains, and only those
//! (`support/kernel_provenance.rs`).

#[path = "support/kernel_provenance.rs"]
mod kernel_provenance;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use graphlift::onnx::prost::Message;
use graphlift::onnx::proto::ModelProto;
use graphlift::onnx::{
    import_model_file_binding, import_model_file_with, read_tensor_proto, ImportOptions,
    NamedTensor, OnnxError, SUPPORTED_OPS,
};
use graphlift::{Backend, Tensor};

/// The backends every case runs on.
const BACKENDS: &[&str] = &["INTERPRETER", "CPU-JIT"];

/// Relative tolerance of float comparisons.
const RTOL: f64 = 1e-5;
/// Absolute tolerance of float comparisons.
const ATOL: f64 = 1e-6;
/// Relative (and absolute) tolerance of `f16` outputs: 4 units in the last place (2^-10
/// apart near 1).
const HALF_RTOL: f64 = 4.0 / 1024.0;
/// The same for `bf16` (2^-7 apart near 1).
const BF16_RTOL: f64 = 4.0 / 128.0;

/// The checked-in list of the cases expected to be unsupported, relative to the package:
/// `test_name: reason-prefix` per line (see the file's header).
const EXPECTED_UNSUPPORTED: &str = "tests/onnx_node_tests/expected_unsupported.txt";

/// The cases of [`EXPECTED_UNSUPPORTED`] with their reason prefixes.
fn expected_unsupported() -> std::collections::BTreeMap<String, String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(EXPECTED_UNSUPPORTED);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut list = std::collections::BTreeMap::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, prefix)) = line.split_once(": ") else {
            panic!(
                "{}:{}: expected `test_name: reason-prefix`",
                path.display(),
                k + 1
            );
        };
        let previous = list.insert(name.to_string(), prefix.to_string());
        assert!(
            previous.is_none(),
            "{}:{}: {name} is listed twice",
            path.display(),
            k + 1
        );
    }
    list
}

/// Cases whose expected outputs the ONNX test writes rounded, with the absolute tolerance
/// that rounding needs (instead of [`ATOL`]) and why.
const ROUNDED: &[(&str, f64, &str)] = &[
    (
        "test_averagepool_2d_ceil_last_window_starts_on_pad",
        1e-4,
        "the expected averages are written with 4 decimals (0.1511 for 0.151055...)",
    ),
    (
        "test_gridsample_bicubic",
        1e-4,
        "the expected samples are written with 4 decimals (-0.1406 for -0.140625)",
    ),
];

/// The operators of the conformance contract, with the stem of the ONNX test names for each
/// (`test_<stem>` and `test_<stem>_*` are selected whatever ops their models use). The
/// helpers the `_expanded` variants inline (`Constant`, `CastLike`) are not listed: tests
/// using them are selected by their models' ops (a name stem `constant` would also select
/// `test_constant_pad`, which is about `Pad`).
const LISTED: &[(&str, &str)] = &[
    ("Add", "add"),
    ("Sub", "sub"),
    ("Mul", "mul"),
    ("Div", "div"),
    ("Neg", "neg"),
    ("Abs", "abs"),
    ("Relu", "relu"),
    ("LeakyRelu", "leakyrelu"),
    ("Elu", "elu"),
    ("Selu", "selu"),
    ("Celu", "celu"),
    ("Sigmoid", "sigmoid"),
    ("HardSigmoid", "hardsigmoid"),
    ("HardSwish", "hardswish"),
    ("Tanh", "tanh"),
    ("Exp", "exp"),
    ("Log", "log"),
    ("Sqrt", "sqrt"),
    ("Reciprocal", "reciprocal"),
    ("Pow", "pow"),
    ("Max", "max"),
    ("Min", "min"),
    ("Sum", "sum"),
    ("Mean", "mean"),
    ("Clip", "clip"),
    ("Softplus", "softplus"),
    ("Softsign", "softsign"),
    ("Erf", "erf"),
    ("Sin", "sin"),
    ("Cos", "cos"),
    ("Tan", "tan"),
    ("Asin", "asin"),
    ("Acos", "acos"),
    ("Atan", "atan"),
    ("Sinh", "sinh"),
    ("Cosh", "cosh"),
    ("Asinh", "asinh"),
    ("Acosh", "acosh"),
    ("Atanh", "atanh"),
    ("Gelu", "gelu"),
    ("Mish", "mish"),
    ("Sign", "sign"),
    ("Floor", "floor"),
    ("Ceil", "ceil"),
    ("Round", "round"),
    ("Where", "where"),
    ("Equal", "equal"),
    ("Less", "less"),
    ("Greater", "greater"),
    ("LessOrEqual", "less_equal"),
    ("GreaterOrEqual", "greater_equal"),
    ("Not", "not"),
    ("And", "and"),
    ("Or", "or"),
    ("Xor", "xor"),
    ("Cast", "cast"),
    ("PRelu", "prelu"),
    ("ThresholdedRelu", "thresholdedrelu"),
    ("Identity", "identity"),
    ("If", "if"),
    ("Loop", "loop11"),
    ("Loop", "loop13_seq"),
    ("Loop", "loop16_seq_none"),
    ("Scan", "scan"),
    ("Scan", "scan9"),
    ("Resize", "resize"),
    ("ConvTranspose", "convtranspose"),
    ("AveragePool", "averagepool"),
    ("GlobalMaxPool", "globalmaxpool"),
    ("Gemm", "gemm"),
    ("Split", "split"),
    ("LogSoftmax", "logsoftmax"),
    ("ArgMax", "argmax"),
    ("ArgMin", "argmin"),
    ("Tile", "tile"),
    ("Range", "range"),
    ("Size", "size"),
    ("DepthToSpace", "depthtospace"),
    ("SpaceToDepth", "spacetodepth"),
    ("Trilu", "tril"),
    ("Trilu", "triu"),
    ("IsNaN", "isnan"),
    ("IsInf", "isinf"),
    ("CumSum", "cumsum"),
    ("LSTM", "lstm"),
    ("GRU", "gru"),
    ("RNN", "rnn"),
    ("RNN", "simple_rnn"),
    ("InstanceNormalization", "instancenorm"),
    ("GroupNormalization", "group_normalization"),
    ("GatherElements", "gather_elements"),
    ("GatherND", "gathernd"),
    ("OneHot", "onehot"),
    ("TopK", "top_k"),
    ("Scatter", "scatter"),
    ("ScatterElements", "scatter_elements"),
    ("ScatterND", "scatternd"),
    ("Einsum", "einsum"),
    ("Mod", "mod"),
    ("NonZero", "nonzero"),
    ("Dropout", "dropout"),
    ("Upsample", "upsample"),
    ("ReduceL1", "reduce_l1"),
    ("ReduceL2", "reduce_l2"),
    ("ReduceSumSquare", "reduce_sum_square"),
    ("ReduceLogSum", "reduce_log_sum"),
    ("ReduceLogSumExp", "reduce_log_sum_exp"),
    ("Hardmax", "hardmax"),
    ("LpNormalization", "lpnormalization"),
    ("LpNormalization", "l1normalization"),
    ("LpNormalization", "l2normalization"),
    ("MeanVarianceNormalization", "mvn"),
    ("Shrink", "shrink"),
    ("LRN", "lrn"),
    ("EyeLike", "eyelike"),
    ("Swish", "swish"),
    ("Attention", "attention"),
    ("RMSNormalization", "rms_normalization"),
    ("RotaryEmbedding", "rotary_embedding"),
    ("NonMaxSuppression", "nonmaxsuppression"),
    ("GridSample", "gridsample"),
    ("AffineGrid", "affine_grid"),
    ("LpPool", "lppool"),
    ("ReverseSequence", "reversesequence"),
    ("BitwiseAnd", "bitwise_and"),
    ("BitwiseOr", "bitwise_or"),
    ("BitwiseXor", "bitwise_xor"),
    ("BitwiseNot", "bitwise_not"),
    ("BitShift", "bitshift"),
    ("CenterCropPad", "center_crop_pad"),
    ("Compress", "compress"),
    ("MaxUnpool", "maxunpool"),
    ("GlobalLpPool", "globallppool"),
    ("DFT", "dft"),
    ("STFT", "stft"),
    ("HannWindow", "hannwindow"),
    ("HammingWindow", "hammingwindow"),
    ("BlackmanWindow", "blackmanwindow"),
    ("MelWeightMatrix", "melweightmatrix"),
];

/// At least this many cases must pass on each backend (guards against a selection that
/// silently shrinks).
const MIN_PASSED: usize = 700;

/// Operators whose outputs are random by design (ONNX `RandomUniform`, `RandomNormal`, their
/// `Like` forms, and `Bernoulli` and `Multinomial`, whose expanded tests use them).
const RANDOM_OPS: &[&str] = &[
    "RandomUniform",
    "RandomNormal",
    "RandomUniformLike",
    "RandomNormalLike",
    "Bernoulli",
    "Multinomial",
];

enum Outcome {
    Passed,
    /// Ran, outputs of the expected types and shapes, values not compared (random by design).
    Random,
    Unsupported(String),
    Failed(String),
}

fn data_dir() -> PathBuf {
    match std::env::var_os("GRAPHLIFT_ONNX_NODE_TESTS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/onnx-node-tests/node"),
    }
}

/// `(domain, op_type)` of every node of a model.
fn model_ops(path: &Path) -> Result<BTreeSet<(String, String)>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let model =
        ModelProto::decode(bytes.as_slice()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(model
        .graph
        .map(|g| g.node.into_iter().map(|n| (n.domain, n.op_type)).collect())
        .unwrap_or_default())
}

/// The ONNX element types of the core share: FLOAT, DOUBLE, INT32, INT64, BOOL.
const CORE_TYPES: &[i32] = &[1, 11, 6, 7, 9];

/// At least this share of the cases whose graph inputs and outputs all have a
/// [`CORE_TYPES`] element type passes on each backend.
const MIN_CORE_SHARE: f64 = 0.9;

/// Whether every graph input and output of a model is a tensor of a [`CORE_TYPES`] type.
fn of_core_types(path: &Path) -> Result<bool, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let model =
        ModelProto::decode(bytes.as_slice()).map_err(|e| format!("{}: {e}", path.display()))?;
    let graph = model.graph.unwrap_or_default();
    Ok(graph.input.iter().chain(&graph.output).all(|v| {
        v.r#type
            .as_ref()
            .and_then(|t| t.tensor_type.as_ref())
            .is_some_and(|t| CORE_TYPES.contains(&t.elem_type))
    }))
}

fn named_after_listed_op(test: &str) -> bool {
    let Some(rest) = test.strip_prefix("test_") else {
        return false;
    };
    LISTED.iter().any(|(_, stem)| {
        rest == *stem || rest.strip_prefix(stem).is_some_and(|r| r.starts_with('_'))
    })
}

fn selected(test_dir: &Path, name: &str) -> Result<bool, String> {
    if named_after_listed_op(name) {
        return Ok(true);
    }
    let ops = model_ops(&test_dir.join("model.onnx"))?;
    Ok(!ops.is_empty()
        && ops.iter().all(|(domain, op)| {
            (domain.is_empty() || domain == "ai.onnx") && SUPPORTED_OPS.contains(&op.as_str())
        }))
}

/// `prefix_0.pb`, `prefix_1.pb`, ... of a data set directory, in order.
fn read_tensors(dir: &Path, prefix: &str) -> Result<Vec<NamedTensor>, Outcome> {
    let mut out = Vec::new();
    for k in 0.. {
        let path = dir.join(format!("{prefix}_{k}.pb"));
        if !path.exists() {
            break;
        }
        let bytes = std::fs::read(&path)
            .map_err(|e| Outcome::Failed(format!("{}: {e}", path.display())))?;
        let t = read_tensor_proto(&bytes).map_err(|e| {
            let msg = format!("{}: {e}", path.display());
            if e.is_unsupported_type() {
                Outcome::Unsupported(msg)
            } else {
                Outcome::Failed(msg)
            }
        })?;
        out.push(t);
    }
    Ok(out)
}

/// Compares one output: floats with the shared allclose rule of
/// [`graphlift::runtime::compare`] and absolute tolerance `atol` (NaN equals NaN,
/// infinities must be equal), integers, booleans and strings exactly.
fn compare(got: &Tensor, want: &NamedTensor, atol: f64) -> Result<(), String> {
    let want = Tensor::from_data(want.data.clone(), want.shape.clone())
        .map_err(|e| format!("expected output: {e}"))?;
    if want.element_type() == graphlift::ElementType::String {
        let c = graphlift::runtime::compare(got, &want, 0.0, 0.0);
        return if c.passed() {
            Ok(())
        } else {
            Err(c.to_string())
        };
    }
    if want.element_type().is_float() {
        // A 16-bit float result is rounded once per op: a chain of ops (the expanded
        // attention tests) ends a few units in the last place from the reference's.
        let (rtol, atol) = match want.element_type() {
            graphlift::ElementType::F16 => (HALF_RTOL, atol.max(HALF_RTOL)),
            graphlift::ElementType::BF16 => (BF16_RTOL, atol.max(BF16_RTOL)),
            _ => (RTOL, atol),
        };
        let c = graphlift::runtime::compare(got, &want, rtol, atol);
        return if c.passed() {
            Ok(())
        } else {
            Err(c.to_string())
        };
    }
    if got.tensor_type() != want.tensor_type() {
        return Err(format!(
            "type mismatch: got {}, expected {}",
            got.tensor_type(),
            want.tensor_type()
        ));
    }
    if got.data() == want.data() {
        return Ok(());
    }
    let n = want.len();
    let differ: Vec<usize> = (0..n)
        .filter(|&i| got.data().get_f64(i) != want.data().get_f64(i))
        .collect();
    let first = differ.first().copied().unwrap_or(0);
    Err(format!(
        "{}/{n} elements differ (exact comparison); first at index {first}: got {:?}, expected {:?}",
        differ.len().max(1),
        got.data().get_f64(first),
        want.data().get_f64(first)
    ))
}

/// Checks an output that is random by design: the expected element type and shape, and
/// finite values.
fn compare_random(got: &Tensor, want: &NamedTensor) -> Result<(), String> {
    let want = Tensor::from_data(want.data.clone(), want.shape.clone())
        .map_err(|e| format!("expected output: {e}"))?;
    if got.tensor_type() != want.tensor_type() {
        return Err(format!(
            "type mismatch: got {}, expected {}",
            got.tensor_type(),
            want.tensor_type()
        ));
    }
    match (0..got.len()).find(|&i| !got.data().get_f64(i).is_some_and(f64::is_finite)) {
        Some(i) => Err(format!("element {i} is not finite")),
        None => Ok(()),
    }
}

/// Runs one test directory on `backend`: each data set's inputs are given to the model
/// (those the importer needs as constants at import, the rest with the call).
fn run_case(test_dir: &Path, backend: &str) -> Outcome {
    let model_path = test_dir.join("model.onnx");
    let random = match model_ops(&model_path) {
        Ok(ops) => ops.iter().any(|(_, op)| RANDOM_OPS.contains(&op.as_str())),
        Err(e) => return Outcome::Failed(e),
    };
    let case = test_dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let atol = ROUNDED
        .iter()
        .find(|(name, _, _)| *name == case)
        .map_or(ATOL, |&(_, atol, _)| atol);
    let mut sets: Vec<PathBuf> = match std::fs::read_dir(test_dir) {
        Ok(rd) => rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.is_dir()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("test_data_set_"))
            })
            .collect(),
        Err(e) => return Outcome::Failed(format!("{}: {e}", test_dir.display())),
    };
    sets.sort();
    if sets.is_empty() {
        return Outcome::Failed("no test_data_set_* directory".into());
    }
    // A model graphlift cannot import whatever the inputs (an unsupported operator or
    // type) is unsupported before its data is read.
    match import_model_file_with(&model_path, &ImportOptions::default()) {
        Err(OnnxError::RunTimeOperand { .. } | OnnxError::DataDependentShape { .. }) | Ok(_) => {}
        Err(e) if e.is_unsupported() => return Outcome::Unsupported(e.to_string()),
        Err(e) => return Outcome::Failed(format!("import: {e}")),
    }
    let be = match Backend::create(backend) {
        Ok(b) => b,
        Err(e) => return Outcome::Failed(format!("Backend::create({backend}): {e}")),
    };
    for set in &sets {
        let set_name = set
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let inputs = match read_tensors(set, "input") {
            Ok(v) => v,
            Err(o) => return o,
        };
        let expected = match read_tensors(set, "output") {
            Ok(v) => v,
            Err(o) => return o,
        };
        let tensors = match inputs
            .into_iter()
            .map(|t| Tensor::from_data(t.data, t.shape))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(v) => v,
            Err(e) => return Outcome::Failed(format!("{set_name}: input: {e}")),
        };
        let compare_all = |outputs: &[Tensor], name: &dyn Fn(usize) -> String| {
            for (k, (got, want)) in outputs.iter().zip(&expected).enumerate() {
                let checked = if random {
                    compare_random(got, want)
                } else {
                    compare(got, want, atol)
                };
                if let Err(e) = checked {
                    return Err(Outcome::Failed(format!(
                        "{set_name}: output {k} `{}`: {e}",
                        name(k)
                    )));
                }
            }
            Ok(())
        };
        // The inputs whose values the import needs are bound there, not parameters.
        let (model, call) =
            match import_model_file_binding(&model_path, &ImportOptions::default(), &tensors) {
                Ok(m) => m,
                // A node of data-dependent shape (`NonZero`): the model runs in stages.
                Err(OnnxError::DataDependentShape { .. }) => {
                    let outputs = match run_in_stages(&model_path, backend, &tensors) {
                        Ok(o) if o.len() == expected.len() => o,
                        Ok(o) => {
                            return Outcome::Failed(format!(
                                "{set_name}: {} outputs, {} expected",
                                o.len(),
                                expected.len()
                            ))
                        }
                        Err(e) => return Outcome::Failed(format!("{set_name}: {e}")),
                    };
                    match compare_all(&outputs, &|k| format!("#{k}")) {
                        Ok(()) => continue,
                        Err(o) => return o,
                    }
                }
                Err(e) if e.is_unsupported() => return Outcome::Unsupported(e.to_string()),
                Err(e) => return Outcome::Failed(format!("import: {e}")),
            };
        if call.len() != model.inputs.len() || expected.len() != model.outputs.len() {
            return Outcome::Failed(format!(
                "{set_name}: {} inputs and {} outputs given, the model has {} and {}",
                call.len(),
                expected.len(),
                model.inputs.len(),
                model.outputs.len()
            ));
        }
        let exe = match catch_unwind(AssertUnwindSafe(|| be.compile(&model.function))) {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => return Outcome::Failed(format!("compile: {e}")),
            Err(_) => return Outcome::Failed("compile panicked".into()),
        };
        if backend == "CPU-JIT" {
            if let Err(e) = kernel_provenance::check(&model_path, &model.function, &exe.kernels()) {
                return Outcome::Failed(format!("kernel provenance: {e}"));
            }
        }
        let outputs = match catch_unwind(AssertUnwindSafe(|| exe.run(&call))) {
            Ok(Ok(o)) => o,
            Ok(Err(e)) => return Outcome::Failed(format!("{set_name}: run: {e}")),
            Err(_) => return Outcome::Failed(format!("{set_name}: run panicked")),
        };
        if let Err(o) = compare_all(&outputs, &|k| model.outputs[k].name.clone()) {
            return o;
        }
    }
    if random {
        Outcome::Random
    } else {
        Outcome::Passed
    }
}

/// Runs the model at `path` on `backend` through a [`graphlift::onnx::Session`], which
/// splits it at each node of data-dependent shape and runs that node between the stages.
fn run_in_stages(path: &Path, backend: &str, inputs: &[Tensor]) -> Result<Vec<Tensor>, String> {
    let be = Backend::create(backend).map_err(|e| format!("Backend::create({backend}): {e}"))?;
    let session = graphlift::onnx::Session::new(path, be).map_err(|e| e.to_string())?;
    match catch_unwind(AssertUnwindSafe(|| session.run(inputs))) {
        Ok(r) => r.map_err(|e| format!("run in stages: {e}")),
        Err(_) => Err("run in stages panicked".into()),
    }
}

#[test]
fn onnx_backend_node_tests() {
    for (op, _) in LISTED {
        assert!(
            SUPPORTED_OPS.contains(op),
            "{op} is listed but graphlift-onnx does not import it"
        );
    }
    let dir = data_dir();
    assert!(
        dir.is_dir(),
        "ONNX node test data not found at {}: run `bash scripts/fetch-onnx-tests.sh` first \
         (or set GRAPHLIFT_ONNX_NODE_TESTS to the directory holding the test_* directories)",
        dir.display()
    );
    let mut all: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .filter(|e| e.path().join("model.onnx").is_file())
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .collect();
    all.sort();
    let mut cases = Vec::new();
    let mut errors = Vec::new();
    for (name, path) in &all {
        match selected(path, name) {
            Ok(true) => cases.push((name.clone(), path.clone())),
            Ok(false) => {}
            Err(e) => errors.push(format!("{name}: reading the model: {e}")),
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));

    let expected = expected_unsupported();
    let mut failures = Vec::new();
    for name in expected.keys() {
        if !cases.iter().any(|(n, _)| n == name) {
            failures.push(format!(
                "{name}: listed in {EXPECTED_UNSUPPORTED} but not a selected test"
            ));
        }
    }
    let mut report = String::new();
    let mut unsupported: Vec<(String, String)> = Vec::new();
    let mut rows = Vec::new();
    let mut core_rows = Vec::new();
    let core: Vec<bool> = cases
        .iter()
        .map(|(_, path)| of_core_types(&path.join("model.onnx")).unwrap_or(false))
        .collect();
    for &backend in BACKENDS {
        let (mut passed, mut random, mut unsup, mut failed) = (0usize, 0usize, 0usize, 0usize);
        let mut core_passed = 0usize;
        for ((name, path), &is_core) in cases.iter().zip(&core) {
            let listed = expected.get(name);
            let outcome = match (run_case(path, backend), listed) {
                (Outcome::Unsupported(reason), None) => Outcome::Failed(format!(
                    "unsupported and not listed in {EXPECTED_UNSUPPORTED}: {reason}"
                )),
                (Outcome::Unsupported(reason), Some(prefix)) if !reason.starts_with(prefix) => {
                    Outcome::Failed(format!(
                        "unsupported for another reason than {EXPECTED_UNSUPPORTED} gives \
                         ({prefix}): {reason}"
                    ))
                }
                (o @ (Outcome::Passed | Outcome::Random), Some(_)) => {
                    failures.push(format!(
                        "[{backend}] {name}: now runs; remove it from {EXPECTED_UNSUPPORTED}"
                    ));
                    o
                }
                (o, _) => o,
            };
            if is_core && matches!(outcome, Outcome::Passed | Outcome::Random) {
                core_passed += 1;
            }
            match outcome {
                Outcome::Passed => passed += 1,
                Outcome::Random => random += 1,
                Outcome::Unsupported(reason) => {
                    unsup += 1;
                    if !unsupported.iter().any(|(n, _)| n == name) {
                        unsupported.push((name.clone(), reason));
                    }
                }
                Outcome::Failed(e) => {
                    failed += 1;
                    failures.push(format!("[{backend}] {name}: {e}"));
                }
            }
        }
        rows.push((backend, passed, random, unsup, failed));
        core_rows.push((backend, core_passed));
    }
    let core_total = core.iter().filter(|&&c| c).count();

    let _ = writeln!(
        report,
        "\nONNX backend node tests (onnx 1.22.0) in {}: {} selected of {}",
        dir.display(),
        cases.len(),
        all.len()
    );
    let _ = writeln!(
        report,
        "{:<14}{:>8}{:>8}{:>13}{:>8}   (random: outputs random by design, types and shapes checked)",
        "backend", "passed", "random", "unsupported", "failed"
    );
    for (b, p, r, u, f) in &rows {
        let _ = writeln!(report, "{b:<14}{p:>8}{r:>8}{u:>13}{f:>8}");
    }
    for (b, p) in &core_rows {
        let _ = writeln!(
            report,
            "{b:<14}{p} of the {core_total} cases of FLOAT, DOUBLE, INT32, INT64 and BOOL tensors \
             pass ({:.1} %)",
            100.0 * *p as f64 / core_total.max(1) as f64
        );
    }
    let _ = writeln!(report, "\nunsupported ({}):", unsupported.len());
    for (n, r) in &unsupported {
        let _ = writeln!(report, "  {n}: {r}");
    }
    if !failures.is_empty() {
        let _ = writeln!(report, "\nfailed ({}):", failures.len());
        for f in &failures {
            let _ = writeln!(report, "  {f}");
        }
    }
    println!("{report}");
    let report_path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("onnx-node-tests-report.txt");
    match std::fs::write(&report_path, &report) {
        Ok(()) => println!("report written to {}", report_path.display()),
        Err(e) => println!("could not write {}: {e}", report_path.display()),
    }
    assert!(
        failures.is_empty(),
        "{} ONNX node test case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    for (b, p, _, _, _) in &rows {
        assert!(
            *p >= MIN_PASSED,
            "only {p} cases passed on {b}; expected at least {MIN_PASSED}"
        );
    }
    for (b, p) in &core_rows {
        assert!(
            *p as f64 >= MIN_CORE_SHARE * core_total as f64,
            "{p} of {core_total} FLOAT/DOUBLE/INT32/INT64/BOOL cases pass on {b}; at least \
             {MIN_CORE_SHARE} of them must"
        );
    }
}
