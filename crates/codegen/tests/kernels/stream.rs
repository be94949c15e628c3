//! Non-temporal stores: a streaming kernel writes what the plain kernel writes, bit for bit,
//! at every length and at ranges that start anywhere; the backend streams large standalone
//! kernels only.

use graphlift_codegen::plan::plan_kernel;
use graphlift_codegen::JitKernel;
use graphlift_ir::{ElementType, Function, FunctionBuilder, TensorData};
use graphlift_runtime::Tensor;

/// `body` compiled with streaming stores on.
fn streaming(body: &Function) -> JitKernel {
    let mut plan = plan_kernel(body.name(), body).unwrap();
    plan.veclib = graphlift_kernels::target::Target::from_env().veclib();
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
