//! Non-temporal stores: a streaming kernel writes what the plain kernel writes, bit for bit,
//! at every length and at ranges that start anywhere; the backend streams large standalone
//! kernels only.

use graphlift_codegen::plan::plan_kernel;
use graphlift_codegen::JitKernel;
use graphlift_ir::{ElementType, Function, FunctionBuilder, TensorData};
use graphlift_runtime::Tensor;

/// `body` compiled with streaming stores on, and the host's assembled code where `assemble`
/// (the library as the environment has it).
fn streaming_with(body: &Function, assemble: bool) -> JitKernel {
    let target = graphlift_kernels::target::Target::from_env();
    let mut plan = plan_kernel(body.name(), body).unwrap();
    plan.veclib = target.veclib();
    if assemble {
        plan.isa = target.vector_isa();
    }
    plan.stream = true;
    JitKernel::from_plan(body, plan).unwrap()
}

/// `body` compiled with streaming stores on (Cranelift code).
fn streaming(body: &Function) -> JitKernel {
    streaming_with(body, false)
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

/// A streaming kernel of one-instruction ops keeps its strips (non-temporal stores), but one
/// that divides by a broadcast row or column, or into one, or by a value computed from one,
/// is assembled code (the strips' division would copy the broadcast); it writes the plain
/// kernel's bits.
#[test]
fn a_streaming_division_by_a_broadcast_is_assembled() {
    use graphlift_codegen::asm::{host_isa, Refusal};
    let Some(isa) = host_isa() else {
        return;
    };
    let (m, k) = (37, 100);
    // Body `i` and whether it is assembled.
    let body = |i: usize| {
        let b = FunctionBuilder::new("divide");
        let x = b.parameter("x", ElementType::F32, [m, k]);
        let y = b.parameter("y", ElementType::F32, [m, k]);
        let row = b
            .parameter("row", ElementType::F32, [k])
            .broadcast_to([m, k]);
        let col = b
            .parameter("col", ElementType::F32, [m, 1])
            .broadcast_to([m, k]);
        let out = [x / row, x / (col + 1.0), col / x, x / y + x][i];
        (b.finish(&[out]).unwrap(), i < 3)
    };
    let ins = [
        Tensor::from_vec(super::uniform(m * k, 3), [m, k]).unwrap(),
        Tensor::from_vec(super::uniform(m * k, 4), [m, k]).unwrap(),
        Tensor::from_vec(super::uniform(k, 5), [k]).unwrap(),
        Tensor::from_vec(super::uniform(m, 6), [m, 1]).unwrap(),
    ];
    let refs: Vec<&Tensor> = ins.iter().collect();
    for i in 0..4 {
        let (body, assembled) = body(i);
        let stream = streaming_with(&body, true);
        let plain = JitKernel::compile(&body).unwrap();
        if assembled {
            assert_eq!(stream.assembled(), Some(isa), "body {i}");
        } else {
            assert_eq!(stream.assembled(), None, "body {i}");
            assert_eq!(
                stream.compiled().assembler_refusal(),
                Some(Refusal::Streams)
            );
        }
        let n = m * k;
        for range in [(0, n), (5, n - 7)] {
            assert_eq!(
                run(&stream, &refs, range),
                run(&plain, &refs, range),
                "body {i}"
            );
        }
    }
}
