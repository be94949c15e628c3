//! Scope fusion of multi-head self-attention (the built-in `attention` pass): ONNX blocks
//! with PyTorch-style and TensorFlow-style scope names fuse into one `Attention` and agree
//! within 1e-5 with scope fusion off on CPU-JIT and the INTERPRETER; a look-alike is
//! refused with its reason; a gradient graph keeps its blocks unfused (its backward nodes
//! read their inner values); MiniLM's three blocks fuse and its outputs agree.

#[path = "support/onnx_graph.rs"]
mod onnx_graph;
use onnx_graph::{init, init_i64, int, ints, vi, Nodes};

#[path = "support/model_files.rs"]
mod model_files;
use model_files::{models_dir, read_npy};

use graphlift::ir::{ReduceOp, Reduction};
use graphlift::jit::CpuJitBackend;
use graphlift::onnx::proto::ModelProto;
use graphlift::onnx::{import_model, import_model_file_with, ImportOptions};
use graphlift::passes::{ScopeFusion, ScopeFusionRegistry};
use graphlift::{Backend, Executable, Function, FunctionBuilder, Op, Tensor, TensorData};

/// Batch, sequence, heads, head size; the model width is `H · D`.
const B: i64 = 2;
const S: i64 = 5;
const H: i64 = 2;
const D: i64 = 4;
const E: i64 = H * D;

const PT: &str = "/encoder/layer.0/attention/self";
const TF: &str = "bert/encoder/layer_0/attention/self";

/// How the block is written.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Spelling {
    /// PyTorch's BERT: keys transposed by one `[0, 2, 3, 1]`, `Div` by `sqrt(D)`, the
    /// additive mask a graph input.
    PyTorch,
    /// TF BERT through tf2onnx: keys transposed twice, `Mul` by `1/sqrt(D)`, the mask made
    /// inside the scope from a 0/1 input mask as `(1 - m) · -10000`.
    TensorFlow,
    /// PyTorch's, with the Softmax along the query axis (same names and op counts).
    LookAlike,
}

fn weights(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * 37 + seed * 11) % 23) as f32 - 11.0) * 0.06)
        .collect()
}

/// A self-attention block under `scope` on `x` `[B, S, E]`, then an output projection
/// outside it.
fn attention_model(scope: &str, sp: Spelling) -> ModelProto {
    let tf = sp == Spelling::TensorFlow;
    let mut n = Nodes::new(if tf { ":0" } else { "_output_0" });
    let at = |s: &str| format!("{scope}/{s}");
    let mut proj = |which: &str| {
        let m = n.add(
            "MatMul",
            &at(&format!("{which}/MatMul")),
            &["x", &format!("w_{which}")],
            vec![],
        );
        let add = if tf { "BiasAdd" } else { "Add" };
        n.add(
            "Add",
            &at(&format!("{which}/{add}")),
            &[&m, &format!("b_{which}")],
            vec![],
        )
    };
    let (q, k, v) = (proj("query"), proj("key"), proj("value"));
    let perm = |p: &[i64]| vec![ints("perm", p)];
    let split = |n: &mut Nodes, x: &str, r: &str, t: &str, p: &[i64]| {
        let r = n.add("Reshape", &at(r), &[x, "heads_shape"], vec![]);
        n.add("Transpose", &at(t), &[&r], perm(p))
    };
    let (q_h, k_t, v_h);
    let scores;
    let mask;
    if tf {
        q_h = split(&mut n, &q, "Reshape", "transpose", &[0, 2, 1, 3]);
        let k_h = split(&mut n, &k, "Reshape_1", "transpose_1", &[0, 2, 1, 3]);
        k_t = n.add(
            "Transpose",
            &at("MatMul__transpose_b"),
            &[&k_h],
            perm(&[0, 1, 3, 2]),
        );
        v_h = split(&mut n, &v, "Reshape_2", "transpose_2", &[0, 2, 1, 3]);
        let s = n.add("MatMul", &at("MatMul"), &[&q_h, &k_t], vec![]);
        scores = n.add("Mul", &at("Mul"), &[&s, "inv_sqrt_d"], vec![]);
        let m = n.add(
            "Reshape",
            &at("ExpandDims"),
            &["input_mask", "mask_shape"],
            vec![],
        );
        let keep = n.add("Sub", &at("sub"), &["one", &m], vec![]);
        mask = n.add("Mul", &at("mul_1"), &[&keep, "minus_10000"], vec![]);
    } else {
        let k4 = n.add("Reshape", &at("Reshape"), &[&k, "heads_shape"], vec![]);
        v_h = split(&mut n, &v, "Reshape_1", "Transpose", &[0, 2, 1, 3]);
        q_h = split(&mut n, &q, "Reshape_2", "Transpose_1", &[0, 2, 1, 3]);
        k_t = n.add("Transpose", &at("Transpose_2"), &[&k4], perm(&[0, 2, 3, 1]));
        let s = n.add("MatMul", &at("MatMul"), &[&q_h, &k_t], vec![]);
        scores = n.add("Div", &at("Div"), &[&s, "sqrt_d"], vec![]);
        mask = "mask".to_string();
    }
    let add = if tf { "add" } else { "Add" };
    let masked = n.add("Add", &at(add), &[&scores, &mask], vec![]);
    let axis = if sp == Spelling::LookAlike { 2 } else { -1 };
    let p = n.add(
        "Softmax",
        &at("Softmax"),
        &[&masked],
        vec![int("axis", axis)],
    );
    let c = n.add("MatMul", &at("MatMul_1"), &[&p, &v_h], vec![]);
    let t = if tf { "transpose_3" } else { "Transpose_3" };
    let ct = n.add("Transpose", &at(t), &[&c], perm(&[0, 2, 1, 3]));
    let merged = n.add("Reshape", &at("Reshape_3"), &[&ct, "model_shape"], vec![]);
    let dense = format!(
        "{}/output/dense/MatMul",
        scope.rsplit_once('/').map_or("", |s| s.0)
    );
    let out = n.add("MatMul", &dense, &[&merged, "w_out"], vec![]);
    let mut inits = vec![
        init_i64("heads_shape", &[B, S, H, D]),
        init_i64("model_shape", &[B, S, E]),
        init_i64("mask_shape", &[B, 1, 1, S]),
        init("sqrt_d", &[], vec![(D as f32).sqrt()]),
        init("inv_sqrt_d", &[], vec![1.0 / (D as f32).sqrt()]),
        init("one", &[], vec![1.0]),
        init("minus_10000", &[], vec![-10000.0]),
        init("w_out", &[E, E], weights((E * E) as usize, 9)),
    ];
    for (i, which) in ["query", "key", "value"].iter().enumerate() {
        inits.push(init(
            &format!("w_{which}"),
            &[E, E],
            weights((E * E) as usize, i),
        ));
        inits.push(init(
            &format!("b_{which}"),
            &[E],
            weights(E as usize, i + 5),
        ));
    }
    let mask_input = if tf {
        vi("input_mask", &[B, S])
    } else {
        vi("mask", &[B, 1, 1, S])
    };
    n.model(
        vec![vi("x", &[B, S, E]), mask_input],
        vec![vi(&out, &[B, S, E])],
        inits,
    )
}

/// `x`, and the mask: positions 3 and 4 of batch 1 masked out (additive for PyTorch's
/// spelling, 0/1 for TensorFlow's).
fn inputs(sp: Spelling) -> Vec<Tensor> {
    let x: Vec<f32> = (0..B * S * E)
        .map(|i| ((i * 13 % 17) as f32 - 8.0) * 0.25)
        .collect();
    let keep = |b: i64, s: i64| b == 0 || s < 3;
    let mask: Vec<f32> = (0..B * S)
        .map(|i| match (sp, keep(i / S, i % S)) {
            (Spelling::TensorFlow, k) => f32::from(u8::from(k)),
            (_, true) => 0.0,
            (_, false) => -10000.0,
        })
        .collect();
    let mask_dims = if sp == Spelling::TensorFlow {
        vec![B as usize, S as usize]
    } else {
        vec![B as usize, 1, 1, S as usize]
    };
    vec![
        Tensor::from_data(TensorData::F32(x), [B as usize, S as usize, E as usize]).unwrap(),
        Tensor::from_data(TensorData::F32(mask), mask_dims).unwrap(),
    ]
}

/// Every output, as `f64` (MiniLM has an `i64` one too).
fn run(exe: &dyn Executable, inputs: &[Tensor]) -> Vec<Vec<f64>> {
    let values = |d: &TensorData| (0..d.len()).filter_map(|i| d.get_f64(i)).collect();
    exe.run(inputs)
        .unwrap()
        .iter()
        .map(|t| values(t.data()))
        .collect()
}

fn assert_close(a: &[Vec<f64>], b: &[Vec<f64>], atol: f64) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.len(), y.len());
        for (p, q) in x.iter().zip(y) {
            assert!((p - q).abs() <= atol, "{p} vs {q}");
        }
    }
}

fn without_attention() -> ScopeFusionRegistry {
    let mut r = ScopeFusionRegistry::builtin();
    r.disable("attention").unwrap();
    r
}

fn fused_ops(f: &Function) -> (Function, Vec<String>) {
    let mut g = f.clone();
    let report = ScopeFusion::default().fuse(&mut g).unwrap();
    let ops = report
        .fused
        .iter()
        .map(|s| format!("{} {}", s.scope, s.op_type))
        .collect();
    (g, ops)
}

#[test]
fn pytorch_and_tensorflow_blocks_fuse_and_agree_on_both_backends() {
    for (scope, sp) in [(PT, Spelling::PyTorch), (TF, Spelling::TensorFlow)] {
        let f = import_model(&attention_model(scope, sp)).unwrap().function;
        let x = inputs(sp);
        let on = CpuJitBackend::new().compile_executable(&f).unwrap();
        let report = on.scope_fusion_report().unwrap();
        let fused: Vec<(&str, &str)> = report
            .fused
            .iter()
            .map(|s| (s.scope.as_str(), s.op_type.as_str()))
            .collect();
        assert_eq!(
            fused,
            [(scope.trim_start_matches('/'), "Attention")],
            "{report}"
        );
        let off = CpuJitBackend::new()
            .with_scope_fusion(without_attention())
            .compile_executable(&f)
            .unwrap();
        assert!(off.scope_fusion_report().unwrap().fused.is_empty());
        let want = run(&off, &x);
        assert_close(&run(&on, &x), &want, 1e-5);

        // The INTERPRETER runs no passes: it runs the fused function as given.
        let (g, ops) = fused_ops(&f);
        assert_eq!(ops.len(), 1, "{sp:?}");
        let projections = g.nodes().filter(|n| matches!(n.op(), Op::MatMul)).count();
        assert_eq!(
            projections, 4,
            "q, k, v and the output projection stay: {g}"
        );
        let interp = Backend::create("INTERPRETER").unwrap();
        assert_close(&run(&*interp.compile(&g).unwrap(), &x), &want, 1e-5);
        assert_close(&run(&*interp.compile(&f).unwrap(), &x), &want, 1e-5);
    }
}

#[test]
fn a_look_alike_block_is_left_alone_and_the_report_says_why() {
    let f = import_model(&attention_model(PT, Spelling::LookAlike))
        .unwrap()
        .function;
    let mut g = f.clone();
    let report = ScopeFusion::default().fuse(&mut g).unwrap();
    assert!(report.fused.is_empty(), "{report}");
    let failed = report
        .failed
        .iter()
        .find(|x| x.pass == "attention")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(failed.scope, PT.trim_start_matches('/'));
    assert!(failed.reason.contains("axis 2"), "{}", failed.reason);
    assert_eq!(g, f);
}

/// The gradient of the block's summed output with respect to `x`.
fn gradient(f: Function) -> Function {
    let b = FunctionBuilder::from_function(f.clone());
    let y = b.value_of(f.result_source(f.results()[0]).unwrap());
    let x = b.value_of(f.parameters()[0].into());
    let sum = Reduction {
        op: ReduceOp::Sum,
        axes: vec![0, 1, 2],
        keep_dims: false,
    };
    let c = b.op(Op::Reduce(sum), &[y]);
    let dx = b.deriv(c, x);
    b.finish(&[dx]).unwrap()
}

#[test]
fn a_gradient_graph_keeps_its_blocks_unfused_and_correct() {
    let f = import_model(&attention_model(PT, Spelling::PyTorch))
        .unwrap()
        .function;
    let grad = gradient(f);
    let (_, ops) = fused_ops(&grad);
    assert!(ops.is_empty(), "{ops:?}");
    let mut g = grad.clone();
    let report = ScopeFusion::default().fuse(&mut g).unwrap();
    let failed = report.failed.iter().find(|x| x.pass == "attention");
    assert!(failed.is_some(), "{report}");
    let x = inputs(Spelling::PyTorch);
    let jit = Backend::create("CPU-JIT").unwrap().compile(&grad).unwrap();
    let interp = Backend::create("INTERPRETER")
        .unwrap()
        .compile(&grad)
        .unwrap();
    assert_close(&run(&*jit, &x), &run(&*interp, &x), 1e-4);
}

/// Imports MiniLM with the shapes of `case`'s inputs.
fn minilm(case: &str) -> (Function, Vec<Tensor>) {
    let dir = models_dir();
    let inputs: Vec<Tensor> = (0..)
        .map(|i| dir.join(case).join(format!("input_{i}.npy")))
        .take_while(|p| p.exists())
        .map(|p| read_npy(&p))
        .collect();
    assert!(
        !inputs.is_empty(),
        "no {case} inputs (run scripts/fetch-models.sh)"
    );
    let options = ImportOptions {
        ordered_input_shapes: inputs.iter().map(|t| t.shape().dims().to_vec()).collect(),
        ..ImportOptions::default()
    };
    let path = dir.join("paraphrase-MiniLM-L3-v2.onnx");
    (
        import_model_file_with(&path, &options).unwrap().function,
        inputs,
    )
}

#[test]
fn minilm_fuses_its_three_attention_blocks_and_agrees_with_them_unfused() {
    for case in ["minilm_b1_s128", "minilm_b2_s7"] {
        let (f, x) = minilm(case);
        let on = CpuJitBackend::new().compile_executable(&f).unwrap();
        let report = on.scope_fusion_report().unwrap();
        let blocks: Vec<&str> = report
            .fused
            .iter()
            .filter(|s| s.op_type == "Attention")
            .map(|s| s.scope.as_str())
            .collect();
        let want: Vec<String> = (0..3)
            .map(|l| format!("model/model.0/auto_model/encoder/layer.{l}/attention/self"))
            .collect();
        assert_eq!(blocks, want, "{report}");
        let off = CpuJitBackend::new()
            .with_scope_fusion(without_attention())
            .compile_executable(&f)
            .unwrap();
        let unfused = run(&off, &x);
        assert_close(&run(&on, &x), &unfused, 1e-5);
        if case == "minilm_b2_s7" {
            let (g, _) = fused_ops(&f);
            let interp = Backend::create("INTERPRETER").unwrap();
            assert_close(&run(&*interp.compile(&g).unwrap(), &x), &unfused, 1e-5);
        }
    }
}
