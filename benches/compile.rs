//! Time to compile the peer expressions E1–E4 and a 200-op random elementwise kernel
//! (N = 2^14, f32) from a Function to an Executable on CPU-JIT:
//! - `cold`: a fresh backend each time, so every kernel is compiled;
//! - `warm_cache`: one backend with its executable cache off, so its kernel cache supplies
//!   every kernel and only the passes and planning run;
//! - `cached`: one backend with an executable of the Function alive, so the executable
//!   cache supplies the plan (a fingerprint, a comparison with the cached Function, a new
//!   executable).
//!
//! `cargo bench --bench compile`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use graphlift::ir::{BinaryOp, Op, UnaryOp};
use graphlift::jit::CpuJitBackend;
use graphlift::Executable as _;
use graphlift::{ElementType, Function, FunctionBuilder};
use graphlift_harness::exprs::{peer_expression, PEER_EXPRESSIONS};

const N: usize = 1 << 14;

/// A chain of `ops` random f32 elementwise ops over three parameters (xorshift-chosen: the
/// arithmetic binaries, and the unary ops with inline code, vector math included), each
/// using the previous value and an earlier one: one fused kernel.
fn random_kernel(ops: usize) -> Function {
    let b = FunctionBuilder::new("random_200");
    let mut vals = vec![
        b.parameter("x", ElementType::F32, [N]),
        b.parameter("y", ElementType::F32, [N]),
        b.parameter("z", ElementType::F32, [N]),
    ];
    let binary = [
        BinaryOp::Add,
        BinaryOp::Subtract,
        BinaryOp::Multiply,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
    ];
    let unary = [
        UnaryOp::Negative,
        UnaryOp::Abs,
        UnaryOp::Relu,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Floor,
    ];
    let mut s = 0x9e37_79b9_u32;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        s as usize
    };
    for _ in 0..ops {
        let last = *vals.last().expect("parameters");
        let other = vals[next() % vals.len()];
        let r = next();
        let v = if r % 3 == 0 {
            b.op(Op::Unary(unary[r / 3 % unary.len()]), &[last])
        } else {
            b.op(Op::Binary(binary[r / 3 % binary.len()]), &[last, other])
        };
        vals.push(v);
    }
    let out = *vals.last().expect("ops");
    b.finish(&[out]).expect("a valid chain")
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("compile");
    g.sample_size(30);
    let random = random_kernel(200);
    let kernels = CpuJitBackend::new()
        .compile_executable(&random)
        .expect("compiles")
        .kernels();
    assert_eq!(kernels.len(), 1, "the 200-op chain is one kernel");
    let exprs = PEER_EXPRESSIONS.iter().map(|e| {
        let f = peer_expression(e, N).expect("expression");
        (e.to_string(), f)
    });
    for (expr, f) in exprs.chain([("random_200".to_string(), random)]) {
        let expr = expr.as_str();
        g.bench_with_input(BenchmarkId::new("cold", expr), &f, |b, f| {
            b.iter(|| {
                let backend = CpuJitBackend::new().with_threads(1);
                black_box(backend.compile_executable(black_box(f)).expect("compiles"))
            })
        });
        let backend = CpuJitBackend::new()
            .with_threads(1)
            .with_executable_cache(false);
        backend.compile_executable(&f).expect("compiles");
        g.bench_with_input(BenchmarkId::new("warm_cache", expr), &f, |b, f| {
            b.iter(|| black_box(backend.compile_executable(black_box(f)).expect("compiles")))
        });
        let backend = CpuJitBackend::new().with_threads(1);
        let _alive = backend.compile_executable(&f).expect("compiles");
        drop(backend.compile_executable(&f).expect("compiles"));
        assert_eq!(
            backend.executable_cache_stats().hits,
            1,
            "the cache answers"
        );
        g.bench_with_input(BenchmarkId::new("cached", expr), &f, |b, f| {
            b.iter(|| black_box(backend.compile_executable(black_box(f)).expect("compiles")))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
