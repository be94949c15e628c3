//! Time to compile the peer expressions E1–E4 (N = 2^14) from a Function to an Executable on
//! CPU-JIT: cold (a fresh backend each time, so every kernel is compiled) and warm (one
//! backend, so its kernel cache supplies every kernel and only the passes and planning run).
//!
//! `cargo bench --bench compile`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use graphlift::exprs::{peer_expression, PEER_EXPRESSIONS};
use graphlift::jit::CpuJitBackend;

const N: usize = 1 << 14;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("compile");
    g.sample_size(30);
    for expr in PEER_EXPRESSIONS {
        let f = peer_expression(expr, N).expect("expression");
        g.bench_with_input(BenchmarkId::new("cold", expr), &f, |b, f| {
            b.iter(|| {
                let backend = CpuJitBackend::new().with_threads(1);
                black_box(backend.compile_executable(black_box(f)).expect("compiles"))
            })
        });
        let backend = CpuJitBackend::new().with_threads(1);
        backend.compile_executable(&f).expect("compiles");
        g.bench_with_input(BenchmarkId::new("warm_cache", expr), &f, |b, f| {
            b.iter(|| black_box(backend.compile_executable(black_box(f)).expect("compiles")))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
