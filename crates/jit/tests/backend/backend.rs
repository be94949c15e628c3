//! The CPU-JIT backend: plans, kernels and native steps, memory, threads.

use graphlift_ir::{ElementType::F32, ElementType::I32, FunctionBuilder, Op};
use graphlift_jit::CpuJitBackend;
use graphlift_passes::ExtractionConfig;
use graphlift_runtime::{Backend, Executable, InterpreterBackend, RuntimeError, Tensor};
use std::sync::Arc;

fn halide() -> graphlift_ir::Function {
    let b = FunctionBuilder::new("halide_subgraph");
    let [a, bb, c, d] = ["A", "B", "C", "D"].map(|n| b.parameter(n, F32, [8]));
    b.finish(&[((a + bb) * c).relu() + d]).unwrap()
}

fn data8() -> Tensor {
    Tensor::from_vec(vec![-1.0f32, 4.0, -2.0, 5.0, 1.0, 5.0, 7.0, 9.0], [8]).unwrap()
}

#[test]
fn halide_subgraph_is_one_kernel_of_four_nodes() {
    let backend = CpuJitBackend::new();
    let exe = backend.compile_executable(&halide()).unwrap();
    let out = exe.run(&[data8(), data8(), data8(), data8()]).unwrap();
    assert_eq!(
        out[0].read::<f32>().unwrap(),
        &[1.0, 36.0, 6.0, 55.0, 3.0, 55.0, 105.0, 171.0]
    );
    let ks = exe.kernels();
    assert_eq!(ks.len(), 1);
    assert_eq!(ks[0].fused_nodes.len(), 4, "{:?}", ks[0].fused_nodes);
    assert_eq!((ks[0].live_ins, ks[0].outputs), (4, 1));
    assert!(ks[0].code_size > 0);
    // Four-lane Cranelift IR, or assembled code of the host's full width where it has one.
    let vector = match backend.vector_isa() {
        Some(graphlift_jit::VectorIsa::Avx512) => "zmm",
        Some(graphlift_jit::VectorIsa::Avx2) => "ymm",
        None => "f32x4",
    };
    assert!(exe.kernel_ir(&ks[0].name).unwrap().contains(vector));
    assert_eq!(exe.kernel_is_vectorized(&ks[0].name), Some(true));
}

#[test]
fn graphs_with_native_steps_match_the_interpreter() {
    // A lone op (not a kernel), a broadcast feeding a kernel, a result that is a parameter,
    // the same value twice as a result, and a multi-output kernel.
    let b = FunctionBuilder::new("mixed");
    let x = b.parameter("x", F32, [4, 6]);
    let bias = b.parameter("bias", F32, [6]);
    let i = b.parameter("i", I32, [3]);
    let h = (x + bias).tanh();
    let y = h * 2.0 - x;
    let z = h.exp();
    let body = b.finish(&[y, z, x, y, -i, h.gt(x)]).unwrap();
    let inputs = [
        Tensor::from_vec((0..24).map(|k| k as f32 * 0.25 - 3.0).collect(), [4, 6]).unwrap(),
        Tensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.0, -0.0, 3.0], [6]).unwrap(),
        Tensor::from_vec(vec![1, i32::MIN, -7], [3]).unwrap(),
    ];
    let exe = CpuJitBackend::new().compile_executable(&body).unwrap();
    let got = exe.run(&inputs).unwrap();
    let want = InterpreterBackend
        .compile(&body)
        .unwrap()
        .run(&inputs)
        .unwrap();
    // tanh/exp are approximations: compare within a few ulp, exact elsewhere.
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        match (g.read::<f32>(), w.read::<f32>()) {
            (Ok(gv), Ok(wv)) => {
                for (a, r) in gv.iter().zip(wv) {
                    let tol = 8.0 * f32::EPSILON * r.abs().max(1.0);
                    assert!((a - r).abs() <= tol, "result {k}: {a} vs {r}");
                }
            }
            _ => assert_eq!(g, w, "result {k}"),
        }
    }
    assert!(!exe.kernels().is_empty());
    assert!(
        exe.kernels().iter().any(|k| k.outputs >= 2),
        "{:?}",
        exe.kernels()
    );
}

#[test]
fn call_with_validate_names_the_parameter() {
    let exe = CpuJitBackend::new().compile(&halide()).unwrap();
    let mut out = vec![Tensor::zeros(F32, [8]).unwrap()];
    let bad = Tensor::zeros(F32, [7]).unwrap();
    let err = exe
        .call_with_validate(&mut out, &[data8(), data8(), bad.clone(), data8()])
        .unwrap_err();
    assert!(
        matches!(err, RuntimeError::ArgumentType { index: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("`C`"), "{err}");
    // `call` checks too: no pointer reaches a kernel for a short buffer.
    let err = exe
        .call(&mut out, &[data8(), data8(), bad, data8()])
        .unwrap_err();
    assert!(err.to_string().contains("`C`"), "{err}");
    let err = exe.call(&mut out, &[data8()]).unwrap_err();
    assert!(matches!(err, RuntimeError::ArgumentCount { .. }), "{err}");
}

#[test]
fn executables_free_their_jit_memory_on_drop() {
    // A fresh backend each time: dropping backend and executable frees the code.
    let f = halide();
    let mut watches = Vec::new();
    for _ in 0..50 {
        let backend = CpuJitBackend::new();
        let exe = backend.compile_executable(&f).unwrap();
        watches.push(exe.memory_watch());
        let exe: Arc<dyn Executable> = Arc::new(exe);
        exe.run(&[data8(), data8(), data8(), data8()]).unwrap();
    }
    assert!(watches.iter().all(|w| w.is_released()));
}

#[test]
fn cached_code_lives_until_the_backend_and_its_executables_are_dropped() {
    let f = halide();
    let backend = CpuJitBackend::new();
    let exes: Vec<_> = (0..20)
        .map(|_| backend.compile_executable(&f).unwrap())
        .collect();
    let watch = exes[0].memory_watch();
    drop(exes);
    // The cache still holds the code.
    assert!(!watch.is_released());
    let exe = backend.compile_executable(&f).unwrap();
    drop(backend);
    // The executable still holds it.
    assert!(!watch.is_released());
    exe.run(&[data8(), data8(), data8(), data8()]).unwrap();
    drop(exe);
    assert!(watch.is_released());
}

#[test]
fn clearing_the_cache_frees_code_no_executable_uses() {
    let backend = CpuJitBackend::new();
    let watch = backend
        .compile_executable(&halide())
        .unwrap()
        .memory_watch();
    assert!(!watch.is_released());
    backend.clear_cache();
    assert!(watch.is_released());
    assert_eq!(backend.cache_stats().entries, 0);
}

/// `relu((a + b) * c) + d * k` on `[n]`, with node names prefixed by `prefix`.
fn named(prefix: &str, n: usize, k: f64) -> graphlift_ir::Function {
    let b = FunctionBuilder::new(format!("{prefix}_fn"));
    let [a, bb, c, d] =
        ["a", "b", "c", "d"].map(|x| b.parameter(&format!("{prefix}{x}"), F32, [n]));
    b.finish(&[((a + bb) * c).relu() + d * k]).unwrap()
}

fn only_kernel(exe: &graphlift_jit::CpuJitExecutable) -> usize {
    let ks = exe.kernels();
    assert_eq!(ks.len(), 1, "{ks:?}");
    exe.kernel_entry_address(&ks[0].name).unwrap()
}

#[test]
fn equal_regions_compile_once_per_backend() {
    // The executable cache off, so that every compile runs the pipeline.
    let backend = CpuJitBackend::new().with_executable_cache(false);
    let first = backend.compile_executable(&named("p", 64, 3.0)).unwrap();
    assert_eq!(backend.cache_stats().compiled, 1);
    // The same function again, and an equal region under other names: hits.
    let again = backend.compile_executable(&named("p", 64, 3.0)).unwrap();
    let renamed = backend.compile_executable(&named("q", 64, 3.0)).unwrap();
    let stats = backend.cache_stats();
    assert_eq!(
        (stats.compiled, stats.hits, stats.entries),
        (1, 2, 1),
        "{stats:?}"
    );
    assert_eq!(only_kernel(&first), only_kernel(&again));
    assert_eq!(only_kernel(&first), only_kernel(&renamed));
    // Code ranges name the nodes of the body that reused the code.
    let k = &renamed.kernels()[0];
    assert!(
        k.code_ranges.iter().all(|r| !r.node.starts_with('p')),
        "{k:?}"
    );
    let inputs: Vec<Tensor> = (0..4)
        .map(|s| {
            Tensor::from_vec((0..64).map(|i| (i * (s + 1)) as f32 - 30.0).collect(), [64]).unwrap()
        })
        .collect();
    assert_eq!(first.run(&inputs).unwrap(), renamed.run(&inputs).unwrap());

    // Another constant, another shape: misses.
    let other_k = backend.compile_executable(&named("p", 64, 4.0)).unwrap();
    let other_n = backend.compile_executable(&named("p", 65, 3.0)).unwrap();
    assert_eq!(backend.cache_stats().compiled, 3);
    assert_ne!(only_kernel(&first), only_kernel(&other_k));
    assert_ne!(only_kernel(&first), only_kernel(&other_n));
    assert_ne!(first.run(&inputs).unwrap(), other_k.run(&inputs).unwrap());

    // Another backend has its own cache.
    let elsewhere = CpuJitBackend::new();
    let e = elsewhere.compile_executable(&named("p", 64, 3.0)).unwrap();
    assert_eq!(elsewhere.cache_stats().compiled, 1);
    assert_ne!(only_kernel(&first), only_kernel(&e));
}

#[test]
fn equal_functions_share_one_plan_while_an_executable_lives() {
    let backend = CpuJitBackend::new();
    let inputs: Vec<Tensor> = (0..4)
        .map(|s| Tensor::from_vec(super::uniform(64, s), [64]).unwrap())
        .collect();
    let first = backend.compile_executable(&named("p", 64, 3.0)).unwrap();
    // An equal Function, built again: the plan is shared, the pipeline does not run (the
    // kernel cache is not even asked), and the pass report is the first compile's.
    let again = backend.compile_executable(&named("p", 64, 3.0)).unwrap();
    let stats = backend.executable_cache_stats();
    assert_eq!((stats.compiled, stats.hits, stats.live), (1, 1, 1));
    assert_eq!(backend.cache_stats().hits, 0);
    assert_eq!(first.pass_report(), again.pass_report());
    assert_eq!(only_kernel(&first), only_kernel(&again));
    assert_eq!(first.run(&inputs).unwrap(), again.run(&inputs).unwrap());

    // Other names, another constant, another shape: each its own plan, and the names
    // reported are each Function's own.
    let renamed = backend.compile_executable(&named("q", 64, 3.0)).unwrap();
    let other_k = backend.compile_executable(&named("p", 64, 4.0)).unwrap();
    let other_n = backend.compile_executable(&named("p", 65, 3.0)).unwrap();
    let stats = backend.executable_cache_stats();
    assert_eq!((stats.compiled, stats.hits, stats.live), (4, 1, 4));
    assert!(renamed.kernels()[0]
        .code_ranges
        .iter()
        .all(|r| !r.node.starts_with('p')));
    assert_ne!(first.run(&inputs).unwrap(), other_k.run(&inputs).unwrap());
    assert_eq!(other_n.parameters()[0].tensor_type.shape.dims(), &[65]);

    // When the last executable of a Function goes, so does its plan.
    drop((first, again));
    assert_eq!(backend.executable_cache_stats().live, 3);
    let third = backend.compile_executable(&named("p", 64, 3.0)).unwrap();
    assert_eq!(backend.executable_cache_stats().compiled, 5);
    assert_eq!(third.run(&inputs).unwrap(), renamed.run(&inputs).unwrap());

    // Another thread setting starts an empty cache; switched off, nothing is cached.
    let one = backend.clone().with_threads(1);
    assert_eq!(one.executable_cache_stats(), Default::default());
    one.compile_executable(&named("p", 64, 3.0)).unwrap();
    assert_eq!(one.executable_cache_stats().compiled, 1);
    let off = backend.with_executable_cache(false);
    let _a = off.compile_executable(&named("p", 64, 3.0)).unwrap();
    let _b = off.compile_executable(&named("p", 64, 3.0)).unwrap();
    assert_eq!(off.executable_cache_stats(), Default::default());
}

#[test]
fn equal_regions_within_one_function_compile_once() {
    // Two equal regions separated by a native step (Exp excluded from fusion): two
    // kernels, one compilation.
    let b = FunctionBuilder::new("twice");
    let x = b.parameter("x", F32, [16]);
    // No constants: CSE would share them between the regions (making them outputs).
    let r1 = (x + x).relu() * x;
    let z = r1.exp();
    let r2 = (z + z).relu() * z;
    let f = b.finish(&[r2]).unwrap();
    let backend = CpuJitBackend::with_config(ExtractionConfig::default().exclude("Exp"));
    let exe = backend.compile_executable(&f).unwrap();
    let ks = exe.kernels();
    assert_eq!(ks.len(), 2, "{ks:?}");
    assert_eq!(backend.cache_stats().compiled, 1, "{ks:?}");
    assert_eq!(
        exe.kernel_entry_address(&ks[0].name),
        exe.kernel_entry_address(&ks[1].name)
    );
    let x = Tensor::from_vec((0..16).map(|i| i as f32 - 8.0).collect(), [16]).unwrap();
    let got = exe.run(std::slice::from_ref(&x)).unwrap();
    let want = InterpreterBackend.compile(&f).unwrap().run(&[x]).unwrap();
    assert_eq!(got[0], want[0]);
}

#[test]
fn executables_are_called_from_several_threads() {
    let exe: Arc<dyn Executable> = CpuJitBackend::new().compile(&halide()).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let exe = Arc::clone(&exe);
            s.spawn(move || {
                for _ in 0..200 {
                    let out = exe.run(&[data8(), data8(), data8(), data8()]).unwrap();
                    assert_eq!(out[0].read::<f32>().unwrap()[7], 171.0);
                }
            });
        }
    });
}

#[test]
fn prefused_functions_compile_their_kernels() {
    // A FusedKernel node built by hand (as a pass would) is compiled as is.
    let b = FunctionBuilder::new("body");
    let p = b.parameter("p", F32, [5]);
    let q = b.parameter("q", F32, [5]);
    let body = b.finish(&[p * q, p - q]).unwrap();
    let mut f = graphlift_ir::Function::new("outer");
    let x = f.add_parameter("x", F32, [5]).unwrap();
    let y = f.add_parameter("y", F32, [5]).unwrap();
    let k = f
        .add_node(
            Op::FusedKernel(Arc::new(graphlift_ir::FusedKernel { body })),
            &[x.into(), y.into()],
        )
        .unwrap();
    f.add_result(graphlift_ir::Output::new(k, 1), None).unwrap();
    f.add_result(graphlift_ir::Output::new(k, 0), None).unwrap();
    let exe = CpuJitBackend::new().compile_executable(&f).unwrap();
    let xs = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], [5]).unwrap();
    let ys = Tensor::from_vec(vec![2.0f32; 5], [5]).unwrap();
    let out = exe.run(&[xs, ys]).unwrap();
    assert_eq!(out[0].read::<f32>().unwrap(), &[-1.0, 0.0, 1.0, 2.0, 3.0]);
    assert_eq!(out[1].read::<f32>().unwrap(), &[2.0, 4.0, 6.0, 8.0, 10.0]);
    assert_eq!(exe.kernels().len(), 1);
}

/// Temporaries die after their last use: a chain of three 16 KiB transposes keeps at most
/// two of them alive (a step's input and output), so the peak is 32 KiB, not 48 KiB.
#[test]
fn peak_intermediate_bytes_follow_liveness() {
    let mut f = graphlift_ir::Function::new("chain");
    let x = f
        .add_parameter("x", F32, graphlift_ir::Shape::new([64, 64]))
        .unwrap();
    let mut v: graphlift_ir::Output = x.into();
    for _ in 0..3 {
        v = f.add_node(Op::Transpose(vec![1, 0]), &[v]).unwrap().into();
    }
    f.add_result(v, None).unwrap();
    let exe = CpuJitBackend::new().compile(&f).unwrap();
    assert_eq!(exe.peak_intermediate_bytes(), Some(2 * 64 * 64 * 4));
    let interp = InterpreterBackend.compile(&f).unwrap();
    assert_eq!(interp.peak_intermediate_bytes(), None);
}

/// A MatMul whose value is a result writes into the caller's output tensor: calls that
/// reuse one output tensor (pre-filled with NaN) give the interpreter's values each time.
#[test]
fn matmul_results_write_into_the_callers_output() {
    let mut f = graphlift_ir::Function::new("mm");
    let a = f
        .add_parameter("a", F32, graphlift_ir::Shape::new([2, 3, 4]))
        .unwrap();
    let b = f
        .add_parameter("b", F32, graphlift_ir::Shape::new([4, 5]))
        .unwrap();
    let y = f.add_node(Op::MatMul, &[a.into(), b.into()]).unwrap();
    f.add_result(y.into(), None).unwrap();
    let exe = CpuJitBackend::new().with_threads(1).compile(&f).unwrap();
    let interp = InterpreterBackend.compile(&f).unwrap();
    let mut out = vec![Tensor::from_vec(vec![f32::NAN; 30], [2, 3, 5]).unwrap()];
    for k in 0..2 {
        let ins = [
            Tensor::from_vec((0..24).map(|i| (i + k) as f32 / 8.0).collect(), [2, 3, 4]).unwrap(),
            Tensor::from_vec((0..20).map(|i| (i * k) as f32 - 3.0).collect(), [4, 5]).unwrap(),
        ];
        exe.call(&mut out, &ins).unwrap();
        let want = interp.run(&ins).unwrap();
        assert_close(&out[0], &want[0], 1e-5, &format!("call {k}"));
    }
}

/// `n × n` `x` through three rounds of `MatMul(op(xᵀ) + xᵀ, x)`, `op` alternating Relu and
/// Negative (`flip` starts with Negative): JIT kernels between native steps.
fn recycle_chain(n: usize, flip: bool) -> graphlift_ir::Function {
    let mut f = graphlift_ir::Function::new("recycle");
    let x = f
        .add_parameter("x", F32, graphlift_ir::Shape::new([n, n]))
        .unwrap();
    let mut v: graphlift_ir::Output = x.into();
    for k in 0..3 {
        let t = f.add_node(Op::Transpose(vec![1, 0]), &[v]).unwrap();
        let e = f
            .add_node(
                Op::Unary(if (k % 2 == 0) != flip {
                    graphlift_ir::UnaryOp::Relu
                } else {
                    graphlift_ir::UnaryOp::Negative
                }),
                &[t.into()],
            )
            .unwrap();
        // Two elementwise ops: one fused kernel between the native steps.
        let s = f
            .add_node(
                Op::Binary(graphlift_ir::BinaryOp::Add),
                &[e.into(), t.into()],
            )
            .unwrap();
        v = f
            .add_node(Op::MatMul, &[s.into(), x.into()])
            .unwrap()
            .into();
    }
    f.add_result(v, None).unwrap();
    f
}

/// Checks call `call` of `exe` (of [`recycle_chain`] `f`, `n × n`) against the interpreter.
fn check_recycled_call(exe: &dyn Executable, f: &graphlift_ir::Function, n: usize, call: usize) {
    let x = Tensor::from_vec(
        (0..n * n)
            .map(|i| ((i * 7 + call * 13) % 19) as f32 / 9.0 - 1.0)
            .collect(),
        [n, n],
    )
    .unwrap();
    let got = exe.run(std::slice::from_ref(&x)).unwrap();
    let want = InterpreterBackend.compile(f).unwrap().run(&[x]).unwrap();
    assert_close(&got[0], &want[0], 1e-4, &format!("{n} x {n}, call {call}"));
}

/// Asserts that `f32` tensor `got` has `want`'s elements within `rel · (1 + |want|)` each.
fn assert_close(got: &Tensor, want: &Tensor, rel: f32, what: &str) {
    let (g, w) = (got.read::<f32>().unwrap(), want.read::<f32>().unwrap());
    assert_eq!(g.len(), w.len(), "{what}");
    for (g, w) in g.iter().zip(w) {
        assert!((g - w).abs() <= rel * (1.0 + w.abs()), "{what}: {g} vs {w}");
    }
}

/// Intermediates share buffers by liveness and are recycled across calls: each of several
/// calls with different inputs, through JIT kernels and native steps writing into buffers
/// an earlier call filled, matches the interpreter.
#[test]
fn recycled_buffers_are_fully_rewritten_every_call() {
    let f = recycle_chain(16, false);
    let exe = CpuJitBackend::new().compile_executable(&f).unwrap();
    assert_eq!(exe.kernels().len(), 3);
    // Eight [16, 16] f32 temporaries before the result, at most two alive at once.
    assert!(
        exe.intermediate_buffers() <= 3,
        "{}",
        exe.intermediate_buffers()
    );
    for call in 0..3 {
        check_recycled_call(&exe, &f, 16, call);
    }
}

/// `x [m, k0] @ a [k0, k1]`, transposed, `@ b [m, k2]`, transposed, `@ c [k1, 8]`: four
/// temporaries of four shapes, each alive over two steps, and a `[k2, 8]` result.
fn shape_chain(m: usize, k: [usize; 3]) -> graphlift_ir::Function {
    use graphlift_ir::Shape;
    let mut f = graphlift_ir::Function::new("shape_chain");
    let x = f.add_parameter("x", F32, Shape::new([m, k[0]])).unwrap();
    let shapes = [[k[0], k[1]], [m, k[2]], [k[1], 8]];
    let w: Vec<graphlift_ir::Output> = ["a", "b", "c"]
        .iter()
        .zip(shapes)
        .map(|(&n, s)| f.add_parameter(n, F32, Shape::new(s)).unwrap().into())
        .collect();
    let mut v: graphlift_ir::Output = x.into();
    for w in &w[..2] {
        let p = f.add_node(Op::MatMul, &[v, *w]).unwrap();
        v = f
            .add_node(Op::Transpose(vec![1, 0]), &[p.into()])
            .unwrap()
            .into();
    }
    let r = f.add_node(Op::MatMul, &[v, w[2]]).unwrap();
    f.add_result(r.into(), None).unwrap();
    f
}

/// Where a plan's buffers outgrow half the last-level cache (here a backend assuming one
/// of 1 MiB), temporaries of 128 KiB and more share buffers whatever their shapes (a
/// buffer grows to the largest it holds), smaller ones only with their element count:
/// [`shape_chain`]'s four temporaries take two buffers when large, four when small (and
/// the result one of its own); with a cache of 64 MiB the large ones fit and keep a buffer
/// each. Every call of each, with other inputs through buffers an
/// earlier call left at other shapes, matches the interpreter.
#[test]
fn large_temporaries_share_buffers_across_shapes() {
    let with_cache = |bytes| {
        let target = graphlift_kernels::target::Target::from_env().with_last_level_cache(bytes);
        CpuJitBackend::for_target(ExtractionConfig::default(), target)
    };
    let (small, large) = (with_cache(1 << 20), with_cache(64 << 20));
    let cases = [
        (&small, 64, [256, 1024, 96], 3),
        (&small, 8, [32, 64, 12], 5),
        (&large, 64, [256, 1024, 96], 5),
    ];
    for (backend, m, k, buffers) in cases {
        let f = shape_chain(m, k);
        let exe = backend.compile_executable(&f).unwrap();
        assert_eq!(exe.intermediate_buffers(), buffers, "m {m}, k {k:?}");
        let interp = InterpreterBackend.compile(&f).unwrap();
        for call in 0..3 {
            let ins: Vec<Tensor> = f
                .parameters()
                .iter()
                .enumerate()
                .map(|(p, &id)| {
                    let shape = f.output_type(id.into()).unwrap().shape.clone();
                    let n = shape.element_count().unwrap();
                    let v = (0..n).map(|i| ((i * 7 + p * 5 + call * 3) % 23) as f32 / 11.0 - 1.0);
                    Tensor::from_vec(v.collect(), shape).unwrap()
                })
                .collect();
            let (got, want) = (exe.run(&ins).unwrap(), interp.run(&ins).unwrap());
            assert_close(&got[0], &want[0], 1e-3, &format!("m {m}, call {call}"));
        }
    }
}

/// Executables of one backend with shared buffers (as a loop body's specialisations are)
/// take each other's dead temporaries: called in turn, those of the same types (other ops)
/// and of other sizes each match the interpreter every call.
#[test]
fn executables_sharing_buffers_rewrite_each_others() {
    let be = CpuJitBackend::new().with_shared_buffers();
    let cases = [(16, false), (16, true), (12, false)];
    let fs: Vec<_> = cases
        .iter()
        .map(|&(n, flip)| recycle_chain(n, flip))
        .collect();
    let exes: Vec<_> = fs
        .iter()
        .map(|f| be.compile_executable(f).unwrap())
        .collect();
    for call in 0..3 {
        for ((exe, f), &(n, _)) in exes.iter().zip(&fs).zip(&cases) {
            check_recycled_call(exe, f, n, call);
        }
    }
}

/// A `Reshape` whose input dies at it takes over that input's buffer (no copy), and the
/// buffers it swaps stay right across calls: each of several calls matches the interpreter
/// bit for bit. A reshape of a parameter, and one whose input is read again later, copy.
#[test]
fn reshapes_forward_dying_inputs_across_calls() {
    let mut f = graphlift_ir::Function::new("forward");
    use graphlift_ir::Shape;
    let x = f.add_parameter("x", F32, Shape::new([6, 8])).unwrap();
    // A reshape of the parameter: not a temporary, copied.
    let r0 = f
        .add_node(Op::Reshape(Shape::new([8, 6])), &[x.into()])
        .unwrap();
    let t0 = f.add_node(Op::Transpose(vec![1, 0]), &[r0.into()]).unwrap();
    // Dies here: forwarded.
    let r1 = f
        .add_node(Op::Reshape(Shape::new([4, 12])), &[t0.into()])
        .unwrap();
    let t1 = f.add_node(Op::Transpose(vec![1, 0]), &[r1.into()]).unwrap();
    // `t1` is read again below: copied.
    let r2 = f
        .add_node(Op::Reshape(Shape::new([48])), &[t1.into()])
        .unwrap();
    let t2 = f
        .add_node(Op::Reshape(Shape::new([6, 8])), &[t1.into()])
        .unwrap();
    let t3 = f.add_node(Op::Transpose(vec![1, 0]), &[t2.into()]).unwrap();
    // Dies here: forwarded.
    let r3 = f
        .add_node(Op::Reshape(Shape::new([2, 24])), &[t3.into()])
        .unwrap();
    f.add_result(r2.into(), None).unwrap();
    f.add_result(r3.into(), None).unwrap();
    let exe = CpuJitBackend::new().compile_executable(&f).unwrap();
    assert_eq!(
        exe.forwarded_reshapes(),
        3,
        "r1, t2 (t1's last reader) and r3"
    );
    let interp = InterpreterBackend.compile(&f).unwrap();
    for call in 0..4 {
        let x = Tensor::from_vec(
            (0..48).map(|i| (i * 5 + call * 11) as f32).collect(),
            [6, 8],
        )
        .unwrap();
        let got = exe.run(std::slice::from_ref(&x)).unwrap();
        let want = interp.run(&[x]).unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.shape(), w.shape(), "call {call}");
            assert_eq!(
                g.read::<f32>().unwrap(),
                w.read::<f32>().unwrap(),
                "call {call}"
            );
        }
    }
}

#[test]
fn single_kernel_plans_run_on_the_callers_buffers_with_the_same_results() {
    // One kernel reading inputs and a constant, its two outputs the results in the other
    // order: a direct call. A result twice, or a parameter as a result: the general path.
    let b = FunctionBuilder::new("direct");
    let x = b.parameter("x", F32, [3, 5]);
    let y = b.parameter("y", F32, [5]);
    let k = b.constant(vec![0.5f32, -1.0, 2.0, 0.25, 3.0], [5]);
    let s = (x + y) * k;
    let t = s.relu() - x;
    let two_outputs = b.finish(&[t, s]).unwrap();
    let twice = {
        let b = FunctionBuilder::new("twice");
        let x = b.parameter("x", F32, [3, 5]);
        let y = b.parameter("y", F32, [5]);
        let s = (x + y).exp();
        b.finish(&[s, s]).unwrap()
    };
    let passthrough = {
        let b = FunctionBuilder::new("passthrough");
        let x = b.parameter("x", F32, [3, 5]);
        let y = b.parameter("y", F32, [5]);
        b.finish(&[(x * y).tanh(), x]).unwrap()
    };
    let inputs = [
        Tensor::from_vec((0..15).map(|k| k as f32 * 0.7 - 5.0).collect(), [3, 5]).unwrap(),
        Tensor::from_vec(vec![1.0f32, -2.0, 0.0, 3.5, -0.5], [5]).unwrap(),
    ];
    for (f, direct) in [(&two_outputs, true), (&twice, false), (&passthrough, false)] {
        let exe = CpuJitBackend::new().compile_executable(f).unwrap();
        assert_eq!(exe.calls_directly(), direct, "{}", f.name());
        let got = exe.run(&inputs).unwrap();
        // A live tracer sends the call through the step loop.
        let tracer = graphlift_runtime::trace::Tracer::start();
        let traced = exe.run(&inputs).unwrap();
        assert_eq!(tracer.finish().calls.len(), 1);
        let want = InterpreterBackend.compile(f).unwrap().run(&inputs).unwrap();
        assert_eq!(got.len(), want.len());
        assert_eq!(super::bits(&got), super::bits(&traced), "{}", f.name());
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.shape(), w.shape(), "{} result {k}", f.name());
            for (a, e) in g
                .read::<f32>()
                .unwrap()
                .iter()
                .zip(w.read::<f32>().unwrap())
            {
                assert!(
                    (a - e).abs() <= 1e-5 * e.abs().max(1.0),
                    "{}: {a} vs {e}",
                    f.name()
                );
            }
        }
        // Outputs given in place are written in place, whatever they held.
        let mut outs: Vec<Tensor> = want
            .iter()
            .map(|w| Tensor::from_vec(vec![f32::NAN; w.len()], w.shape().clone()).unwrap())
            .collect();
        exe.call(&mut outs, &inputs).unwrap();
        for (o, g) in outs.iter().zip(&got) {
            assert_eq!(o.read::<f32>().unwrap(), g.read::<f32>().unwrap());
        }
    }
}
