//! MatMul on CPU-JIT against the GEMM it calls (the `gemm` crate) called directly, on
//! MiniLM's shapes at batch 1, sequence 128: the projections `[128, 384] x [384, 384]`, the
//! feed-forward `[128, 384] x [384, 1536]` and `[128, 1536] x [1536, 384]`, and the
//! attention products `[12, 128, 32] x [12, 32, 128]` and `[12, 128, 128] x [12, 128, 32]`.
//! One thread each, so the ratio is graphlift's overhead (validation, the output tensor,
//! the batch loop), not scheduling.
//!
//! `cargo bench --bench matmul`; the target is a median ratio of at most 1.05.
//!
//! The second group, `matmul_epilogue`, measures what running an elementwise epilogue inside
//! the GEMM's output loop gives: MiniLM's feed-forward product `[b·128, 384] x [384, 1536]`
//! followed by its bias + GELU (erf) kernel, compiled by CPU-JIT with epilogue fusion off
//! (the product, then the kernel over it as a step of its own) and on (the kernel runs on
//! each product, or each thread's row block, as soon as it is written), at 1 and 2 threads,
//! batch 1 (a 768 KiB product, in L2) and batch 4 (3 MiB, past L2).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use graphlift::jit::CpuJitBackend;
use graphlift::runtime::Backend as _;
use graphlift::{ElementType, Function, FunctionBuilder, Op, Shape, Tensor};

fn values(n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
        .collect()
}

/// Row-major `[batch, m, k] x [batch, k, n]` straight through gemm, into `c`.
fn gemm_direct(
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    (batch, m, k, n): (usize, usize, usize, usize),
) {
    for p in 0..batch {
        let (a, b) = (
            &a[p * m * k..(p + 1) * m * k],
            &b[p * k * n..(p + 1) * k * n],
        );
        let c = &mut c[p * m * n..(p + 1) * m * n];
        // SAFETY: the slices hold exactly the row-major extents given to gemm, and `c` is
        // an exclusive borrow written once per element.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                c.as_mut_ptr(),
                1,
                n as isize,
                false,
                a.as_ptr(),
                1,
                k as isize,
                b.as_ptr(),
                1,
                n as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("matmul_minilm");
    let shapes: [(usize, usize, usize, usize); 5] = [
        (1, 128, 384, 384),
        (1, 128, 384, 1536),
        (1, 128, 1536, 384),
        (12, 128, 32, 128),
        (12, 128, 128, 32),
    ];
    for (batch, m, k, n) in shapes {
        let label = format!("{batch}x{m}x{k}x{n}");
        let (sa, sb) = (Shape::new([batch, m, k]), Shape::new([batch, k, n]));
        let mut f = Function::new("matmul");
        let a = f
            .add_parameter("a", ElementType::F32, sa.clone())
            .expect("a");
        let b = f
            .add_parameter("b", ElementType::F32, sb.clone())
            .expect("b");
        let y = f
            .add_node(Op::MatMul, &[a.into(), b.into()])
            .expect("matmul");
        f.add_result(y.into(), None).expect("result");
        let exe = CpuJitBackend::new()
            .with_threads(1)
            .compile(&f)
            .expect("compiles");
        let (va, vb) = (values(batch * m * k), values(batch * k * n));
        let inputs = [
            Tensor::from_vec(va.clone(), sa).expect("tensor"),
            Tensor::from_vec(vb.clone(), sb).expect("tensor"),
        ];
        let mut out = vec![Tensor::zeros(ElementType::F32, [batch, m, n]).expect("tensor")];
        g.bench_with_input(BenchmarkId::new("CPU-JIT-1t", &label), &(), |bch, ()| {
            bch.iter(|| {
                exe.call(black_box(&mut out), black_box(&inputs))
                    .expect("runs")
            })
        });
        let mut direct = vec![0f32; batch * m * n];
        g.bench_with_input(BenchmarkId::new("gemm-direct", &label), &(), |bch, ()| {
            bch.iter(|| {
                gemm_direct(
                    black_box(&va),
                    black_box(&vb),
                    &mut direct,
                    (batch, m, k, n),
                )
            })
        });
    }
    g.finish();
}

/// MiniLM's feed-forward layer over `[batch, m, k]`: `g = y·0.5·(1 + erf(y/√2))`,
/// `y = x·w + bias`.
fn dense_gelu(batch: usize, m: usize, k: usize, n: usize) -> Function {
    let b = FunctionBuilder::new("dense_gelu");
    let x = b.parameter("x", ElementType::F32, [batch, m, k]);
    let w = b.parameter("w", ElementType::F32, [k, n]);
    let bias = b.parameter("bias", ElementType::F32, [n]);
    let y = b.op(Op::MatMul, &[x, w]) + bias;
    let g = y * y.scalar_like(0.5) * (y.scalar_like(1.0) + (y / y.scalar_like(2f64.sqrt())).erf());
    b.finish(&[g]).expect("dense_gelu")
}

fn bench_epilogue(c: &mut Criterion) {
    let mut g = c.benchmark_group("matmul_epilogue");
    let (m, k, n) = (128, 384, 1536);
    for batch in [1, 4] {
        let f = dense_gelu(batch, m, k, n);
        let inputs = [
            Tensor::from_vec(values(batch * m * k), [batch, m, k]).expect("tensor"),
            Tensor::from_vec(values(k * n), [k, n]).expect("tensor"),
            Tensor::from_vec(values(n), [n]).expect("tensor"),
        ];
        let mut out = [Tensor::zeros(ElementType::F32, [batch, m, n]).expect("tensor")];
        for threads in [1, 2] {
            for on in [false, true] {
                let exe = CpuJitBackend::new()
                    .with_threads(threads)
                    .with_epilogue_fusion(on)
                    .compile(&f)
                    .expect("compiles");
                let label = format!("{batch}x{m}x{k}x{n}+bias_gelu/{threads}t");
                let name = if on { "epilogue" } else { "separate-step" };
                g.bench_with_input(BenchmarkId::new(name, &label), &(), |bch, ()| {
                    bch.iter(|| {
                        exe.call(black_box(&mut out), black_box(&inputs))
                            .expect("runs")
                    })
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench, bench_epilogue);
criterion_main!(benches);
