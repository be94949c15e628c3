//! Epilogue fusion: a kernel that consumes a `MatMul` or `Convolution` result runs in the
//! producer's output loop, with results bit-identical to running it as a step of its own,
//! on every threading path of the producers.

use super::{bits, uniform};
use graphlift_ir::{
    Convolution, ElementType, ElementType::F32, Function, FunctionBuilder, Op, Window,
};
use graphlift_jit::{CpuJitBackend, ThreadConfig};
use graphlift_runtime::trace::Tracer;
use graphlift_runtime::{compare, Backend, Executable, InterpreterBackend, Tensor};

fn tensor(shape: &[usize], seed: u32) -> Tensor {
    Tensor::from_vec(uniform(shape.iter().product(), seed), shape.to_vec()).unwrap()
}

/// `relu(a · w + bias)` and the raw product `a · w` as a second result (so the product is
/// still written whole); `a` is `[batch, m, k]`.
fn dense(batch: usize, m: usize, k: usize, n: usize) -> Function {
    let b = FunctionBuilder::new("dense");
    let a = b.parameter("a", F32, [batch, m, k]);
    let w = b.parameter("w", F32, [k, n]);
    let bias = b.parameter("bias", F32, [n]);
    let y = b.op(Op::MatMul, &[a, w]).named("y");
    let out = (y + bias).named("biased").relu().named("act");
    b.finish(&[out, y]).unwrap()
}

/// A convolution `[n, c, h, w]` with `m` filters in `groups` groups (3x3, stride 1, pad 1),
/// then a per-channel bias and HardSwish written out as `x · clip(x + 3, 0, 6) / 6`.
fn conv_hardswish(n: usize, c: usize, hw: usize, m: usize, groups: usize) -> Function {
    let b = FunctionBuilder::new("conv");
    let x = b.parameter("x", F32, [n, c, hw, hw]);
    let f = b.parameter("f", F32, [m, c / groups, 3, 3]);
    let bias = b.parameter("bias", F32, [m, 1, 1]);
    let conv = Convolution {
        window: Window {
            shape: vec![3, 3],
            strides: vec![1, 1],
            dilations: vec![1, 1],
            pads_begin: vec![1, 1],
            pads_end: vec![1, 1],
        },
        groups,
    };
    let y = b.op(Op::Convolution(conv), &[x, f]).named("conv");
    let z = (y + bias).named("biased");
    let clipped = (z + z.scalar_like(3.0))
        .max(z.scalar_like(0.0))
        .min(z.scalar_like(6.0));
    let out = (z * clipped / z.scalar_like(6.0)).named("hardswish");
    b.finish(&[out]).unwrap()
}

/// Thread settings covering the producers' paths: one thread, and two threads with every
/// kernel call split (row blocks of one product, one product per task, conv groups).
fn thread_configs() -> [ThreadConfig; 2] {
    [
        ThreadConfig::with_threads(1),
        ThreadConfig {
            threads: 2,
            min_bytes_per_task: 1,
        },
    ]
}

/// Compiles `f` with epilogue fusion on and off under every thread setting, checks which
/// kernels ran as epilogues, and that all results are bit-identical and match the
/// interpreter.
fn check(f: &Function, inputs: &[Tensor], epilogues: usize, rtol: f64) {
    let want = InterpreterBackend.compile(f).unwrap().run(inputs).unwrap();
    let mut reference: Option<Vec<Vec<u32>>> = None;
    for threads in thread_configs() {
        for on in [false, true] {
            let backend = CpuJitBackend::new()
                .with_thread_config(threads)
                .with_epilogue_fusion(on);
            let exe = backend.compile_executable(f).unwrap();
            let fused: Vec<_> = exe
                .kernels()
                .into_iter()
                .filter_map(|k| k.epilogue_of)
                .collect();
            assert_eq!(fused.len(), if on { epilogues } else { 0 }, "{fused:?}");
            let got = exe.run(inputs).unwrap();
            // Twice: the second call reuses the recycled buffers.
            let again = exe.run(inputs).unwrap();
            assert_eq!(bits(&got), bits(&again));
            for (g, w) in got.iter().zip(&want) {
                let c = compare(g, w, rtol, 1e-5);
                assert!(c.passed(), "threads {threads:?}, epilogues {on}: {c}");
            }
            match &reference {
                None => reference = Some(bits(&got)),
                Some(r) => assert_eq!(*r, bits(&got), "threads {threads:?}, epilogues {on}"),
            }
        }
    }
}

#[test]
fn matmul_epilogue_is_bit_identical_on_every_path() {
    // (batch, m, k, n): one large product (split by rows on two threads: 2^18 multiply-adds
    // or more), many products (one per task), and one too small to split.
    for (batch, m, k, n) in [(1, 96, 64, 80), (12, 32, 32, 32), (1, 3, 5, 7)] {
        let f = dense(batch, m, k, n);
        let inputs = [
            tensor(&[batch, m, k], 1),
            tensor(&[k, n], 2),
            tensor(&[n], 3),
        ];
        check(&f, &inputs, 1, 1e-4);
    }
}

#[test]
fn convolution_epilogue_is_bit_identical_on_every_path() {
    // Dense at batch 2 (one task per image) and batch 1 (one task: its product split by
    // rows of filters over the threads), depthwise (blocks of 15 planes, the last one
    // short), all large enough to run on two threads, and a small grouped one.
    let cases = [
        (2, 8, 16, 16, 1),
        (1, 8, 16, 32, 1),
        (1, 64, 24, 64, 64),
        (2, 4, 5, 6, 2),
    ];
    for (n, c, hw, m, groups) in cases {
        let f = conv_hardswish(n, c, hw, m, groups);
        let inputs = [
            tensor(&[n, c, hw, hw], 4),
            tensor(&[m, c / groups, 3, 3], 5),
            tensor(&[m, 1, 1], 6),
        ];
        check(&f, &inputs, 1, 1e-4);
    }
}

#[test]
fn a_kernel_that_reads_the_product_broadcast_is_not_an_epilogue() {
    // The kernel's iteration space is [4, 6] but the product is [4, 1]: it is read with
    // stride 0 along columns, so a block of the product is not what a block of the kernel
    // needs.
    let b = FunctionBuilder::new("broadcast_read");
    let a = b.parameter("a", F32, [4, 3]);
    let w = b.parameter("w", F32, [3, 1]);
    let x = b.parameter("x", F32, [4, 6]);
    let y = b.op(Op::MatMul, &[a, w]).named("y");
    let out = (x + y).relu();
    let f = b.finish(&[out]).unwrap();
    let inputs = [tensor(&[4, 3], 7), tensor(&[3, 1], 8), tensor(&[4, 6], 9)];
    check(&f, &inputs, 0, 1e-5);
}

#[test]
fn an_integer_product_runs_its_kernel_in_the_output_loop() {
    // The i32 MatMul runs natively (on the 16-bit tile where the values fit, else in
    // portable code) and its consumer in its output loop, bit for bit as the reference,
    // wrapping included.
    for (scale, wraps) in [(255, false), (1 << 20, true)] {
        let b = FunctionBuilder::new("int");
        let a = b.parameter("a", ElementType::I32, [13, 37]);
        let w = b.parameter("w", ElementType::I32, [37, 20]);
        let y = b.op(Op::MatMul, &[a, w]);
        let out = (y + y.scalar_like(1.0)) * y;
        let f = b.finish(&[out]).unwrap();
        let exe = CpuJitBackend::new().compile_executable(&f).unwrap();
        assert!(exe.kernels().iter().any(|k| k.epilogue_of.is_some()));
        let value = |i: i32| (i * 7919) % (2 * scale + 1) - scale;
        let ins = [
            Tensor::from_vec((0..13 * 37).map(value).collect::<Vec<i32>>(), [13, 37]).unwrap(),
            Tensor::from_vec(
                (0..37 * 20).map(|i| value(i + 5)).collect::<Vec<i32>>(),
                [37, 20],
            )
            .unwrap(),
        ];
        let want = InterpreterBackend.compile(&f).unwrap().run(&ins).unwrap();
        assert_eq!(
            exe.run(&ins).unwrap(),
            want,
            "values to {scale}, wrapping {wraps}"
        );
    }
}

#[test]
fn a_traced_call_records_the_producer_then_its_epilogue_and_collects() {
    let f = dense(1, 8, 4, 6);
    let inputs = [
        tensor(&[1, 8, 4], 10),
        tensor(&[4, 6], 11),
        tensor(&[6], 12),
    ];
    let exe = CpuJitBackend::new()
        .with_epilogue_fusion(true)
        .compile_executable(&f)
        .unwrap();
    assert_eq!(
        exe.kernels()
            .iter()
            .filter(|k| k.epilogue_of.is_some())
            .count(),
        1
    );
    let tracer = Tracer::start();
    let got = exe.run(&inputs).unwrap();
    let trace = tracer.finish();
    let ops: Vec<&str> = trace.calls[0]
        .records
        .iter()
        .map(|r| r.op.type_name())
        .collect();
    let at = ops.iter().position(|&o| o == "MatMul").unwrap();
    assert_eq!(ops.get(at + 1), Some(&"FusedKernel"), "{ops:?}");
    let collected = trace.calls[0].collect().unwrap();
    let again = InterpreterBackend
        .compile(&collected)
        .unwrap()
        .run(&inputs)
        .unwrap();
    for (g, w) in again.iter().zip(&got) {
        let c = compare(g, w, 1e-5, 1e-6);
        assert!(c.passed(), "{c}");
    }
}
