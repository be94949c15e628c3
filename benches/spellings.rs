//! Exporters' spellings of one activation on CPU-JIT, side by side (issue 27: every spelling
//! of a function runs the same code, within 1.1x of the best): SiLU as PyTorch exports it
//! (`x * sigmoid(x)`, either order) and as `x / (1 + exp(-x))`; GELU-tanh as Hugging Face's
//! `gelu_new` (`Pow(x, 3)`), as `x * x * x`, and in the ONNX importer's order; GELU-erf as
//! PyTorch exports BERT's (`x * 0.5 * (1 + erf(x / sqrt(2)))`) and as `0.5 * x * (1 + erf(x
//! * (1 / sqrt(2))))`. f32, 2^14 and 2^20 elements, 1 thread.
//!
//! `cargo bench --bench spellings`; compare medians within one run (BENCHMARKS.md).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use graphlift::jit::CpuJitBackend;
use graphlift::runtime::Backend as _;
use graphlift::{ElementType, FunctionBuilder, Tensor, Value};

/// A spelling: how an exporter writes the function of `x`.
type Spelling = fn(Value<'_>) -> Value<'_>;

const SQRT_HALF: f64 = std::f64::consts::FRAC_1_SQRT_2;

fn gelu_tanh<'b>(x: Value<'b>, cube: Value<'b>) -> Value<'b> {
    x * 0.5 * (((x + cube * 0.044715) * 0.797_884_6).tanh() + 1.0)
}

const SPELLINGS: [(&str, &str, Spelling); 7] = [
    ("silu", "x*sigmoid(x)", |x| x * x.sigmoid()),
    ("silu", "sigmoid(x)*x", |x| x.sigmoid() * x),
    ("silu", "x/(1+exp(-x))", |x| x / ((-x).exp() + 1.0)),
    ("gelu_tanh", "pow(x,3)", |x| {
        gelu_tanh(x, x.pow(x.scalar_like(3.0)))
    }),
    ("gelu_tanh", "x*x*x", |x| gelu_tanh(x, x * x * x)),
    ("gelu_erf", "x*0.5*(1+erf(x/sqrt2))", |x| {
        x * 0.5 * ((x / std::f64::consts::SQRT_2).erf() + 1.0)
    }),
    ("gelu_erf", "0.5*x*(1+erf(x*sqrt_half))", |x| {
        0.5 * x * ((x * SQRT_HALF).erf() + 1.0)
    }),
];

fn bench(c: &mut Criterion) {
    let backend = CpuJitBackend::new().with_threads(1);
    for log2 in [14u32, 20] {
        let n = 1usize << log2;
        let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 / 250.0 - 2.0).collect();
        let inputs = vec![Tensor::from_vec(xs, [n]).expect("tensor")];
        let mut group = c.benchmark_group(format!("spellings_2^{log2}"));
        group.throughput(Throughput::Elements(n as u64));
        if log2 > 16 {
            group.sample_size(30);
        }
        for (function, spelling, spell) in SPELLINGS {
            let b = FunctionBuilder::new(function);
            let x = b.parameter("x", ElementType::F32, [n]);
            let f = b.finish(&[spell(x)]).expect("builds");
            let exe = backend.compile(&f).expect("compiles");
            let mut out = exe.run(&inputs).expect("runs");
            let id = BenchmarkId::new(function, spelling);
            group.bench_function(id, |b| {
                b.iter(|| {
                    exe.call(black_box(&mut out), black_box(&inputs))
                        .expect("runs")
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
