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
        // The host's assembled code (AVX-512: `vmovntps` in its main loop).
        let assembled = streaming_with(&body, true);
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
            let want = run(&plain, &ins, range);
            assert_eq!(run(&stream, &ins, range), want, "n = {n}, range {range:?}");
            assert_eq!(
                run(&assembled, &ins, range),
                want,
                "n = {n}, range {range:?}"
            );
        }
    }
}

/// A streaming kernel is assembled AVX-512 code (with non-temporal stores). On an AVX2 host
/// one of one-instruction ops keeps its strips (non-temporal stores), but one that divides
/// by a broadcast row or column, or into one, or by a value computed from one, is assembled
/// code (the strips' division would copy the broadcast). Either writes the plain kernel's
/// bits.
#[test]
fn a_streaming_division_by_a_broadcast_is_assembled() {
    use graphlift_codegen::asm::{host_isa, Refusal};
    use graphlift_kernels::target::VectorIsa;
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
        (b.finish(&[out]).unwrap(), i < 3 || isa == VectorIsa::Avx512)
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

/// A streaming AVX-512 kernel aligns its output and writes whole lines past the caches
/// there (`vmovntps`, then `sfence`), and writes what the plain kernel writes from every
/// offset from a 64-byte boundary on (ranges starting at each of sixteen elements: whatever
/// the input's offset), also with a row vector (whose rows are segments of their own).
#[test]
fn assembled_streaming_stores_are_exact_at_every_alignment() {
    use graphlift_codegen::asm::host_isa;
    use graphlift_kernels::target::VectorIsa;
    if host_isa() != Some(VectorIsa::Avx512) {
        return;
    }
    let (m, k) = (7, 300);
    let n = m * k;
    let b = FunctionBuilder::new("stream");
    let x = b.parameter("x", ElementType::F32, [n]);
    let flat = b
        .finish(&[(x * 3.0 + 1.0).relu(), x / (x.abs() + 1.0), x.exp()])
        .unwrap();
    let b = FunctionBuilder::new("rows");
    let x = b.parameter("x", ElementType::F32, [m, k]);
    let row = b
        .parameter("row", ElementType::F32, [k])
        .broadcast_to([m, k]);
    let rows = b.finish(&[(x + row).relu()]).unwrap();
    let input = |shape: &[usize]| Tensor::from_vec(super::uniform(n, 9), shape).unwrap();
    let row = Tensor::from_vec(super::uniform(k, 10), [k]).unwrap();
    for (body, with_row) in [(flat, false), (rows, true)] {
        let kernel = streaming_with(&body, true);
        let listing = kernel.ir();
        assert!(
            listing.contains("vmovntps") && listing.contains("sfence"),
            "{listing}"
        );
        let plain = JitKernel::compile(&body).unwrap();
        let x = if with_row {
            input(&[m, k])
        } else {
            input(&[n])
        };
        let ins: Vec<&Tensor> = if with_row { vec![&x, &row] } else { vec![&x] };
        for start in 0..16 {
            let range = (start, n - start / 2);
            assert_eq!(
                run(&kernel, &ins, range),
                run(&plain, &ins, range),
                "{range:?}"
            );
        }
    }
}
