//! Execution tracing on the INTERPRETER: scopes, threads, the default tracer, files.

use std::sync::{Arc, Barrier};

use graphlift_ir::{ElementType::F32, Function, FunctionBuilder};
use graphlift_runtime::trace::{self, StepKind, Trace, Tracer, ValueSource};
use graphlift_runtime::{Backend, Executable, InterpreterBackend, RuntimeError, Tensor};

fn model() -> Function {
    let b = FunctionBuilder::new("m");
    let x = b.parameter("x", F32, [4]);
    let y = b.parameter("y", F32, [4]);
    let s = (x + y).named("s").tagged("onnx:Add");
    let r = (s.relu().named("r") * x.scalar_like(2.0)).named("out");
    b.finish(&[r, x]).unwrap()
}

fn exe() -> Arc<dyn Executable> {
    InterpreterBackend.compile(&model()).unwrap()
}

fn inputs() -> Vec<Tensor> {
    vec![
        Tensor::from_vec(vec![-1.0f32, 0.5, 2.0, f32::NAN], [4]).unwrap(),
        Tensor::from_vec(vec![0.25f32, -3.0, 1.0, 4.0], [4]).unwrap(),
    ]
}

#[test]
fn no_tracer_records_nothing() {
    let exe = exe();
    assert!(trace::CallRecorder::begin(&model(), "INTERPRETER").is_none());
    exe.run(&inputs()).unwrap();
    let tracer = Tracer::start();
    let trace = tracer.finish();
    assert!(trace.is_empty());
    // A tracer started and dropped before the call sees nothing of it either.
    drop(Tracer::start());
    exe.run(&inputs()).unwrap();
    assert!(trace::take().is_empty());
}

#[test]
fn records_wiring_types_tags_and_results() {
    let tracer = Tracer::start();
    exe().run(&inputs()).unwrap();
    let trace = tracer.finish();
    let call = &trace.calls[0];
    assert_eq!(call.backend, "INTERPRETER");
    let s = call.records.iter().position(|r| r.name == "s").unwrap();
    let rec = &call.records[s];
    assert_eq!(rec.kind, StepKind::Interpreted);
    assert_eq!(rec.tags, ["onnx:Add"]);
    assert_eq!(
        rec.inputs.iter().map(|i| i.source).collect::<Vec<_>>(),
        [ValueSource::CallInput(0), ValueSource::CallInput(1)]
    );
    assert_eq!(rec.outputs[0].to_string(), "f32[4]");
    let r = call.records.iter().find(|r| r.name == "r").unwrap();
    assert_eq!(
        r.inputs[0].source,
        ValueSource::Record {
            record: s,
            output: 0
        }
    );
    assert_eq!(call.results.len(), 2);
    assert_eq!(call.results[1].source, ValueSource::CallInput(0));
    assert!(call.records.iter().all(|r| r.timing.is_some()));
}

#[test]
fn tracers_on_two_threads_see_only_their_own_calls() {
    let exe = exe();
    let barrier = Arc::new(Barrier::new(2));
    let handles: Vec<_> = [1usize, 3]
        .into_iter()
        .map(|calls| {
            let (exe, barrier) = (exe.clone(), barrier.clone());
            std::thread::spawn(move || {
                let tracer = Tracer::start();
                barrier.wait();
                for _ in 0..calls {
                    exe.run(&inputs()).unwrap();
                }
                barrier.wait();
                tracer.finish().calls.len()
            })
        })
        .collect();
    let counts: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(counts, [1, 3]);
}

#[test]
fn the_innermost_tracer_gets_the_call() {
    let outer = Tracer::start();
    let inner = Tracer::start();
    exe().run(&inputs()).unwrap();
    assert_eq!(inner.finish().calls.len(), 1);
    exe().run(&inputs()).unwrap();
    assert_eq!(outer.finish().calls.len(), 1);
}

#[test]
fn default_tracer_enable_disable_collect_purge() {
    let exe = exe();
    assert!(!trace::is_enabled());
    trace::enable();
    exe.run(&inputs()).unwrap();
    trace::disable();
    exe.run(&inputs()).unwrap(); // not recorded
    assert_eq!(trace::trace().calls.len(), 1);
    let collected = trace::collect().unwrap();
    assert_eq!(collected.len(), 1);
    let out = InterpreterBackend
        .compile(&collected[0])
        .unwrap()
        .run(&inputs())
        .unwrap();
    let want = exe.run(&inputs()).unwrap();
    for (o, w) in out.iter().zip(&want) {
        let bits = |t: &Tensor| {
            t.read::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(o), bits(w));
    }
    trace::purge();
    assert!(trace::trace().is_empty());
}

#[test]
fn save_load_round_trip() {
    let tracer = Tracer::start();
    exe().run(&inputs()).unwrap();
    let trace = tracer.finish();
    let dir = std::env::temp_dir();
    let path = dir.join(format!("graphlift-rt-trace-{}.json", std::process::id()));
    trace.save(&path).unwrap();
    let loaded = Trace::load(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(loaded, trace);
}

#[test]
fn loading_rejects_other_versions_and_garbage() {
    let tracer = Tracer::start();
    exe().run(&inputs()).unwrap();
    let trace = tracer.finish();
    let text = trace.to_json().unwrap();
    let version = |v: u64| text.replacen("\"version\": 2", &format!("\"version\": {v}"), 1);
    for v in [0, 3] {
        assert!(
            matches!(Trace::from_json(&version(v)), Err(RuntimeError::Trace(m)) if m.contains(&format!("version {v}")))
        );
    }
    // Version 1 is version 2 without variables: a stateless trace reads the same.
    assert_eq!(Trace::from_json(&version(1)).unwrap(), trace);
    assert!(matches!(Trace::from_json("{"), Err(RuntimeError::Trace(_))));
    let missing = std::env::temp_dir().join("graphlift-no-such-trace.json");
    assert!(matches!(Trace::load(&missing), Err(RuntimeError::Trace(m)) if m.contains("no-such")));
}

#[test]
fn failed_calls_are_not_recorded_and_bad_wiring_does_not_collect() {
    let tracer = Tracer::start();
    assert!(exe().run(&inputs()[..1]).is_err());
    assert!(tracer.trace().is_empty());
    exe().run(&inputs()).unwrap();
    let mut trace = tracer.finish();
    let call = &mut trace.calls[0];
    let s = call.records.iter().position(|r| r.name == "s").unwrap();
    call.records[s].inputs[0].source = ValueSource::Record {
        record: 99,
        output: 0,
    };
    assert!(matches!(call.collect(), Err(RuntimeError::Trace(m)) if m.contains("99")));
    call.records[s].inputs[0].source = ValueSource::CallInput(0);
    call.records[s].outputs.clear();
    assert!(call.collect().is_err());
}
