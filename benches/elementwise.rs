//! relu((a+b)*c)+d (E1 of `../shared/peers`) on CPU-JIT and INTERPRETER, beside a
//! hand-written Rust loop of the same expression, at 2^10 .. 2^22 f32 elements.
//!
//! `cargo bench --bench elementwise`; compare medians within one run (the machine is shared).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use graphlift::{Backend, ElementType, FunctionBuilder, Tensor};

const SIZES: [u32; 4] = [10, 14, 18, 22];

fn e1(n: usize) -> graphlift::Function {
    let b = FunctionBuilder::new("E1");
    let [a, bb, c, d] = ["a", "b", "c", "d"].map(|x| b.parameter(x, ElementType::F32, [n]));
    b.finish(&[((a + bb) * c).relu() + d]).expect("E1 builds")
}

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

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("E1_relu_add_mul_add");
    for p in SIZES {
        let n = 1usize << p;
        g.throughput(Throughput::Elements(n as u64));
        if p >= 18 {
            g.sample_size(10);
        }
        let vals: Vec<Vec<f32>> = (0..4).map(|k| input(n, k)).collect();
        let tensors: Vec<Tensor> = vals
            .iter()
            .map(|v| Tensor::from_vec(v.clone(), [n]).expect("tensor"))
            .collect();
        let f = e1(n);
        for backend in ["CPU-JIT", "INTERPRETER"] {
            let exe = Backend::create(backend)
                .and_then(|b| b.compile(&f))
                .expect("compiles");
            let mut out = vec![Tensor::zeros(ElementType::F32, [n]).expect("tensor")];
            g.bench_with_input(BenchmarkId::new(backend, n), &n, |bch, _| {
                bch.iter(|| {
                    exe.call(black_box(&mut out), black_box(&tensors))
                        .expect("runs")
                })
            });
        }
        let mut out = vec![0.0f32; n];
        g.bench_with_input(BenchmarkId::new("rust_loop", n), &n, |bch, _| {
            bch.iter(|| {
                let (a, b, c, d) = (&vals[0], &vals[1], &vals[2], &vals[3]);
                // Zipped iterators: no bounds checks, so rustc vectorizes (SSE2, 4 lanes).
                for ((o, (&a, &b)), (&c, &d)) in
                    out.iter_mut().zip(a.iter().zip(b)).zip(c.iter().zip(d))
                {
                    *o = ((a + b) * c).max(0.0) + d;
                }
                black_box(&mut out);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
