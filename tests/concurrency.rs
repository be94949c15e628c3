//! Concurrency and resources: one CPU-JIT Executable called from 8 threads at once gives one
//! thread's results bit for bit; compiling and dropping thousands of Executables keeps
//! resident memory flat, whether each compile builds new machine code or hits the kernel
//! cache. (Kernels on unaligned buffers, at every byte offset 0..16, are tested where the raw
//! kernel ABI is reachable: `crates/jit/src/tests/abi.rs`.)

use std::sync::{Arc, Barrier, Mutex, MutexGuard};
use std::time::Instant;

use graphlift::jit::{live_modules, CpuJitBackend, ThreadConfig};
use graphlift::passes::ExtractionConfig;
use graphlift::{ElementType::F32, Executable, Function, FunctionBuilder, Tensor};

/// Tests in this file run one at a time: the memory test measures the whole process, and
/// `live_modules` counts modules process-wide.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

const ROWS: usize = 100;
const COLS: usize = 100;

/// `h = relu(x + bias) * r` over `[100, 100]` (bias broadcast along rows, `r` per row),
/// `g = tanh(2 bias)` over `[100]`, then `min(exp(h), h) - g` and `h > x`: with `Exp` kept
/// out of fusion, three kernels (two iteration spaces) around a native step.
fn multi_kernel() -> Function {
    let b = FunctionBuilder::new("multi_kernel");
    let x = b.parameter("x", F32, [ROWS, COLS]);
    let bias = b.parameter("bias", F32, [COLS]);
    let r = b.parameter("r", F32, [ROWS, 1]);
    let h = (x + bias).relu() * r;
    let g = (bias * 2.0).tanh();
    let out = h.exp().min(h) - g;
    b.finish(&[out, h.gt(x)]).unwrap()
}

/// Deterministic inputs for caller `seed`, in [-4, 4) with some exact zeros and negative
/// zeros.
fn inputs(seed: u64) -> Vec<Tensor> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut values = |n: usize| -> Vec<f32> {
        (0..n)
            .map(|i| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                match i % 97 {
                    0 => 0.0,
                    1 => -0.0,
                    _ => (s >> 40) as f32 / (1u64 << 24) as f32 * 8.0 - 4.0,
                }
            })
            .collect()
    };
    vec![
        Tensor::from_vec(values(ROWS * COLS), [ROWS, COLS]).unwrap(),
        Tensor::from_vec(values(COLS), [COLS]).unwrap(),
        Tensor::from_vec(values(ROWS), [ROWS, 1]).unwrap(),
    ]
}

/// Every output element as bits (f32) or 0/1 (bool).
fn bits(outputs: &[Tensor]) -> Vec<Vec<u32>> {
    outputs
        .iter()
        .map(|t| match t.read::<f32>() {
            Ok(v) => v.iter().map(|x| x.to_bits()).collect(),
            Err(_) => t
                .read::<bool>()
                .unwrap()
                .iter()
                .map(|&b| u32::from(b))
                .collect(),
        })
        .collect()
}

#[test]
fn one_executable_called_from_eight_threads_matches_one_thread_bit_for_bit() {
    let _s = serial();
    const THREADS: u64 = 8;
    const CALLS: usize = 20;
    let f = multi_kernel();
    let config = ExtractionConfig::default().exclude("Exp");
    // The reference: no thread pool at all, one call at a time.
    let one = CpuJitBackend::with_config(config.clone()).with_threads(1);
    let reference = one.compile_executable(&f).unwrap();
    let want: Vec<Vec<Vec<u32>>> = (0..THREADS)
        .map(|t| bits(&reference.run(&inputs(t)).unwrap()))
        .collect();
    assert_ne!(want[0], want[1], "callers have different inputs");

    // The default backend (10,000 elements stay on the calling thread) and one that splits
    // every kernel call into chunks over a pool of 4, so 8 callers share one pool.
    let backends = [
        CpuJitBackend::with_config(config.clone()),
        CpuJitBackend::with_config(config).with_thread_config(ThreadConfig {
            threads: 4,
            min_bytes_per_task: 1,
        }),
    ];
    for backend in backends {
        let exe: Arc<dyn Executable> = Arc::new(backend.compile_executable(&f).unwrap());
        let steps = exe.steps();
        assert_eq!(steps.iter().filter(|s| s.fused).count(), 3, "{steps:?}");
        assert!(steps.iter().any(|s| !s.fused), "{steps:?}");
        let threads = backend.thread_config();
        let start = Barrier::new(THREADS as usize);
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                let (exe, start, want) = (&exe, &start, &want[t as usize]);
                scope.spawn(move || {
                    let ins = inputs(t);
                    let mut outs = exe.run(&ins).unwrap();
                    start.wait();
                    for call in 0..CALLS {
                        // Alternate fresh outputs and outputs reused across calls.
                        if call % 2 == 0 {
                            outs = exe.run(&ins).unwrap();
                        } else {
                            exe.call_with_validate(&mut outs, &ins).unwrap();
                        }
                        assert!(
                            bits(&outs) == *want,
                            "caller {t}, call {call}, {threads:?}: results differ from one thread's"
                        );
                    }
                });
            }
        });
    }
}

/// Resident memory of this process in bytes (`VmRSS` of `/proc/self/status`); `None` where
/// there is no such file (not Linux).
fn resident_bytes() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `relu(x * c) + 1` on `[4]`: one small kernel whose body (and so cache key) differs with `c`.
fn tiny(c: f32) -> Function {
    let b = FunctionBuilder::new("tiny");
    let x = b.parameter("x", F32, [4]);
    b.finish(&[(x * f64::from(c)).relu() + 1.0]).unwrap()
}

/// Compiles, runs and drops `count` executables of `tiny(c(i))`, checking each result.
fn compile_run_drop(backend: &CpuJitBackend, range: std::ops::Range<usize>, c: fn(usize) -> f32) {
    let x = Tensor::from_vec(vec![1.0f32, -2.0, 0.5, -0.0], [4]).unwrap();
    for i in range {
        let c = c(i);
        let exe = backend.compile_executable(&tiny(c)).unwrap();
        let out = exe.run(std::slice::from_ref(&x)).unwrap();
        let want: Vec<f32> = [1.0f32, -2.0, 0.5, -0.0]
            .iter()
            .map(|&v| (v * c).max(0.0) + 1.0)
            .collect();
        assert_eq!(out[0].read::<f32>().unwrap(), want.as_slice(), "c = {c}");
    }
}

/// The growth of resident memory allowed over `iterations` compiles: 2 MiB of slack for the
/// allocator (arenas, the kernel cache's map) plus 512 bytes per iteration. A leak of the JIT
/// code memory alone is at least one 4 KiB page per module (Cranelift's leak on drop was
/// ~4.6 KB per kernel), and a leaked Executable (its Function, plan and kernel report) is
/// several KiB, so either exceeds this by far.
fn allowed_growth(iterations: usize) -> usize {
    (2 << 20) + 512 * iterations
}

#[test]
fn compiling_and_dropping_executables_keeps_resident_memory_flat() {
    let _s = serial();
    if resident_bytes().is_none() {
        eprintln!("skipped: no /proc/self/status (resident memory is read on Linux only)");
        return;
    }
    let mib = |b: usize| b as f64 / f64::from(1 << 20);
    let modules_before = live_modules();
    let backend = CpuJitBackend::new().with_threads(1);

    // Cache misses: a new constant each time, so every compile builds and finalizes a new
    // JIT module. The backend's cache keeps the newest 1,024 kernels, so the warm-up fills
    // it; from then on each compile evicts the oldest kernel, whose module is freed (no
    // executable holds it). A debug build compiles a kernel in ~6 ms (Cranelift unoptimized),
    // so it measures 2,000 compiles there, 10,000 in release.
    let warm_up = 1_100;
    let misses = if cfg!(debug_assertions) {
        2_000
    } else {
        10_000
    };
    let start = Instant::now();
    compile_run_drop(&backend, 0..warm_up, |i| i as f32);
    let before = resident_bytes().unwrap();
    compile_run_drop(&backend, warm_up..warm_up + misses, |i| i as f32);
    let growth = resident_bytes().unwrap().saturating_sub(before);
    let stats = backend.cache_stats();
    assert_eq!(stats.compiled, warm_up + misses, "{stats:?}");
    assert_eq!(stats.hits, 0, "{stats:?}");
    assert_eq!(live_modules(), modules_before + stats.entries);
    eprintln!(
        "{misses} compiles with new machine code: resident memory grew {:.2} MiB ({} bytes per \
         compile), {} modules live, {:.1} s with the warm-up",
        mib(growth),
        growth / misses,
        stats.entries,
        start.elapsed().as_secs_f64()
    );
    assert!(
        growth <= allowed_growth(misses),
        "resident memory grew {:.2} MiB over {misses} compiles (allowed {:.2} MiB)",
        mib(growth),
        mib(allowed_growth(misses))
    );

    // Cache hits: the same function each time, so no code is generated; each compile still
    // runs the pass pipeline and planning and builds an Executable.
    let hits = 10_000;
    let start = Instant::now();
    compile_run_drop(&backend, 0..500, |_| 0.5);
    let before = resident_bytes().unwrap();
    compile_run_drop(&backend, 0..hits, |_| 0.5);
    let growth = resident_bytes().unwrap().saturating_sub(before);
    let after = backend.cache_stats();
    assert_eq!(after.compiled, stats.compiled + 1, "{after:?}");
    assert_eq!(after.hits, 500 + hits - 1, "{after:?}");
    eprintln!(
        "{hits} compiles hitting the kernel cache: resident memory grew {:.2} MiB ({} bytes \
         per compile), {:.1} s with the warm-up",
        mib(growth),
        growth / hits,
        start.elapsed().as_secs_f64()
    );
    assert!(
        growth <= allowed_growth(hits),
        "resident memory grew {:.2} MiB over {hits} cache hits (allowed {:.2} MiB)",
        mib(growth),
        mib(allowed_growth(hits))
    );

    // Dropping the backend frees the code its cache kept.
    drop(backend);
    assert_eq!(live_modules(), modules_before);
}
