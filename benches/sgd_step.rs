//! One SGD step over 2^22 `f32` parameters, `w = w - lr * g` as an assign to a variable:
//! CPU-JIT writes the update in place (12 bytes per element: read `w` and `g`, write `w`;
//! no temporary), beside a memory-bandwidth anchor with the same traffic (`w[i] += g[i]`, a
//! plain loop: the `../shared/peers` anchor's idea, adds only), on 1 thread and on all.
//!
//! `cargo bench --bench sgd_step`. The ratio anchor / CPU-JIT-1t is the figure of
//! issue 24 (BENCHMARKS.md).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use graphlift::jit::CpuJitBackend;
use graphlift::runtime::Backend as _;
use graphlift::{ElementType::F32, Function, FunctionBuilder, Tensor};

const N: usize = 1 << 22;

/// The SGD step: a variable `w` (initial values in [-1, 1]), a gradient parameter `g`,
/// `w = w - 0.01 * g` in the main stream, no results.
fn sgd_step() -> Function {
    let b = FunctionBuilder::new("sgd_step");
    let g = b.parameter("g", F32, [N]);
    let init: Vec<f32> = (0..N)
        .map(|i| ((i % 2001) as f32 - 1000.0) / 1000.0)
        .collect();
    let w = b.variable("w", b.constant(init, [N]));
    b.assign(w, w - 0.01 * g);
    b.finish(&[]).expect("builds")
}

/// The anchor: the same bytes moved, with one add per element.
#[inline(never)]
fn anchor(w: &mut [f32], g: &[f32]) {
    for (w, g) in w.iter_mut().zip(g) {
        *w += *g;
    }
}

fn bench(c: &mut Criterion) {
    let f = sgd_step();
    let grad: Vec<f32> = (0..N).map(|i| ((i % 977) as f32 - 488.0) * 1e-6).collect();
    let g_tensor = vec![Tensor::from_vec(grad, [N]).expect("tensor")];
    let mut group = c.benchmark_group("sgd_step_2^22");
    group.throughput(Throughput::Bytes((12 * N) as u64));
    group.sample_size(30);
    // One executable at a time, so no idle pool shares the cores with another's run.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    for t in [1, threads] {
        let exe = CpuJitBackend::new()
            .with_threads(t)
            .compile(&f)
            .expect("compiles");
        assert_eq!(
            exe.peak_intermediate_bytes(),
            Some(0),
            "the update is in place"
        );
        let mut out: Vec<Tensor> = Vec::new();
        group.bench_function(format!("CPU-JIT-{t}t"), |b| {
            b.iter(|| {
                exe.call(black_box(&mut out), black_box(&g_tensor))
                    .expect("runs")
            })
        });
    }
    // The anchor reads the same gradient buffer and updates a buffer made the way a
    // variable's storage is (a tensor of the initial values).
    let mut w = Tensor::from_vec(vec![0.5f32; N], [N]).expect("tensor");
    let g = g_tensor[0].read::<f32>().expect("f32");
    let w = w.data_mut().as_mut_slice::<f32>().expect("f32");
    group.bench_function("anchor-1t", |b| {
        b.iter(|| anchor(black_box(w), black_box(g)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
