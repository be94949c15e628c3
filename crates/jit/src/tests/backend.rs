//! The CPU-JIT backend: plans, kernels and native steps, memory, threads.

use std::sync::Arc;

use graphlift_ir::{ElementType::F32, ElementType::I32, FunctionBuilder, Op};
use graphlift_runtime::{Backend, Executable, InterpreterBackend, RuntimeError, Tensor};

use crate::CpuJitBackend;

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
    let exe = CpuJitBackend::new().compile_executable(&halide()).unwrap();
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
    assert!(exe.kernel_ir(&ks[0].name).unwrap().contains("f32x4"));
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
    let f = halide();
    let backend = CpuJitBackend::new();
    let mut watches = Vec::new();
    for _ in 0..100 {
        let exe = backend.compile_executable(&f).unwrap();
        watches.push(exe.memory_watch());
        let exe: Arc<dyn Executable> = Arc::new(exe);
        exe.run(&[data8(), data8(), data8(), data8()]).unwrap();
    }
    assert!(watches.iter().all(|w| w.is_released()));
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
