//! Non-temporal stores: a streaming kernel writes what the plain kernel writes, bit for bit,
//! at every length and at ranges that start anywhere; the backend streams large standalone
//! kernels only.

use graphlift_ir::{ElementType, Function, FunctionBuilder, TensorData};
use graphlift_runtime::{Executable, Tensor};

use crate::codegen::plan::plan_kernel;
use crate::{CpuJitBackend, JitKernel};

/// `body` compiled with streaming stores on.
fn streaming(body: &Function) -> JitKernel {
    let mut plan = plan_kernel(body.name(), body).unwrap();
    plan.veclib = crate::veclib::default_on();
    plan.stream = true;
    JitKernel::from_plan(body, plan).unwrap()
}

/// The outputs (inputs are finite and so are the results: `PartialEq` on the data is exact).
fn run(k: &JitKernel, inputs: &[&Tensor], range: (usize, usize)) -> Vec<TensorData> {
    super::outputs_of_range(k, inputs, k.element_count(), range)
        .into_iter()
        .map(Tensor::into_data)
        .collect()
}

#[test]
fn streaming_kernels_write_what_plain_kernels_write() {
    for n in [1, 3, 4, 5, 17, 127, 128, 129, 300, 1000, 4099] {
        let b = FunctionBuilder::new("stream");
        let x = b.parameter("x", ElementType::F32, [n]);
        let y = b.parameter("y", ElementType::F32, [n]);
        let i = b.parameter("i", ElementType::I32, [n]);
        // E1; an `i32` output; a `bool` output (not streamed); an input passed through; a
        // library call before the streamed stage; forms and a function written straight to
        // outputs (with non-temporal stores from the first 64-byte line of the output on
        // AVX-512 hosts).
        let gelu = (x * 0.5) * (((x + x * x * x * 0.044715) * 0.797_884_6).tanh() + 1.0);
        let outputs = [
            ((x + y) * y).relu() + x,
            i + i,
            x.lt(y),
            y,
            (x * y).tanh() * x + 1.0,
            x / ((-x).exp() + 1.0),
            gelu,
            y.tanh(),
        ];
        let body = b.finish(&outputs).unwrap();
        let xs = Tensor::from_vec(super::uniform(n, 1), [n]).unwrap();
        let ys = Tensor::from_vec(super::uniform(n, 2), [n]).unwrap();
        let is = Tensor::from_vec((0..n as i32).map(|v| v * 7 - 50).collect(), [n]).unwrap();
        let ins = [&xs, &ys, &is];
        let stream = streaming(&body);
        let plain = JitKernel::compile(&body).unwrap();
        assert!(stream.compiled().streams() || n == 1, "n = {n}");
        assert!(!plain.compiled().streams());

        // Ranges that start and end off every alignment.
        for range in [
            (0, n),
            (n / 3, n - n / 5),
            (1, n),
            (n - 1, n),
            (n / 2, n / 2 + 1),
        ] {
            if range.0 >= range.1 {
                continue;
            }
            assert_eq!(
                run(&stream, &ins, range),
                run(&plain, &ins, range),
                "n = {n}, range {range:?}"
            );
        }
    }
}

#[test]
fn the_backend_streams_large_standalone_kernels_only() {
    let e1 = |n: usize| {
        let b = FunctionBuilder::new("e1");
        let p: Vec<_> = (0..4)
            .map(|k| b.parameter(&format!("p{k}"), ElementType::F32, [n]))
            .collect();
        b.finish(&[((p[0] + p[1]) * p[2]).relu() + p[3]]).unwrap()
    };
    let streams = |backend: &CpuJitBackend, f: &Function| {
        let exe = backend.compile_executable(f).unwrap();
        let kernels = exe.kernels();
        // Strip-mined to stream, it still calls no library function.
        assert_eq!(exe.kernel_calls_library(&kernels[0].name), Some(false));
        exe.kernel_streams(&kernels[0].name).unwrap()
    };
    let on = CpuJitBackend::new().with_streaming_stores(true);
    let off = CpuJitBackend::new().with_streaming_stores(false);
    assert!(!off.streaming_stores());
    // 20 bytes per element: in cache, no streaming.
    assert!(!streams(&on, &e1(1 << 12)));
    // Above twice the last-level cache (on hosts whose cache keeps the test small).
    let llc = crate::stream::last_level_cache_bytes();
    if llc <= 64 << 20 {
        let n = llc / 10 + 4096;
        let f = e1(n);
        assert_eq!(streams(&on, &f), cfg!(target_arch = "x86_64"));
        assert!(!streams(&off, &f));
        // The results are the plain kernel's.
        let ins: Vec<Tensor> = (0..4)
            .map(|k| Tensor::from_vec(super::uniform(n, 10 + k), [n]).unwrap())
            .collect();
        let out = |backend: &CpuJitBackend| {
            let exe = backend.compile_executable(&f).unwrap();
            let mut o = [Tensor::zeros(ElementType::F32, [n]).unwrap()];
            exe.call(&mut o, &ins).unwrap();
            super::bits(&o)
        };
        assert_eq!(out(&on.clone().with_threads(2)), out(&off));
    }
}
