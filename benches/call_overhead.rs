//! The fixed cost of `Executable::call` on CPU-JIT: E1 (`relu((a+b)*c)+d`) on 1 and 1,024
//! elements, with 1 thread and with 2 (small calls never reach the pool, so both should
//! match), beside INTERPRETER.
//!
//! `cargo bench --bench call_overhead`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use graphlift::jit::CpuJitBackend;
use graphlift::runtime::Backend as _;
use graphlift::{Backend, ElementType, Executable, Tensor};
use graphlift_harness::exprs::peer_expression;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("call_overhead_E1");
    for n in [1usize, 1024] {
        let f = peer_expression("E1", n).expect("expression");
        let inputs: Vec<Tensor> = (0..4)
            .map(|k| Tensor::from_vec(vec![k as f32 - 1.5; n], [n]).expect("tensor"))
            .collect();
        let exes: Vec<(&str, Arc<dyn Executable>)> = vec![
            (
                "CPU-JIT-1t",
                CpuJitBackend::new()
                    .with_threads(1)
                    .compile(&f)
                    .expect("compiles"),
            ),
            (
                "CPU-JIT-2t",
                CpuJitBackend::new()
                    .with_threads(2)
                    .compile(&f)
                    .expect("compiles"),
            ),
            (
                "INTERPRETER",
                Backend::create("INTERPRETER")
                    .and_then(|b| b.compile(&f))
                    .expect("compiles"),
            ),
        ];
        for (name, exe) in &exes {
            let mut out = vec![Tensor::zeros(ElementType::F32, [n]).expect("tensor")];
            g.bench_with_input(BenchmarkId::new(*name, n), &n, |b, _| {
                b.iter(|| {
                    exe.call(black_box(&mut out), black_box(&inputs))
                        .expect("runs")
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
