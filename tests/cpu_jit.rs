//! End-to-end tests of the CPU-JIT backend through the facade: nGraph's halide_subgraph,
//! broadcast bias, multi-output kernels, threads, argument validation, and JIT memory.

use std::sync::{Arc, Mutex, MutexGuard};

use graphlift::{
    select, Backend, ElementType::F32, Executable, FunctionBuilder, RuntimeError, Tensor,
};

/// Tests in this file run one at a time, so the process-wide count of live JIT modules
/// only moves because of the test that looks at it.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

fn jit() -> Arc<dyn graphlift::runtime::Backend> {
    Backend::create("CPU-JIT").unwrap()
}

fn interpreter() -> Arc<dyn graphlift::runtime::Backend> {
    Backend::create("INTERPRETER").unwrap()
}

fn halide_function() -> graphlift::Function {
    let b = FunctionBuilder::new("halide_subgraph");
    let [a, bb, c, d] = ["A", "B", "C", "D"].map(|n| b.parameter(n, F32, [8]));
    b.finish(&[((a + bb) * c).relu() + d]).unwrap()
}

fn data8() -> Tensor {
    Tensor::from_vec(vec![-1.0f32, 4.0, -2.0, 5.0, 1.0, 5.0, 7.0, 9.0], [8]).unwrap()
}

#[test]
fn halide_subgraph() {
    let _s = serial();
    let exe = jit().compile(&halide_function()).unwrap();
    let out = exe.run(&[data8(), data8(), data8(), data8()]).unwrap();
    assert_eq!(
        out[0].read::<f32>().unwrap(),
        &[1.0, 36.0, 6.0, 55.0, 3.0, 55.0, 105.0, 171.0]
    );
    let kernels = exe.kernels();
    assert_eq!(kernels.len(), 1, "{kernels:?}");
    assert_eq!(kernels[0].fused_nodes.len(), 4, "{kernels:?}");
    assert_eq!((kernels[0].live_ins, kernels[0].outputs), (4, 1));
    assert!(kernels[0].code_size > 0);
}

#[test]
fn broadcast_bias_relu() {
    let _s = serial();
    // E4-style: relu(X[N/8, 8] + b[8]), N = 8000; b is read in place, never copied.
    let n = 8000;
    let b = FunctionBuilder::new("bias_relu");
    let x = b.parameter("X", F32, [n / 8, 8]);
    let bias = b.parameter("b", F32, [8]);
    let f = b.finish(&[(x + bias).relu()]).unwrap();
    let xs: Vec<f32> = (0..n)
        .map(|i| ((i * 37) % 101) as f32 * 0.1 - 5.0)
        .collect();
    let inputs = [
        Tensor::from_vec(xs, [n / 8, 8]).unwrap(),
        Tensor::from_vec(vec![0.5f32, -1.0, 2.0, -0.0, 0.0, f32::NAN, -3.0, 1.0], [8]).unwrap(),
    ];
    let exe = jit().compile(&f).unwrap();
    let got = exe.run(&inputs).unwrap();
    let want = interpreter().compile(&f).unwrap().run(&inputs).unwrap();
    let (g, w) = (
        got[0].read::<f32>().unwrap(),
        want[0].read::<f32>().unwrap(),
    );
    for (i, (a, r)) in g.iter().zip(w).enumerate() {
        assert!(
            a.to_bits() == r.to_bits() || (a.is_nan() && r.is_nan()),
            "element {i}: {a} vs {r}"
        );
    }
    let kernels = exe.kernels();
    assert_eq!(kernels.len(), 1, "{kernels:?}");
    assert_eq!(kernels[0].live_ins, 2);
}

#[test]
fn multi_output_kernel() {
    let _s = serial();
    let b = FunctionBuilder::new("multi_output");
    let [p, q, r] = ["p", "q", "r"].map(|n| b.parameter(n, F32, [4, 5]));
    let s = p * q - r;
    let f = b
        .finish(&[s.relu(), select(s.gt(r), s, q) / 3.0, s, (s * s).sqrt()])
        .unwrap();
    let inputs: Vec<Tensor> = (0..3)
        .map(|k| {
            Tensor::from_vec(
                (0..20).map(|i| (i * (k + 3)) as f32 * 0.3 - 2.0).collect(),
                [4, 5],
            )
            .unwrap()
        })
        .collect();
    let exe = jit().compile(&f).unwrap();
    let got = exe.run(&inputs).unwrap();
    let want = interpreter().compile(&f).unwrap().run(&inputs).unwrap();
    assert_eq!(got, want);
    let kernels = exe.kernels();
    assert_eq!(kernels.len(), 1, "{kernels:?}");
    assert_eq!(kernels[0].outputs, 4, "{kernels:?}");
}

#[test]
fn executables_are_send_and_sync_and_run_on_threads() {
    let _s = serial();
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<graphlift::jit::CpuJitExecutable>();
    assert_send_sync::<Arc<dyn Executable>>();
    let exe = jit().compile(&halide_function()).unwrap();
    std::thread::scope(|s| {
        for _ in 0..2 {
            let exe = Arc::clone(&exe);
            s.spawn(move || {
                for _ in 0..100 {
                    let out = exe.run(&[data8(), data8(), data8(), data8()]).unwrap();
                    assert_eq!(out[0].read::<f32>().unwrap()[1], 36.0);
                }
            });
        }
    });
}

#[test]
fn call_with_validate_names_the_parameter() {
    let _s = serial();
    let exe = jit().compile(&halide_function()).unwrap();
    let mut out = [Tensor::zeros(F32, [8]).unwrap()];
    let wrong = Tensor::zeros(graphlift::ElementType::F64, [8]).unwrap();
    let err = exe
        .call_with_validate(&mut out, &[data8(), wrong, data8(), data8()])
        .unwrap_err();
    assert!(
        matches!(err, RuntimeError::ArgumentType { index: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("`B`"), "{err}");
    let err = exe.call_with_validate(&mut out, &[data8()]).unwrap_err();
    assert!(matches!(err, RuntimeError::ArgumentCount { .. }), "{err}");
    let mut bad_out = [Tensor::zeros(F32, [9]).unwrap()];
    let err = exe
        .call_with_validate(&mut bad_out, &[data8(), data8(), data8(), data8()])
        .unwrap_err();
    assert!(
        matches!(err, RuntimeError::ArgumentType { what: "output", .. }),
        "{err}"
    );
}

#[test]
fn jit_memory_is_freed_when_executables_are_dropped() {
    let _s = serial();
    let f = halide_function();
    let backend = jit();
    let before = graphlift::jit::live_modules();
    // One backend: its kernel cache compiles the kernel once, so all share one module.
    let exes: Vec<Arc<dyn Executable>> = (0..50).map(|_| backend.compile(&f).unwrap()).collect();
    assert_eq!(graphlift::jit::live_modules(), before + 1);
    // Fresh backends: one module each.
    let others: Vec<Arc<dyn Executable>> = (0..50).map(|_| jit().compile(&f).unwrap()).collect();
    assert_eq!(graphlift::jit::live_modules(), before + 51);
    for exe in exes.iter().chain(&others) {
        exe.run(&[data8(), data8(), data8(), data8()]).unwrap();
    }
    drop(others);
    assert_eq!(graphlift::jit::live_modules(), before + 1);
    drop(exes);
    // The backend's cache still holds the module; dropping the backend frees it.
    assert_eq!(graphlift::jit::live_modules(), before + 1);
    drop(backend);
    assert_eq!(graphlift::jit::live_modules(), before);
}

#[test]
fn kernel_results_are_written_into_the_callers_output_buffers() {
    let _s = serial();
    let n = 4096;
    let f = graphlift_harness::exprs::peer_expression("E1", n).unwrap();
    let exe = Backend::create("CPU-JIT").unwrap().compile(&f).unwrap();
    let x = Tensor::from_vec((0..n).map(|i| i as f32 - 2000.0).collect::<Vec<_>>(), [n]).unwrap();
    let inputs = [x.clone(), x.clone(), x.clone(), x];
    let mut out = vec![Tensor::zeros(graphlift::ElementType::F32, [n]).unwrap()];
    let before = out[0].data().as_ptr();
    exe.call(&mut out, &inputs).unwrap();
    exe.call(&mut out, &inputs).unwrap();
    assert_eq!(
        out[0].data().as_ptr(),
        before,
        "no fresh output buffer per call"
    );
    let reference = Backend::create("INTERPRETER").unwrap().compile(&f).unwrap();
    let want = reference.run(&inputs).unwrap();
    assert_eq!(out[0], want[0]);
}
