//! Tracing CPU-JIT and INTERPRETER calls, and collecting traces back into Functions.

use graphlift_ir::{ElementType::F32, Function, FunctionBuilder, Op};
use graphlift_jit::CpuJitBackend;
use graphlift_passes::ExtractionConfig;
use graphlift_runtime::trace::{StepKind, Trace, Tracer};
use graphlift_runtime::{compare, Backend, Executable, InterpreterBackend, Tensor};

/// Two fusible regions split by an `Exp` the extraction config excludes, so the CPU-JIT
/// plan is kernel, native step, kernel; two results (one from the native step).
fn split_model() -> Function {
    let b = FunctionBuilder::new("split");
    let a = b.parameter("a", F32, [8]);
    let x = b.parameter("x", F32, [8]);
    let c = b.parameter("c", F32, [8]);
    let sum = (a + x).named("sum").tagged("onnx:Add_0");
    let prod = (sum * c).named("prod").tagged("onnx:Mul_1");
    let act = prod.relu().named("act").tagged("onnx:Relu_2");
    let ex = (act * act.scalar_like(0.25))
        .named("scaled")
        .exp()
        .named("ex")
        .tagged("onnx:Exp_3");
    let diff = (ex - a).named("diff");
    let out = (diff * x.tanh().named("th"))
        .named("out")
        .tagged("onnx:Mul_5");
    b.finish(&[out, ex]).unwrap()
}

fn inputs() -> Vec<Tensor> {
    let v = |k: f32| {
        Tensor::from_vec(
            (0..8)
                .map(|i| (i as f32 - 3.5) * 0.37 * k)
                .collect::<Vec<_>>(),
            [8],
        )
        .unwrap()
    };
    vec![v(1.0), v(-0.6), v(1.3)]
}

fn jit() -> CpuJitBackend {
    CpuJitBackend::with_config(ExtractionConfig::default().exclude("Exp"))
}

fn assert_close(got: &[Tensor], want: &[Tensor]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        let c = compare(g, w, 1e-5, 1e-6);
        assert!(c.passed(), "{c}");
    }
}

fn assert_bit_exact(got: &[Tensor], want: &[Tensor]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        let (g, w) = (g.read::<f32>().unwrap(), w.read::<f32>().unwrap());
        assert_eq!(g.len(), w.len());
        assert!(
            g.iter().zip(w).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{g:?} != {w:?}"
        );
    }
}

#[test]
fn jit_trace_records_kernels_native_steps_and_nested_ops() {
    let exe = jit().compile_executable(&split_model()).unwrap();
    let tracer = Tracer::start();
    exe.run(&inputs()).unwrap();
    let trace = tracer.finish();
    assert_eq!(trace.calls.len(), 1);
    let call = &trace.calls[0];
    assert_eq!(call.backend, "CPU-JIT");
    let names: Vec<&str> = call.parameters.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["a", "x", "c"]);
    let kernels: Vec<_> = call
        .records
        .iter()
        .filter(|r| r.kind == StepKind::JitKernel)
        .collect();
    assert!(kernels.len() >= 2, "{:#?}", call.records);
    let ex = call.records.iter().find(|r| r.name == "ex").unwrap();
    assert_eq!(ex.kind, StepKind::Native);
    assert_eq!(ex.tags, ["onnx:Exp_3"]);
    assert!(ex.timing.is_some());
    for k in &kernels {
        assert!(matches!(k.op, Op::FusedKernel(_)));
        assert!(k.timing.is_some());
        assert!(!k.children.is_empty());
        assert!(k.children.iter().all(|c| c.timing.is_none()));
    }
    let nested: Vec<&str> = kernels
        .iter()
        .flat_map(|k| k.children.iter().map(|c| c.name.as_str()))
        .collect();
    for n in ["sum", "prod", "act", "diff", "out"] {
        assert!(nested.contains(&n), "{n} not in {nested:?}");
    }
}

#[test]
fn collected_jit_trace_reproduces_the_outputs_on_both_backends() {
    let f = split_model();
    let want = InterpreterBackend
        .compile(&f)
        .unwrap()
        .run(&inputs())
        .unwrap();
    let exe = jit().compile_executable(&f).unwrap();
    let tracer = Tracer::start();
    let got = exe.run(&inputs()).unwrap();
    let trace = tracer.finish();
    assert_close(&got, &want);

    let collected = trace.calls[0].collect().unwrap();
    assert!(collected.node_by_name("ex").is_some());
    let on_interp = InterpreterBackend
        .compile(&collected)
        .unwrap()
        .run(&inputs())
        .unwrap();
    // On the reference the collected Function is bit-exact with the original model.
    assert_bit_exact(&on_interp, &want);
    assert_close(&on_interp, &got);
    let on_jit = jit()
        .compile_executable(&collected)
        .unwrap()
        .run(&inputs())
        .unwrap();
    assert_close(&on_jit, &got);
    assert_close(&on_jit, &want);
}

#[test]
fn collected_interpreter_trace_is_bit_exact_and_keeps_names() {
    let f = split_model();
    let exe = InterpreterBackend.compile(&f).unwrap();
    let tracer = Tracer::start();
    let want = exe.run(&inputs()).unwrap();
    let trace = tracer.finish();
    let call = &trace.calls[0];
    assert!(call.records.iter().all(|r| r.kind == StepKind::Interpreted));

    let collected = call.collect().unwrap();
    for n in f.nodes() {
        if !matches!(n.op(), Op::Parameter) {
            let c = collected
                .node_by_name(n.name())
                .unwrap_or_else(|| panic!("{}", n.name()));
            assert_eq!(c.op(), n.op());
            assert_eq!(c.tags(), n.tags());
        }
    }
    let got = InterpreterBackend
        .compile(&collected)
        .unwrap()
        .run(&inputs())
        .unwrap();
    assert_bit_exact(&got, &want);
    // The CPU-JIT runs the same collected function within tolerance.
    let on_jit = jit()
        .compile_executable(&collected)
        .unwrap()
        .run(&inputs())
        .unwrap();
    assert_close(&on_jit, &want);
}

#[test]
fn jit_trace_round_trips_through_a_file_and_still_collects() {
    let exe = jit().compile_executable(&split_model()).unwrap();
    let tracer = Tracer::start();
    let want = exe.run(&inputs()).unwrap();
    let trace = tracer.finish();
    let path = std::env::temp_dir().join(format!("graphlift-trace-{}.json", std::process::id()));
    trace.save(&path).unwrap();
    let loaded = Trace::load(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(loaded.to_json().unwrap(), trace.to_json().unwrap());
    assert_eq!(loaded.calls[0].records.len(), trace.calls[0].records.len());
    let got = InterpreterBackend
        .compile(&loaded.calls[0].collect().unwrap())
        .unwrap()
        .run(&inputs())
        .unwrap();
    assert_close(&got, &want);
}

#[test]
fn chrome_export_nests_fused_ops_inside_their_kernel() {
    let exe = jit().compile_executable(&split_model()).unwrap();
    let tracer = Tracer::start();
    exe.run(&inputs()).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&tracer.finish().to_chrome_json()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let kernel = events.iter().find(|e| e["cat"] == "jit_kernel").unwrap();
    let (ts, dur) = (
        kernel["ts"].as_f64().unwrap(),
        kernel["dur"].as_f64().unwrap(),
    );
    let fused: Vec<_> = events.iter().filter(|e| e["cat"] == "fused").collect();
    assert!(!fused.is_empty());
    assert!(fused
        .iter()
        .all(|e| e["ph"] == "X" && e["args"]["estimated"] == true));
    assert!(fused.iter().any(|e| {
        let (t, d) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
        t >= ts && t + d <= ts + dur + 1e-9
    }));
}
