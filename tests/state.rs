//! State with Nervana Graph's ordering semantics on both backends: variables, assigns in
//! creation order, the main stream's assigns as sinks, `saved_user_deps`, initializers,
//! `set_variable` and `reset_variables`, and serialized calls from threads.

use std::sync::Arc;

use graphlift::{
    Backend, ElementType::F32, Executable, Function, FunctionBuilder, RuntimeError, Tensor,
};

const BACKENDS: [&str; 2] = ["INTERPRETER", "CPU-JIT"];

fn compile(backend: &str, f: &Function) -> Arc<dyn Executable> {
    Backend::create(backend).unwrap().compile(f).unwrap()
}

/// The first element of each call's first result, `calls` times.
fn firsts(exe: &dyn Executable, calls: usize) -> Vec<f32> {
    (0..calls)
        .map(|_| exe.run(&[]).unwrap()[0].read::<f32>().unwrap()[0])
        .collect()
}

fn bits(xs: &[f32]) -> Vec<u32> {
    xs.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn a_read_after_an_assign_sees_its_value() {
    // x = variable(0); a = assign(x, 5); z = x + 1  ->  z = 6
    for backend in BACKENDS {
        let b = FunctionBuilder::new("read_after_assign");
        let x = b.variable("x", b.scalar(F32, 0.0));
        b.assign(x, b.scalar(F32, 5.0));
        let z = x + 1.0;
        let f = b.finish(&[z]).unwrap();
        let exe = compile(backend, &f);
        assert_eq!(bits(&firsts(&*exe, 2)), bits(&[6.0, 6.0]), "{backend}");
    }
}

#[test]
fn main_stream_assigns_run_in_every_computation() {
    // w = variable(0); assign(w, w + 1); computation(w) -> 1, 2, 3
    for backend in BACKENDS {
        let b = FunctionBuilder::new("counter");
        let w = b.variable("w", b.scalar(F32, 0.0));
        b.assign(w, w + 1.0);
        let exe = compile(backend, &b.finish(&[w]).unwrap());
        assert_eq!(bits(&firsts(&*exe, 3)), bits(&[1.0, 2.0, 3.0]), "{backend}");
    }
}

#[test]
fn guarded_assigns_run_only_when_named() {
    for backend in BACKENDS {
        let b = FunctionBuilder::new("guarded");
        let w = b.variable("w", b.scalar(F32, 0.0));
        let update = b.saved_user_deps(|| b.assign(w, w + 1.0));
        let alone = compile(backend, &b.computation(&[w]).unwrap());
        assert_eq!(
            bits(&firsts(&*alone, 3)),
            bits(&[0.0, 0.0, 0.0]),
            "{backend}"
        );
        let named = compile(backend, &b.computation(&[w, update]).unwrap());
        let mut seen = Vec::new();
        for _ in 0..3 {
            let out = named.run(&[]).unwrap();
            let (w, u) = (
                out[0].read::<f32>().unwrap()[0],
                out[1].read::<f32>().unwrap()[0],
            );
            seen.push((w.to_bits(), u.to_bits()));
        }
        let want: Vec<(u32, u32)> = [1.0f32, 2.0, 3.0]
            .iter()
            .map(|x| (x.to_bits(), x.to_bits()))
            .collect();
        assert_eq!(seen, want, "{backend}");
    }
}

/// `n` deterministic values in about [-1, 1].
fn wave(n: usize, phase: f32) -> Vec<f32> {
    (0..n).map(|i| ((i as f32) * 0.37 + phase).sin()).collect()
}

/// Plain SGD (`w = w - lr * g`), momentum and Adam updates over `n` parameters, built as
/// an optimizer would: guarded-free main-stream assigns, no results.
fn optimizers(n: usize) -> Function {
    let b = FunctionBuilder::new("optimizers");
    let g = b.parameter("g", F32, [n]);
    let init = |phase| b.constant(wave(n, phase), [n]);
    // SGD.
    let w = b.variable("w", init(0.0));
    b.assign(w, w - 0.01 * g);
    // Momentum: v = 0.9 v + g; u = u - lr v (reads v after its assign).
    let v = b.variable("v", b.constant(vec![0.0f32; n], [n]));
    let u = b.variable("u", init(1.0));
    b.assign(v, 0.9 * v + g);
    b.assign(u, u - 0.01 * v);
    // Adam (bias correction folded into lr): one kernel updates m, s and p.
    let m = b.variable("m", b.constant(vec![0.0f32; n], [n]));
    let s = b.variable("s", b.constant(vec![0.0f32; n], [n]));
    let p = b.variable("p", init(2.0));
    let m_new = 0.9 * m + 0.1 * g;
    let s_new = 0.999 * s + 0.001 * g * g;
    let p_new = p - 0.001 * m_new / (s_new.sqrt() + 1e-8);
    b.assign(m, m_new);
    b.assign(s, s_new);
    b.assign(p, p_new);
    b.finish(&[]).unwrap()
}

#[test]
fn optimizer_updates_match_the_interpreter_and_write_in_place() {
    let n = 1000;
    let f = optimizers(n);
    let reference = compile("INTERPRETER", &f);
    let jit = compile("CPU-JIT", &f);
    for call in 0..3 {
        let g = Tensor::from_vec(wave(n, 3.0 + call as f32), [n]).unwrap();
        reference.run(std::slice::from_ref(&g)).unwrap();
        jit.run(&[g]).unwrap();
        for name in ["w", "v", "u", "m", "s", "p"] {
            let (a, b) = (
                reference.variable(name).unwrap(),
                jit.variable(name).unwrap(),
            );
            let (a, b) = (a.read::<f32>().unwrap(), b.read::<f32>().unwrap());
            assert_eq!(bits(a), bits(b), "variable {name} after call {call}");
        }
    }
    // Every update is computed by a kernel that writes the variable in place: no
    // temporary, no copy.
    let mut written: Vec<String> = jit
        .kernels()
        .iter()
        .flat_map(|k| k.writes_in_place.iter().map(|(_, v)| v.clone()))
        .collect();
    written.sort();
    assert_eq!(written, ["m", "p", "s", "u", "v", "w"]);
    assert_eq!(jit.peak_intermediate_bytes(), Some(0));
    let steps = jit.steps();
    let says = |node_op: &str, how: &str| {
        steps
            .iter()
            .filter(|s| s.op == node_op)
            .all(|s| s.state.as_deref().is_some_and(|t| t.contains(how)))
    };
    assert!(says("Assign", "wrote the value into"), "{steps:#?}");
    assert!(says("ReadVariable", "in place"), "{steps:#?}");
}

#[test]
fn eight_threads_calling_one_executable_serialize() {
    for backend in BACKENDS {
        let b = FunctionBuilder::new("counter");
        let w = b.variable("w", b.scalar(F32, 0.0));
        b.assign(w, w + 1.0);
        let exe = compile(backend, &b.finish(&[]).unwrap());
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for _ in 0..1000 {
                        exe.run(&[]).unwrap();
                    }
                });
            }
        });
        let w = exe.variable("w").unwrap();
        assert_eq!(w.read::<f32>().unwrap(), &[8000.0], "{backend}");
    }
}

#[test]
fn set_and_reset_variables() {
    for backend in BACKENDS {
        let b = FunctionBuilder::new("counter");
        let start = b.constant(vec![1.0f32, 2.0], [2]);
        let w = b.variable("w", start.exp());
        b.assign(w, w + 1.0);
        let exe = compile(backend, &b.finish(&[w]).unwrap());
        let e = [1f32.exp(), 2f32.exp()];
        assert_eq!(exe.variable("w").unwrap().read::<f32>().unwrap(), &e);
        exe.run(&[]).unwrap();
        exe.set_variable("w", &Tensor::from_vec(vec![10.0f32, 20.0], [2]).unwrap())
            .unwrap();
        let out = exe.run(&[]).unwrap();
        assert_eq!(out[0].read::<f32>().unwrap(), &[11.0, 21.0], "{backend}");
        exe.reset_variables().unwrap();
        assert_eq!(exe.variable("w").unwrap().read::<f32>().unwrap(), &e);
        assert_eq!(exe.variables().len(), 1);

        let wrong = Tensor::from_vec(vec![1.0f32; 3], [3]).unwrap();
        let err = exe.set_variable("w", &wrong).unwrap_err();
        assert!(matches!(err, RuntimeError::VariableType { .. }), "{err}");
        assert!(err.to_string().contains("variable `w`"), "{err}");
        let err = exe.variable("nope").unwrap_err();
        assert!(err.to_string().contains("no variable `nope`"), "{err}");
        assert!(err.to_string().contains('w'), "{err}");
    }
}

#[test]
fn a_traced_cpu_jit_call_replays_its_variable_updates() {
    let n = 100;
    let f = optimizers(n);
    let jit = compile("CPU-JIT", &f);
    let g = |call: usize| vec![Tensor::from_vec(wave(n, call as f32), [n]).unwrap()];
    jit.run(&g(0)).unwrap();
    let tracer = graphlift::runtime::trace::Tracer::start();
    jit.run(&g(1)).unwrap();
    let trace = tracer.finish();
    let collected = trace.calls[0].collect().unwrap();
    let replay = compile("INTERPRETER", &collected);
    replay.run(&g(1)).unwrap();
    for spec in jit.variables() {
        let (a, b) = (
            jit.variable(&spec.name).unwrap(),
            replay.variable(&spec.name).unwrap(),
        );
        let (a, b) = (a.read::<f32>().unwrap(), b.read::<f32>().unwrap());
        assert_eq!(bits(a), bits(b), "variable {}", spec.name);
    }
}

#[test]
fn random_initial_values_are_the_same_on_both_backends_and_after_reset() {
    let b = FunctionBuilder::new("init");
    let w = b.variable("w", b.random_normal(F32, [64, 32], 0.0, 0.05, 42));
    let bias = b.variable("bias", b.random_uniform(F32, [32], -0.1, 0.1, 7));
    b.assign(w, w * 0.5);
    b.assign(bias, bias + 1.0);
    let f = b.finish(&[]).unwrap();
    let initial: Vec<Vec<u32>> = BACKENDS
        .iter()
        .map(|backend| {
            let exe = compile(backend, &f);
            let before = exe.variable("w").unwrap();
            exe.run(&[]).unwrap();
            exe.reset_variables().unwrap();
            let after = exe.variable("w").unwrap();
            assert_eq!(before, after, "{backend}: reset runs the initializer again");
            bits(before.read::<f32>().unwrap())
        })
        .collect();
    assert_eq!(initial[0], initial[1]);
    assert!(
        initial[0].iter().any(|&x| x != initial[0][0]),
        "the values vary"
    );
    // A saved function keeps its random initializers exactly.
    let g = Function::from_json(&f.to_json()).unwrap();
    assert_eq!(f, g);
}
