//! State with Nervana Graph's ordering semantics on both backends: variables, assigns in
//! creation order, the main stream's assigns as sinks, `saved_user_deps`, initializers,
//! `set_variable` and `reset_variables`, and serialized calls from threads.

use std::sync::Arc;

use graphlift::{
    Backend, ElementType::F32, Executable, Function, FunctionBuilder, RuntimeError, Tensor,
};

const BACKENDS: [&str; 1] = ["INTERPRETER"];

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
