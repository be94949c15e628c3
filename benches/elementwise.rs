//! The peer expressions E1–E4 (`graphlift_harness::exprs`) on CPU-JIT with 1 and 2 threads and on
//! INTERPRETER, beside a hand-written Rust loop of the same expression and a trivial
//! streaming loop (the same bytes read and written, adds only), at 2^10 .. 2^24 f32
//! elements.
//!
//! `cargo bench --bench elementwise [-- FILTER]`; compare medians within one run (the
//! machine is shared). Large sizes use small sample counts to keep the run short.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use graphlift::jit::CpuJitBackend;
use graphlift::runtime::Backend as _;
use graphlift::{Backend, ElementType, Executable, Tensor};
use graphlift_harness::exprs::{peer_expression, peer_expression_inputs, PEER_EXPRESSIONS};

const SIZES: [u32; 5] = [10, 14, 18, 22, 24];

/// Deterministic inputs in [-2, 2).
fn input(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 8) as f32 / (1u32 << 24) as f32 * 4.0 - 2.0
        })
        .collect()
}

/// The expression as a hand-written loop (zipped iterators: no bounds checks, so rustc
/// vectorizes what it can; `tanh`/`exp` are libm calls).
fn rust_loop(expr: &str, ins: &[Vec<f32>], out: &mut [f32]) {
    match expr {
        "E1" => {
            let (a, b, c, d) = (&ins[0], &ins[1], &ins[2], &ins[3]);
            for ((o, (&a, &b)), (&c, &d)) in
                out.iter_mut().zip(a.iter().zip(b)).zip(c.iter().zip(d))
            {
                *o = ((a + b) * c).max(0.0) + d;
            }
        }
        "E2" => {
            for (o, &x) in out.iter_mut().zip(&ins[0]) {
                *o = 0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044715 * x * x * x)).tanh());
            }
        }
        "E3" => {
            for (o, &x) in out.iter_mut().zip(&ins[0]) {
                *o = x / (1.0 + (-x).exp());
            }
        }
        _ => {
            let b = &ins[1];
            for (orow, xrow) in out
                .chunks_exact_mut(b.len())
                .zip(ins[0].chunks_exact(b.len()))
            {
                for ((o, &x), &b) in orow.iter_mut().zip(xrow).zip(b) {
                    *o = (x + b).max(0.0);
                }
            }
        }
    }
}

/// Reads every input element once and writes every output element once, adding only: the
/// memory-traffic floor of the expression.
fn streaming_loop(ins: &[Vec<f32>], out: &mut [f32]) {
    match ins {
        [a, b, c, d] => {
            for ((o, (&a, &b)), (&c, &d)) in
                out.iter_mut().zip(a.iter().zip(b)).zip(c.iter().zip(d))
            {
                *o = a + b + c + d;
            }
        }
        [x, b] => {
            for (orow, xrow) in out.chunks_exact_mut(b.len()).zip(x.chunks_exact(b.len())) {
                for ((o, &x), &b) in orow.iter_mut().zip(xrow).zip(b) {
                    *o = x + b;
                }
            }
        }
        [x] => {
            for (o, &x) in out.iter_mut().zip(x) {
                *o = x + 1.0;
            }
        }
        _ => {}
    }
}

fn bench(c: &mut Criterion) {
    for expr in PEER_EXPRESSIONS {
        let mut g = c.benchmark_group(expr);
        for p in SIZES {
            let n = 1usize << p;
            g.throughput(Throughput::Elements(n as u64));
            g.sample_size(match p {
                0..=14 => 50,
                15..=18 => 20,
                _ => 10,
            });
            let shapes = peer_expression_inputs(expr, n).expect("shapes");
            let vals: Vec<Vec<f32>> = shapes
                .iter()
                .enumerate()
                .map(|(k, s)| input(s.element_count().expect("count"), k as u32))
                .collect();
            let tensors: Vec<Tensor> = vals
                .iter()
                .zip(&shapes)
                .map(|(v, s)| Tensor::from_vec(v.clone(), s.clone()).expect("tensor"))
                .collect();
            let f = peer_expression(expr, n).expect("expression");
            let out_shape = f.result_types()[0].shape.clone();
            let exes: Vec<(String, std::sync::Arc<dyn Executable>)> = vec![
                (
                    "CPU-JIT-1t".into(),
                    CpuJitBackend::new()
                        .with_threads(1)
                        .compile(&f)
                        .expect("compiles"),
                ),
                (
                    "CPU-JIT-2t".into(),
                    CpuJitBackend::new()
                        .with_threads(2)
                        .compile(&f)
                        .expect("compiles"),
                ),
                (
                    "INTERPRETER".into(),
                    Backend::create("INTERPRETER")
                        .and_then(|b| b.compile(&f))
                        .expect("compiles"),
                ),
            ];
            for (name, exe) in &exes {
                let mut out =
                    vec![Tensor::zeros(ElementType::F32, out_shape.clone()).expect("tensor")];
                g.bench_with_input(BenchmarkId::new(name.as_str(), n), &n, |bch, _| {
                    bch.iter(|| {
                        exe.call(black_box(&mut out), black_box(&tensors))
                            .expect("runs")
                    })
                });
            }
            let mut out = vec![0.0f32; n];
            g.bench_with_input(BenchmarkId::new("rust_loop", n), &n, |bch, _| {
                bch.iter(|| {
                    rust_loop(expr, black_box(&vals), &mut out);
                    black_box(&mut out);
                })
            });
            g.bench_with_input(BenchmarkId::new("streaming_loop", n), &n, |bch, _| {
                bch.iter(|| {
                    streaming_loop(black_box(&vals), &mut out);
                    black_box(&mut out);
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
