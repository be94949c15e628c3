//! Batch splitting: a batched network of independent samples runs sample by sample, with
//! the interpreter's results, on every thread count, rounds of one sample per thread and
//! the rest on groups of threads; other functions run whole and say why.

use super::uniform;
use graphlift_ir::{
    Convolution, ElementType::F32, Function, FunctionBuilder, Op, ReduceOp, Reduction, Window,
};
use graphlift_jit::{CpuJitBackend, SampleSpread, ThreadConfig};
use graphlift_runtime::trace::Tracer;
use graphlift_runtime::{compare, Backend, Executable, InterpreterBackend, RuntimeError, Tensor};

/// `softmax(mean_hw(relu(conv3x3(x) + bias)) · fc)` over `[batch, 3, 24, 24]` images with
/// constant weights: 8 filters, so one image's convolution computes 4,608 elements.
fn network(batch: usize) -> Function {
    let b = FunctionBuilder::new("cnn");
    let x = b.parameter("x", F32, [batch, 3, 24, 24]);
    let f = b.constant(uniform(8 * 3 * 9, 1), [8, 3, 3, 3]);
    let bias = b.constant(uniform(8, 2), [1, 8, 1, 1]);
    let fc = b.constant(uniform(8 * 5, 3), [8, 5]);
    let window = Window {
        shape: vec![3, 3],
        strides: vec![1, 1],
        dilations: vec![1, 1],
        pads_begin: vec![1, 1],
        pads_end: vec![1, 1],
    };
    let conv = Op::Convolution(Convolution { window, groups: 1 });
    let y = b.op(conv, &[x, f]).named("conv");
    let y = b.broadcasting_op(Op::Binary(graphlift_ir::BinaryOp::Add), &[y, bias]);
    let mean = Reduction {
        op: ReduceOp::Mean,
        axes: vec![2, 3],
        keep_dims: false,
    };
    let pooled = b.op(Op::Reduce(mean), &[y.relu()]);
    let logits = b.op(Op::MatMul, &[pooled, fc]);
    let p = b.op(Op::Softmax(1), &[logits]).named("p");
    b.finish(&[p]).unwrap()
}

fn images(batch: usize) -> Tensor {
    Tensor::from_vec(uniform(batch * 3 * 24 * 24, 4), vec![batch, 3, 24, 24]).unwrap()
}

#[test]
fn a_batch_of_images_runs_sample_by_sample_with_the_interpreters_results() {
    let f = network(4);
    let x = [images(4)];
    let want = InterpreterBackend.compile(&f).unwrap().run(&x).unwrap();
    for threads in [1, 2, 4] {
        let config = ThreadConfig {
            threads,
            min_bytes_per_task: 1,
        };
        for on in [true, false] {
            let backend = CpuJitBackend::new()
                .with_thread_config(config)
                .with_batch_split(on);
            let exe = backend.compile_executable(&f).unwrap();
            match exe.batch_split() {
                Ok(s) => assert!(on && s.batch == 4 && s.threads == threads),
                Err(why) => assert!(!on && why.contains("off"), "{why}"),
            }
            assert_eq!(exe.parameters()[0].tensor_type.shape.dims(), [4, 3, 24, 24]);
            assert_eq!(exe.results()[0].tensor_type.shape.dims(), [4, 5]);
            // Twice: the second call reuses the samples' recycled buffers.
            for _ in 0..2 {
                let got = exe.run(&x).unwrap();
                let c = compare(&got[0], &want[0], 1e-5, 1e-6);
                assert!(c.passed(), "threads {threads}, split {on}: {c}");
            }
        }
    }
}

/// Batches that the threads do not share evenly, and batches smaller than the threads:
/// the samples after the rounds run at once on groups of threads (more threads than this
/// host has cores, so the groups' pools interleave), with the interpreter's results.
#[test]
fn samples_after_the_rounds_run_on_groups_of_threads() {
    for (batch, threads, rounds, groups) in [
        (3, 2, 2, vec![2]),
        (5, 4, 4, vec![4]),
        (6, 4, 4, vec![2, 2]),
        (3, 8, 0, vec![3, 3, 2]),
        (7, 3, 6, vec![3]),
        (2, 5, 0, vec![3, 2]),
    ] {
        let f = network(batch);
        let x = [images(batch)];
        let want = InterpreterBackend.compile(&f).unwrap().run(&x).unwrap();
        let config = ThreadConfig {
            threads,
            min_bytes_per_task: 1,
        };
        let exe = CpuJitBackend::new()
            .with_thread_config(config)
            .compile_executable(&f)
            .unwrap();
        let spread = exe.batch_split().unwrap();
        assert_eq!(spread, SampleSpread { batch, threads });
        assert_eq!((spread.in_rounds(), spread.groups()), (rounds, groups));
        for _ in 0..2 {
            let got = exe.run(&x).unwrap();
            let c = compare(&got[0], &want[0], 1e-5, 1e-6);
            assert!(c.passed(), "{spread}: {c}");
        }
    }
}

#[test]
fn a_batch_of_one_runs_whole() {
    let exe = CpuJitBackend::new()
        .with_threads(1)
        .compile_executable(&network(1))
        .unwrap();
    assert!(exe.batch_split().unwrap_err().contains("the batch is 1"));
}

#[test]
fn a_split_call_checks_the_batched_shapes_and_traces_one_call_per_sample() {
    // Three samples on two threads: two in a round, the third on both threads.
    let exe = CpuJitBackend::new()
        .with_threads(2)
        .compile_executable(&network(3))
        .unwrap();
    let spread = exe.batch_split().unwrap();
    assert_eq!(
        spread.to_string(),
        "3 samples over 2 threads: 2 in rounds of one per thread, then the last on all 2 threads"
    );
    let err = exe.run(&[images(2)]).unwrap_err();
    assert!(matches!(err, RuntimeError::ArgumentType { .. }), "{err}");
    let tracer = Tracer::start();
    let got = exe.run(&[images(3)]).unwrap();
    let trace = tracer.finish();
    assert_eq!(trace.calls.len(), 3);
    let want = InterpreterBackend
        .compile(&network(3))
        .unwrap()
        .run(&[images(3)])
        .unwrap();
    assert!(compare(&got[0], &want[0], 1e-5, 1e-6).passed());
}

#[test]
fn a_sample_that_fails_fails_the_call_with_its_node() {
    // Token ids through an embedding and a dense layer: 4,096 products a sample.
    let b = FunctionBuilder::new("embed");
    let ids = b.parameter("ids", graphlift_ir::ElementType::I64, [2, 64]);
    let table = b.constant(uniform(10 * 64, 5), [10, 64]);
    let w = b.constant(uniform(64 * 64, 6), [64, 64]);
    let x = b.op(Op::Gather(0), &[table, ids]).named("embedding");
    let y = b.op(Op::MatMul, &[x, w]).named("dense");
    let f = b.finish(&[y]).unwrap();
    let exe = CpuJitBackend::new()
        .with_threads(2)
        .compile_executable(&f)
        .unwrap();
    assert_eq!(exe.batch_split().map(|s| s.batch), Ok(2));
    let mut ids: Vec<i64> = (0..128).map(|i| i % 10).collect();
    let good = Tensor::from_vec(ids.clone(), vec![2, 64]).unwrap();
    let want = InterpreterBackend
        .compile(&f)
        .unwrap()
        .run(std::slice::from_ref(&good))
        .unwrap();
    let got = exe.run(&[good]).unwrap();
    assert!(compare(&got[0], &want[0], 1e-5, 1e-6).passed());
    // An id out of the table in the second sample.
    ids[100] = 99;
    let bad = Tensor::from_vec(ids, vec![2, 64]).unwrap();
    let err = exe.run(&[bad]).unwrap_err().to_string();
    assert!(err.contains("embedding"), "{err}");
}
