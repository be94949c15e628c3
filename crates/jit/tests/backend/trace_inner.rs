//! Tracing inside fused native ops (issue 26 item 3): a CPU-JIT `Convolution`, `LayerNorm`
//! and `Attention` record their inner steps as nested records, which re-run to the op's
//! values, show in the Chrome export with estimated times, survive a trace file, and leave
//! the collected Function runnable.

use graphlift_ir::{
    Attention, Convolution, ElementType::F32, Function, FunctionBuilder, LayerNorm, Op, Window,
};
use graphlift_jit::CpuJitBackend;
use graphlift_runtime::trace::{
    CallTrace, OpRecord, StepKind, Timing, Trace, TracedResult, Tracer, ValueSource,
};
use graphlift_runtime::{compare, Backend, Executable, InterpreterBackend, Tensor, TensorSpec};

use super::uniform;

/// A grouped, strided, dilated, padded convolution; a LayerNorm over the last two axes; a
/// masked two-head attention: each op on Parameters, each a Result.
fn model() -> Function {
    let b = FunctionBuilder::new("inner");
    let x = b.parameter("x", F32, [2, 4, 7, 6]);
    let w = b.parameter("w", F32, [6, 2, 3, 2]);
    let conv = Op::Convolution(Convolution {
        window: Window {
            shape: vec![3, 2],
            strides: vec![2, 1],
            dilations: vec![1, 2],
            pads_begin: vec![1, 0],
            pads_end: vec![1, 1],
        },
        groups: 2,
    });
    let y = b.op(conv, &[x, w]).named("conv");
    let t = b.parameter("t", F32, [2, 3, 8]);
    let g = b.parameter("g", F32, [3, 8]);
    let be = b.parameter("be", F32, [3, 8]);
    let ln = Op::LayerNorm(LayerNorm {
        axis: 1,
        epsilon: 1e-5,
    });
    let n = b.op(ln, &[t, g, be]).named("ln");
    let q = b.parameter("q", F32, [2, 3, 8]);
    let k = b.parameter("k", F32, [2, 5, 8]);
    let v = b.parameter("v", F32, [2, 5, 6]);
    let mask = b.parameter("mask", F32, [2, 1, 1, 5]);
    let att = Op::Attention(Attention {
        heads: 2,
        scale: 0.5,
    });
    let a = b.op(att, &[q, k, v, mask]).named("attention");
    b.finish(&[y, n, a]).unwrap()
}

fn inputs(f: &Function) -> Vec<Tensor> {
    f.parameter_types()
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let n = t.shape.element_count().unwrap();
            Tensor::from_vec(uniform(n, 7 + i as u32), t.shape.dims()).unwrap()
        })
        .collect()
}

fn traced() -> (Trace, Vec<Tensor>, Vec<Tensor>) {
    let f = model();
    let exe = CpuJitBackend::new().compile_executable(&f).unwrap();
    let x = inputs(&f);
    let tracer = Tracer::start();
    let out = exe.run(&x).unwrap();
    (tracer.finish(), x, out)
}

fn record<'t>(trace: &'t Trace, op: &str) -> &'t OpRecord {
    trace.calls[0]
        .records
        .iter()
        .find(|r| r.op.type_name() == op)
        .unwrap_or_else(|| panic!("no {op} record"))
}

/// The nested records of `r` as a call of their own, collected into a Function.
fn inner_function(r: &OpRecord) -> Function {
    let last = r.children.len() - 1;
    CallTrace {
        function: format!("{} inner steps", r.name),
        backend: "CPU-JIT".into(),
        parameters: r
            .inputs
            .iter()
            .enumerate()
            .map(|(k, i)| TensorSpec {
                name: format!("input_{k}"),
                tensor_type: i.tensor_type.clone(),
            })
            .collect(),
        results: vec![TracedResult {
            name: "out".into(),
            source: ValueSource::Record {
                record: last,
                output: 0,
            },
            tensor_type: r.outputs[0].clone(),
        }],
        variables: Vec::new(),
        records: r.children.clone(),
        timing: Timing::default(),
    }
    .collect()
    .unwrap()
}

#[test]
fn fused_native_ops_nest_their_inner_steps_which_compute_their_values() {
    let (trace, x, out) = traced();
    let steps: [(&str, &[&str], usize); 3] = [
        (
            "Convolution",
            &["im2col/pad", "im2col/window 2,1", "im2col", "gemm"],
            0,
        ),
        ("LayerNorm", &["mean", "centre", "variance", "normalise"], 1),
        (
            "Attention",
            &[
                "heads/q",
                "scores = Q·Kᵀ·scale",
                "+ mask",
                "softmax",
                "· V",
                "merge heads",
            ],
            2,
        ),
    ];
    for (op, names, result) in steps {
        let r = record(&trace, op);
        assert_eq!(r.kind, StepKind::Native);
        let have: Vec<&str> = r.children.iter().map(|c| c.name.as_str()).collect();
        for n in names {
            assert!(have.contains(n), "{op}: no `{n}` in {have:?}");
        }
        assert!(r
            .children
            .iter()
            .all(|c| c.kind == StepKind::Fused && c.timing.is_none()));
        // The op's inputs are the model's parameters, in the op's input order.
        let params: Vec<Tensor> = r
            .inputs
            .iter()
            .map(|i| match i.source {
                ValueSource::CallInput(k) => x[k].clone(),
                s => panic!("{op} input from {s:?}"),
            })
            .collect();
        let got = InterpreterBackend
            .compile(&inner_function(r))
            .unwrap()
            .run(&params)
            .unwrap();
        let c = compare(&got[0], &out[result], 1e-5, 1e-5);
        assert!(c.passed(), "{op}'s inner steps: {c}");
    }
}

#[test]
fn the_chrome_export_shows_inner_steps_with_estimated_times_inside_the_op() {
    let (trace, _, _) = traced();
    let doc: serde_json::Value = serde_json::from_str(&trace.to_chrome_json()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let span = |name: &str| {
        let e = events
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no `{name}` event"));
        let ts = e["ts"].as_f64().unwrap();
        (ts, ts + e["dur"].as_f64().unwrap(), e)
    };
    let (c0, c1, _) = span("conv");
    for step in ["im2col", "gemm"] {
        let (s0, s1, e) = span(step);
        assert_eq!(e["args"]["estimated"], true);
        assert!(
            c0 <= s0 && s1 <= c1 + 1e-3,
            "{step} [{s0}, {s1}] outside [{c0}, {c1}]"
        );
    }
    for step in ["softmax", "· V", "mean", "normalise"] {
        span(step);
    }
}

#[test]
fn a_trace_with_inner_steps_saves_loads_and_collects_a_runnable_function() {
    let (trace, x, out) = traced();
    let path =
        std::env::temp_dir().join(format!("graphlift-trace-inner-{}.json", std::process::id()));
    trace.save(&path).unwrap();
    let loaded = Trace::load(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(loaded, trace);
    // Collecting keeps each fused op whole: the Function runs as the call did.
    let f = loaded.calls[0].collect().unwrap();
    let got = InterpreterBackend.compile(&f).unwrap().run(&x).unwrap();
    for (g, w) in got.iter().zip(&out) {
        let c = compare(g, w, 1e-5, 1e-5);
        assert!(c.passed(), "{c}");
    }
}
