//! Tracing a stateful call on the INTERPRETER: the trace holds the variables' values at the
//! start of the call and the reads and assigns in execution order, and the collected
//! Function (also after a save and load) repeats the call's variable updates bit for bit.

use std::sync::Arc;

use graphlift_ir::{ElementType::F32, Function, FunctionBuilder, Op};
use graphlift_runtime::trace::{CallRecorder, CallTrace, Trace, Tracer, ValueSource};
use graphlift_runtime::{Backend, Executable, InterpreterBackend, RuntimeError, Tensor};

/// `y = w * x` (reads w before its assign), `w = w * 0.5 + x`, `z = w + 1` (reads the new
/// w), `count = count + 1`; results `[y, z, count]`.
fn stateful() -> Function {
    let b = FunctionBuilder::new("stateful");
    let x = b.parameter("x", F32, [3]);
    let w = b.variable("w", b.constant(vec![0.1f32, 1.0 / 3.0, -2.5], [3]));
    let count = b.variable("count", b.scalar(F32, 0.0));
    let y = (w * x).named("y");
    b.assign(w, w * 0.5 + x).named("update_w");
    let z = (w + 1.0).named("z");
    b.assign(count, count + 1.0).named("tick");
    b.finish(&[y, z, count]).unwrap()
}

fn compile(f: &Function) -> Arc<dyn Executable> {
    InterpreterBackend.compile(f).unwrap()
}

fn input() -> Vec<Tensor> {
    vec![Tensor::from_vec(vec![0.7f32, -1.0 / 7.0, 3.25], [3]).unwrap()]
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.read::<f32>()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

/// Every variable of `exe`, by name, as bit patterns.
fn variable_bits(exe: &dyn Executable) -> Vec<(String, Vec<u32>)> {
    exe.variables()
        .into_iter()
        .map(|s| (s.name.clone(), bits(&exe.variable(&s.name).unwrap())))
        .collect()
}

/// Runs `exe` twice untraced (so its variables are no longer their initial values), then
/// once traced; returns the trace and the traced call's outputs.
fn trace_third_call(exe: &dyn Executable) -> (Trace, Vec<Tensor>) {
    exe.run(&input()).unwrap();
    exe.run(&input()).unwrap();
    let tracer = Tracer::start();
    let out = exe.run(&input()).unwrap();
    (tracer.finish(), out)
}

/// Compiles the collected Function of `call`, runs it once, and checks its outputs and
/// variables against the original's after the traced call, bit for bit.
fn check_replay(call: &CallTrace, original: &dyn Executable, traced_out: &[Tensor]) {
    let collected = call.collect().unwrap();
    assert_eq!(collected.variables().count(), 2);
    assert_eq!(collected.sinks().len(), 2, "both assigns are sinks");
    let replay = compile(&collected);
    let out = replay.run(&input()).unwrap();
    let out_bits: Vec<_> = out.iter().map(bits).collect();
    let want_bits: Vec<_> = traced_out.iter().map(bits).collect();
    assert_eq!(out_bits, want_bits);
    assert_eq!(variable_bits(&*replay), variable_bits(original));
}

#[test]
fn a_traced_stateful_call_records_variables_reads_and_assigns() {
    let exe = compile(&stateful());
    exe.run(&input()).unwrap();
    let before = variable_bits(&*exe);
    let tracer = Tracer::start();
    exe.run(&input()).unwrap();
    let call = &tracer.finish().calls[0];
    let recorded: Vec<_> = call
        .variables
        .iter()
        .map(|v| (v.name.clone(), bits(&v.value)))
        .collect();
    assert_eq!(recorded, before, "the values at the start of the call");
    let state: Vec<(&str, ValueSource)> = call
        .records
        .iter()
        .filter(|r| matches!(r.op, Op::ReadVariable | Op::Assign))
        .map(|r| (r.op.type_name(), r.inputs[0].source))
        .collect();
    let w = call.variables.iter().position(|v| v.name == "w").unwrap();
    let reads_w: Vec<&str> = state
        .iter()
        .filter(|(_, s)| *s == ValueSource::Variable(w))
        .map(|(op, _)| *op)
        .collect();
    // y's read and the update's read, the assign, then z's read.
    assert_eq!(
        reads_w,
        ["ReadVariable", "ReadVariable", "Assign", "ReadVariable"]
    );
    assert_eq!(state.len(), 7, "{state:?}");
}

#[test]
fn the_collected_function_repeats_the_variable_updates() {
    let exe = compile(&stateful());
    let (trace, out) = trace_third_call(&*exe);
    check_replay(&trace.calls[0], &*exe, &out);
}

#[test]
fn a_saved_and_loaded_trace_repeats_the_variable_updates() {
    let exe = compile(&stateful());
    let (trace, out) = trace_third_call(&*exe);
    let path = std::env::temp_dir().join(format!(
        "graphlift-rt-trace-state-{}.json",
        std::process::id()
    ));
    trace.save(&path).unwrap();
    let loaded = Trace::load(&path);
    let _ = std::fs::remove_file(&path);
    let loaded = loaded.unwrap();
    assert_eq!(loaded, trace);
    check_replay(&loaded.calls[0], &*exe, &out);
}

#[test]
fn a_trace_file_naming_a_missing_variable_is_refused() {
    let exe = compile(&stateful());
    let (trace, _) = trace_third_call(&*exe);
    let text = trace.to_json().unwrap();
    assert!(text.contains("\"variable\": \"count\""), "{text}");
    let bad = text.replace("\"variable\": \"count\"", "\"variable\": \"counter\"");
    let e = Trace::from_json(&bad).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::Trace(m) if m.contains("`counter`") && m.contains("w, count")),
        "{e}"
    );
    let bad_op = text.replacen("\"op\": \"Assign\"", "\"op\": \"Store\"", 1);
    let e = Trace::from_json(&bad_op).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::Trace(m) if m.contains("`Store`")),
        "{e}"
    );
}

#[test]
fn the_chrome_export_names_the_variables_of_reads_and_assigns() {
    let exe = compile(&stateful());
    let (trace, _) = trace_third_call(&*exe);
    let doc: serde_json::Value = serde_json::from_str(&trace.to_chrome_json()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let call = events.iter().find(|e| e["cat"] == "call").unwrap();
    assert_eq!(
        call["args"]["variables"],
        serde_json::json!(["w: f32[3]", "count: f32[]"])
    );
    let tick = events.iter().find(|e| e["name"] == "tick").unwrap();
    assert_eq!(tick["args"]["op"], "Assign");
    assert_eq!(tick["args"]["variable"], "count");
    let reads = events
        .iter()
        .filter(|e| e["args"]["op"] == "ReadVariable" && e["args"]["variable"] == "w")
        .count();
    assert_eq!(reads, 3);
}

#[test]
fn a_recorder_not_given_the_variables_does_not_commit() {
    let f = stateful();
    let tracer = Tracer::start();
    let recorder = CallRecorder::begin(&f, "TEST").unwrap();
    let e = recorder.finish(&f).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::Trace(m) if m.contains("record_variables") && m.contains("`w`")),
        "{e}"
    );
    assert!(tracer.finish().is_empty());
}
