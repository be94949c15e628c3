//! Multi-thread kernel calls: chunking, bit-identical results, thread settings.

use super::{data, first_difference};
use graphlift_ir::{ElementType::F32, Function, FunctionBuilder};
use graphlift_jit::{CpuJitBackend, ThreadConfig};
use graphlift_kernels::parallel::{chunk_ranges, for_each, threads_from, Parallel, CHUNK_ALIGN};
use graphlift_runtime::{Executable, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Splits every call that covers at least two aligned chunks.
fn eager(threads: usize) -> ThreadConfig {
    ThreadConfig {
        threads,
        min_bytes_per_task: 1,
    }
}

#[test]
fn chunks_are_aligned_disjoint_and_cover_the_range() {
    for n in [
        0usize,
        1,
        7,
        8,
        15,
        16,
        17,
        63,
        64,
        65,
        1000,
        1023,
        1025,
        1 << 20,
    ] {
        for threads in [1, 2, 3, 8] {
            let Some(chunks) = chunk_ranges(eager(threads), 0, n, 4 * n, n) else {
                assert!(
                    threads == 1 || n < 2 * CHUNK_ALIGN,
                    "n {n} threads {threads}"
                );
                continue;
            };
            assert!(chunks.len() >= 2 && chunks.len() <= 4 * threads);
            assert_eq!(chunks[0].0, 0);
            assert_eq!(chunks.last().unwrap().1, n);
            for w in chunks.windows(2) {
                assert_eq!(w[0].1, w[1].0, "n {n}: {chunks:?}");
            }
            for &(b, e) in &chunks {
                assert!(b < e);
                assert_eq!(b % CHUNK_ALIGN, 0, "n {n}: {chunks:?}");
            }
        }
    }
}

#[test]
fn small_calls_stay_on_one_thread() {
    let config = ThreadConfig::with_threads(2);
    // 4 f32 inputs + 1 output = 20 bytes per element: 256 KiB per task needs 13,108
    // elements, two tasks 26,216.
    let traffic = |n: usize| 20 * n;
    for n in [1usize, 1024, 1 << 14, 26_000] {
        assert_eq!(chunk_ranges(config, 0, n, traffic(n), n), None, "n {n}");
    }
    let n = 1 << 18;
    let chunks = chunk_ranges(config, 0, n, traffic(n), n).unwrap();
    assert!(chunks.len() >= 2);
    assert!(chunks.iter().all(|&(b, e)| (e - b) * 20 >= 256 * 1024));
    assert_eq!(
        chunk_ranges(ThreadConfig::with_threads(1), 0, n, traffic(n), n),
        None
    );
}

#[test]
fn compute_heavy_kernels_split_at_fewer_elements_than_data_movement() {
    // 2^13 f32 elements, one input and one output (64 KiB of traffic): an addition stays
    // on one thread, an erf splits: inline, about 170 byte-equivalents per element; through
    // the vector math library, 64. (The erf alone: with an op after it, an AVX-512 host
    // assembles the kernel whole instead of calling the library.)
    let n = 1 << 13;
    let body = |erf: bool| {
        let b = FunctionBuilder::new(if erf { "erf" } else { "add" });
        let x = b.parameter("x", F32, [n]);
        let y = if erf { x.erf() } else { x + x };
        b.finish(&[y]).unwrap()
    };
    let work = |k: graphlift_jit::JitKernel| k.compiled().work();
    let inline = |f: &Function| work(graphlift_jit::JitKernel::compile_inline(f).unwrap());
    let (light, heavy) = (inline(&body(false)), inline(&body(true)));
    assert_eq!(
        light,
        8 * n,
        "one-instruction ops count nothing beyond the traffic"
    );
    assert!(heavy >= 170 * n, "{heavy}");
    let library = graphlift_jit::JitKernel::compile(&body(true)).unwrap();
    assert_eq!(
        library.calls_library(),
        graphlift_kernels::target::Target::from_env().veclib()
    );
    let heavy_library = work(library);
    assert!(
        heavy_library >= 64 * n && heavy_library < heavy,
        "{heavy_library}"
    );
    let config = ThreadConfig::with_threads(2);
    assert_eq!(chunk_ranges(config, 0, n, light, n), None);
    for heavy in [heavy, heavy_library] {
        let chunks = chunk_ranges(config, 0, n, heavy, n).expect("the erf kernel splits");
        assert!(chunks.len() >= 2);
    }
}

#[test]
fn thread_count_from_the_environment_value() {
    let all = std::thread::available_parallelism().map_or(1, usize::from);
    assert_eq!(threads_from(Some("3")), 3);
    assert_eq!(threads_from(Some(" 1 ")), 1);
    assert_eq!(threads_from(Some("0")), all);
    assert_eq!(threads_from(Some("many")), all);
    assert_eq!(threads_from(None), all);
}

#[test]
fn thread_setting_through_the_api() {
    let backend = CpuJitBackend::new().with_threads(3);
    assert_eq!(backend.thread_config(), ThreadConfig::with_threads(3));
    assert_eq!(
        CpuJitBackend::new().with_threads(0).thread_config().threads,
        1
    );
    let exe = backend.compile_executable(&bias_relu(4, 8)).unwrap();
    assert_eq!(exe.thread_config().threads, 3);
    let exe = backend
        .with_thread_config(eager(2))
        .compile_executable(&bias_relu(4, 8))
        .unwrap();
    assert_eq!(exe.thread_config(), eager(2));
}

/// `relu(x + b) * r`: `b` broadcast along rows (index `i mod cols`), `r` per row (index
/// `i / cols`).
fn bias_relu(rows: usize, cols: usize) -> Function {
    let b = FunctionBuilder::new("bias_relu");
    let x = b.parameter("x", F32, [rows, cols]);
    let bias = b.parameter("b", F32, [cols]);
    let r = b.parameter("r", F32, [rows, 1]);
    b.finish(&[(x + bias).relu() * r - x]).unwrap()
}

#[test]
fn for_each_runs_every_task_once_on_the_caller_and_the_workers() {
    for threads in [2, 3] {
        let parallel = Parallel::new(eager(threads));
        let pool = parallel.pool().expect("a pool for two or more threads");
        // The caller is one of the threads: the pool holds the others.
        assert_eq!(pool.current_num_threads(), threads - 1);
        let team = parallel.team_of(usize::MAX, 1).unwrap();
        assert_eq!(team.threads(), threads);
        for tasks in [0usize, 1, 2, 3, 17, 200] {
            let runs: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
            for_each(team, 0..tasks, |k| {
                // Long enough that a worker has time to wake and take some.
                std::thread::sleep(std::time::Duration::from_micros(50));
                runs[k].fetch_add(1, Ordering::Relaxed);
            });
            let counts: Vec<usize> = runs.iter().map(|r| r.load(Ordering::Relaxed)).collect();
            assert!(
                counts.iter().all(|&c| c == 1),
                "{threads} threads: {counts:?}"
            );
        }
        // Disjoint `&mut` chunks, as the native kernels hand them out.
        let mut out = vec![0usize; 1000];
        for_each(team, out.chunks_mut(64).enumerate(), |(k, chunk)| {
            chunk.iter_mut().for_each(|v| *v = k)
        });
        assert!(out.iter().enumerate().all(|(i, &v)| v == i / 64));
    }
}

#[test]
fn for_each_does_not_wait_for_a_helper_that_never_starts() {
    // Two threads: one worker, kept busy until the call is over; the caller must run every
    // task itself and return without waiting for its helper job to start.
    let parallel = Parallel::new(eager(2));
    let pool = parallel.pool().unwrap();
    let team = parallel.team_of(usize::MAX, 1).unwrap();
    let (release, blocked) = std::sync::mpsc::channel::<()>();
    let (started, worker_busy) = std::sync::mpsc::channel::<()>();
    pool.spawn(move || {
        started.send(()).unwrap();
        blocked.recv().ok();
    });
    worker_busy.recv().unwrap();
    let (finished, done) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let runs = AtomicUsize::new(0);
            for_each(team, 0..6, |_| {
                runs.fetch_add(1, Ordering::Relaxed);
            });
            finished.send(runs.into_inner()).unwrap();
        });
        let got = done.recv_timeout(std::time::Duration::from_secs(10));
        release.send(()).unwrap();
        assert_eq!(
            got,
            Ok(6),
            "the call waited for a helper whose worker was busy"
        );
    });
}

#[test]
fn a_panic_on_a_helper_reaches_the_caller_after_the_running_tasks() {
    // Two tasks; a task on the caller waits until one has started on a helper, so a helper
    // surely runs one (whichever it claims first), and a task on a helper panics.
    let parallel = Parallel::new(eager(2));
    let team = parallel.team_of(usize::MAX, 1).unwrap();
    let caller = std::thread::current().id();
    let helper_started = std::sync::atomic::AtomicBool::new(false);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for_each(team, 0..2, |_| {
            if std::thread::current().id() == caller {
                let start = std::time::Instant::now();
                while !helper_started.load(Ordering::SeqCst) {
                    assert!(start.elapsed().as_secs() < 10, "no helper ever started");
                    std::thread::yield_now();
                }
            } else {
                helper_started.store(true, Ordering::SeqCst);
                panic!("helper task fails");
            }
        })
    }));
    let payload = caught.expect_err("the helper's panic reaches the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"helper task fails"));
}

#[test]
fn a_panicking_task_reaches_the_caller_and_the_pool_stays_usable() {
    let parallel = Parallel::new(eager(2));
    let team = parallel.team_of(usize::MAX, 1).unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for_each(team, 0..8, |k| assert!(k != 5, "task {k} fails"))
    }));
    assert!(caught.is_err());
    let done = AtomicUsize::new(0);
    for_each(team, 0..8, |_| {
        done.fetch_add(1, Ordering::Relaxed);
    });
    assert_eq!(done.load(Ordering::Relaxed), 8);
}

fn run(backend: &CpuJitBackend, f: &Function, inputs: &[Tensor]) -> Vec<Tensor> {
    backend.compile_executable(f).unwrap().run(inputs).unwrap()
}

#[test]
fn broadcast_kernels_split_over_threads_match_one_thread_bit_for_bit() {
    let one = CpuJitBackend::new().with_threads(1);
    let many = [eager(2), eager(3)].map(|c| CpuJitBackend::new().with_thread_config(c));
    for (rows, cols) in [
        (1, 16),
        (2, 8),
        (3, 7),
        (5, 13),
        (9, 7),
        (16, 8),
        (17, 9),
        (33, 31),
        (64, 1),
        (100, 10),
        (127, 33),
    ] {
        let f = bias_relu(rows, cols);
        let inputs = [
            Tensor::from_data(data(F32, rows * cols, 1), [rows, cols]).unwrap(),
            Tensor::from_data(data(F32, cols, 2), [cols]).unwrap(),
            Tensor::from_data(data(F32, rows, 3), [rows, 1]).unwrap(),
        ];
        let want = run(&one, &f, &inputs);
        for backend in &many {
            let got = run(backend, &f, &inputs);
            if let Some(i) = first_difference(got[0].data(), want[0].data()) {
                panic!(
                    "{rows}x{cols}, {:?}: element {i} differs",
                    backend.thread_config()
                );
            }
        }
    }
}
