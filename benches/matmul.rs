//! MatMul on CPU-JIT against the GEMM it calls (the `gemm` crate) called directly, on
//! MiniLM's shapes at batch 1, sequence 128: the projections `[128, 384] x [384, 384]`, the
//! feed-forward `[128, 384] x [384, 1536]` and `[128, 1536] x [1536, 384]`, and the
//! attention products `[12, 128, 32] x [12, 32, 128]` and `[12, 128, 128] x [12, 128, 32]`.
//! One thread each, so the ratio is graphlift's overhead (validation, the output tensor,
//! the batch loop), not scheduling.
//!
//! `cargo bench --bench matmul`; the target is a median ratio of at most 1.05.
//!
//! The second group, `matmul_epilogue`, measures whether running an elementwise epilogue
//! inside the GEMM's output loop pays: MiniLM's feed-forward product `[128, 384] x [384,
//! 1536]` followed by its bias + GELU (erf) kernel, once as two passes (the whole product,
//! then the kernel over it: what CPU-JIT does) and once row block by row block (the product
//! of 16 rows, then the kernel over those rows while they are in L1).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use graphlift::jit::{CpuJitBackend, JitKernel};
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

/// The elements of an `f32` tensor, writable.
fn f32s_mut(t: &mut Tensor) -> &mut [f32] {
    match t.data_mut() {
        graphlift::TensorData::F32(v) => v,
        other => panic!("expected f32 data, got {}", other.element_type()),
    }
}

/// MiniLM's feed-forward epilogue over `[m, n]`: `g = y·0.5·(1 + erf(y/√2))`, `y = c + bias`.
fn bias_gelu(m: usize, n: usize) -> JitKernel {
    let b = FunctionBuilder::new("bias_gelu");
    let c = b.parameter("c", ElementType::F32, [m, n]);
    let bias = b.parameter("bias", ElementType::F32, [n]);
    let y = c + bias;
    let g = y * y.scalar_like(0.5) * (y.scalar_like(1.0) + (y / y.scalar_like(2f64.sqrt())).erf());
    JitKernel::compile(&b.finish(&[g]).expect("body")).expect("compiles")
}

fn bench_epilogue(c: &mut Criterion) {
    let mut g = c.benchmark_group("matmul_epilogue");
    let (m, k, n, rows) = (128, 384, 1536, 16);
    let kernel = bias_gelu(m, n);
    let (va, vb) = (values(m * k), values(k * n));
    let bias = Tensor::from_vec(values(n), [n]).expect("tensor");
    let mut product = Tensor::zeros(ElementType::F32, [m, n]).expect("tensor");
    let mut out = [Tensor::zeros(ElementType::F32, [m, n]).expect("tensor")];
    let label = format!("{m}x{k}x{n}+bias_gelu");
    g.bench_with_input(BenchmarkId::new("two-passes", &label), &(), |bch, ()| {
        bch.iter(|| {
            let c = f32s_mut(&mut product);
            gemm_direct(black_box(&va), black_box(&vb), c, (1, m, k, n));
            kernel.call(&[&product, &bias], &mut out).expect("runs");
        })
    });
    g.bench_with_input(BenchmarkId::new("row-blocked", &label), &(), |bch, ()| {
        bch.iter(|| {
            for r in (0..m).step_by(rows) {
                let c = f32s_mut(&mut product);
                let block = &mut c[r * n..(r + rows) * n];
                gemm_direct(
                    black_box(&va[r * k..]),
                    black_box(&vb),
                    block,
                    (1, rows, k, n),
                );
                kernel
                    .call_range(&[&product, &bias], &mut out, r * n, (r + rows) * n)
                    .expect("runs");
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench, bench_epilogue);
criterion_main!(benches);
