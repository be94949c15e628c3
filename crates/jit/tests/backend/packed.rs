//! Products whose one operand is a constant: the backend packs it once at compile time on
//! an AVX-512 host, and on an AVX2 host for products of fewer rows (the step reports it), and
//! the results match the INTERPRETER, with and without an epilogue, on one and two threads;
//! with AVX-512 switched off on an AVX-512 host nothing is packed. Recurrent ops with
//! constant weights pack them too (their steps' state products).

use super::uniform;
use graphlift_ir::{
    Convolution, ElementType::F32, Function, FunctionBuilder, Op, Output, RecurrentActivation as A,
    RecurrentCell, RecurrentDirection, RecurrentSequence, TensorData, Window,
};
use graphlift_jit::{CpuJitBackend, ThreadConfig};
use graphlift_runtime::{compare, Backend, Executable, InterpreterBackend, Tensor};

fn tensor(shape: &[usize], seed: u32) -> Tensor {
    Tensor::from_vec(uniform(shape.iter().product(), seed), shape.to_vec()).unwrap()
}

/// `relu(a · W + bias)` with `W` `[k, n]` a constant, and `W2 · a` with a constant left
/// operand `W2` `[5, m]` broadcast over the batch; `a` is `[batch, m, k]`.
fn dense(batch: usize, m: usize, k: usize, n: usize) -> Function {
    let b = FunctionBuilder::new("dense");
    let a = b.parameter("a", F32, [batch, m, k]);
    let w = b.constant(uniform(k * n, 2), [k, n]);
    let bias = b.constant(uniform(n, 3), [n]);
    let y = b.op(Op::MatMul, &[a, w]).named("y");
    let out = (y + bias).named("biased").relu().named("act");
    let w2 = b.constant(uniform(5 * m, 4), [5, m]);
    let left = b.op(Op::MatMul, &[w2, a]).named("left");
    b.finish(&[out, left]).unwrap()
}

/// A 3x3 convolution (stride 2, pad 1) with a constant filter, a bias and ReLU, then a
/// pointwise one.
fn convs(n: usize, c: usize, hw: usize, m: usize) -> Function {
    let b = FunctionBuilder::new("convs");
    let x = b.parameter("x", F32, [n, c, hw, hw]);
    let f = b.constant(uniform(m * c * 9, 5), [m, c, 3, 3]);
    let bias = b.constant(uniform(m, 6), [m, 1, 1]);
    let window = |k: usize, s: usize, p: usize| Window {
        shape: vec![k, k],
        strides: vec![s, s],
        dilations: vec![1, 1],
        pads_begin: vec![p, p],
        pads_end: vec![p, p],
    };
    let conv = |window| Op::Convolution(Convolution { window, groups: 1 });
    let y = b.op(conv(window(3, 2, 1)), &[x, f]).named("conv");
    let z = (y + bias).named("biased").relu().named("act");
    let f2 = b.constant(uniform(2 * m * m, 7), [2 * m, m, 1, 1]);
    let out = b.op(conv(window(1, 1, 0)), &[z, f2]).named("pointwise");
    b.finish(&[out]).unwrap()
}

/// Compiles `f` on one and two threads, with AVX-512 on and off: `packed[0]` steps report
/// packed weights when the target has AVX-512 code, `packed[1]` on a host without AVX-512F
/// that has AVX2 and FMA, none otherwise; every result matches the interpreter.
fn check(f: &Function, inputs: &[Tensor], packed: [usize; 2]) {
    let want = InterpreterBackend.compile(f).unwrap().run(inputs).unwrap();
    let two = ThreadConfig {
        threads: 2,
        min_bytes_per_task: 1,
    };
    for threads in [ThreadConfig::with_threads(1), two] {
        for avx512 in [true, false] {
            let backend = CpuJitBackend::new()
                .with_thread_config(threads)
                .with_avx512(avx512);
            let on = backend.target().avx512();
            let host = backend.target().features;
            let expect = match (on, !host.avx512f && host.avx2 && host.fma) {
                (true, _) => packed[0],
                (false, true) => packed[1],
                (false, false) => 0,
            };
            let exe = backend.compile_executable(f).unwrap();
            let reports: Vec<String> = exe.steps().into_iter().filter_map(|s| s.packed).collect();
            assert_eq!(reports.len(), expect, "{reports:?}");
            assert!(reports.iter().all(|r| r.starts_with("packed f32 weights")));
            let got = exe.run(inputs).unwrap();
            for (g, w) in got.iter().zip(&want) {
                let c = compare(g, w, 1e-4, 1e-5);
                assert!(c.passed(), "threads {threads:?}, AVX-512 {on}: {c}");
            }
        }
    }
}

#[test]
fn matmul_with_constant_weights() {
    // One large product (split by columns on two threads), several products, a small one,
    // one of 100 rows, one of 520. On AVX2 the right weights of the last (from 256 rows on)
    // stay with gemm.
    let cases = [
        (1, 140, 70, 130, 2),
        (3, 48, 40, 50, 2),
        (1, 3, 5, 7, 2),
        (1, 100, 30, 40, 2),
        (1, 520, 30, 40, 1),
    ];
    for (batch, m, k, n, avx2) in cases {
        check(
            &dense(batch, m, k, n),
            &[tensor(&[batch, m, k], 1)],
            [2, avx2],
        );
    }
}

#[test]
fn convolution_with_constant_filters() {
    // On AVX2 pointwise filters from 64 per group on (80, 140, 260) stay with gemm, and 3x3
    // ones from 128 on (130).
    let cases = [
        (1, 8, 20, 24, 2),
        (3, 3, 17, 16, 2),
        (1, 4, 12, 40, 1),
        (1, 4, 12, 70, 1),
        (1, 4, 12, 130, 0),
    ];
    for (n, c, hw, m, avx2) in cases {
        check(
            &convs(n, c, hw, m),
            &[tensor(&[n, c, hw, hw], 8)],
            [2, avx2],
        );
    }
}

/// A recurrent op (`x` `[seq, batch, input]`) with constant `W`, `R`, `B`, lengths and
/// initial state (and, for LSTM, initial cell and peepholes), all three (two) of its outputs
/// results.
fn recurrent(r: &RecurrentSequence, (seq, batch, input): (usize, usize, usize)) -> Function {
    let b = FunctionBuilder::new("recurrent");
    let (h, dirs) = (r.hidden_size, r.direction.count());
    let g = r.cell.gates() * h;
    let x = b.parameter("x", F32, [seq, batch, input]);
    let mut args = vec![
        x,
        b.constant(uniform(dirs * g * input, 11), [dirs, g, input]),
        b.constant(uniform(dirs * g * h, 12), [dirs, g, h]),
        b.constant(uniform(dirs * 2 * g, 13), [dirs, 2 * g]),
        b.constant(TensorData::I64(vec![seq as i64; batch]), [batch]),
        b.constant(uniform(dirs * batch * h, 14), [dirs, batch, h]),
    ];
    if r.cell == RecurrentCell::Lstm {
        args.push(b.constant(uniform(dirs * batch * h, 15), [dirs, batch, h]));
        args.push(b.constant(uniform(dirs * 3 * h, 16), [dirs, 3 * h]));
    }
    let y = b.op(Op::Recurrent(r.clone().into()), &args);
    let node = y.output().expect("the op builds").node;
    let outs: Vec<_> = (0..r.cell.outputs())
        .map(|k| b.value_of(Output::new(node, k)))
        .collect();
    b.finish(&outs).unwrap()
}

#[test]
fn recurrent_ops_with_constant_weights() {
    let gru = RecurrentSequence {
        cell: RecurrentCell::Gru,
        direction: RecurrentDirection::Bidirectional,
        hidden_size: 40,
        activations: [A::Sigmoid, A::Tanh].repeat(2),
        clip: None,
        input_forget: false,
        linear_before_reset: true,
        batch_major: false,
    };
    let lstm = RecurrentSequence {
        cell: RecurrentCell::Lstm,
        direction: RecurrentDirection::Reverse,
        hidden_size: 70,
        activations: vec![A::Sigmoid, A::Tanh, A::Tanh],
        linear_before_reset: false,
        ..gru.clone()
    };
    let reset_after = RecurrentSequence {
        linear_before_reset: false,
        direction: RecurrentDirection::Forward,
        activations: vec![A::Sigmoid, A::Tanh],
        ..gru.clone()
    };
    for r in [gru, lstm, reset_after] {
        let (seq, batch, input) = (7, 2, 24);
        let f = recurrent(&r, (seq, batch, input));
        check(&f, &[tensor(&[seq, batch, input], 17)], [1, 1]);
    }
}
