//! The memory bound of a long-running process (ONNX issue 28): compiling, running and
//! dropping 20,000 distinct graphs keeps the resident set under a fixed ceiling set by the
//! kernel cache's capacity, because the least recently used kernels are evicted and an
//! evicted kernel's code is unmapped with its last executable.
//!
//! Its own test binary (one process, nothing else allocating beside it), ignored in debug
//! test runs for its 20,000 compiles: `scripts/test.sh` runs it in release with
//! `cargo test --release -p graphlift-jit --test memory_ceiling -- --ignored`.
#![cfg(target_os = "linux")]

use graphlift_ir::{ElementType::F32, Function, FunctionBuilder};
use graphlift_jit::CpuJitBackend;
use graphlift_runtime::{Backend, InterpreterBackend, Tensor};

/// Graphs compiled, run and dropped.
const GRAPHS: usize = 20_000;
/// The kernel cache's capacity in this test.
const CAPACITY: usize = 16;
/// The resident set may grow this much past its size after the first `WARM_UP` graphs
/// (allocator pools, the executable cache's map): far below the ~300 MiB that 20,000
/// kept kernels take, far above what 16 cached ones do.
const CEILING_BYTES: u64 = 48 << 20;
/// Graphs before the baseline is taken.
const WARM_UP: usize = 1_000;

/// `tanh(a · k + b) - c` on `[64]`, a distinct fused kernel for each `k`.
fn graph(k: usize) -> Function {
    let f = FunctionBuilder::new("distinct");
    let [a, b, c] = ["a", "b", "c"].map(|x| f.parameter(x, F32, [64]));
    let scaled = a * (1.0 + k as f64 / 4096.0) + b;
    f.finish(&[scaled.tanh() - c]).unwrap()
}

/// The process's resident set in bytes (`VmRSS` of Linux's `/proc/self/status`).
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kib * 1024
}

#[test]
#[ignore = "20,000 compiles: run in release by scripts/test.sh"]
fn twenty_thousand_graphs_stay_under_the_ceiling_the_cache_bound_sets() {
    let backend = CpuJitBackend::new().with_kernel_cache_capacity(CAPACITY);
    let inputs: Vec<Tensor> = (0..3)
        .map(|s| {
            let v: Vec<f32> = (0..64)
                .map(|i| ((i * 7 + s * 13) % 29) as f32 / 29.0)
                .collect();
            Tensor::from_vec(v, [64]).unwrap()
        })
        .collect();
    let mut baseline = 0;
    let mut peak = 0;
    for k in 0..GRAPHS {
        let f = graph(k);
        let exe = backend.compile(&f).unwrap();
        let got = exe.run(&inputs).unwrap();
        if k % 2_000 == 0 {
            // Each graph computes what the reference does (within tanh's few ulp).
            let want = InterpreterBackend
                .compile(&f)
                .unwrap()
                .run(&inputs)
                .unwrap();
            let c = graphlift_runtime::compare(&got[0], &want[0], 1e-5, 1e-6);
            assert!(c.passed(), "graph {k}: {c}");
        }
        drop(exe);
        if k + 1 == WARM_UP {
            baseline = resident_bytes();
        } else if k + 1 > WARM_UP && (k + 1) % 500 == 0 {
            peak = peak.max(resident_bytes());
        }
    }
    let stats = backend.cache_stats();
    assert!(stats.entries <= CAPACITY, "{stats:?}");
    assert!(stats.evicted >= GRAPHS - CAPACITY, "{stats:?}");
    let growth = peak.saturating_sub(baseline);
    println!(
        "resident after {WARM_UP} graphs: {:.1} MiB; peak after {GRAPHS}: {:.1} MiB (growth {:.1} MiB)",
        baseline as f64 / 1048576.0,
        peak as f64 / 1048576.0,
        growth as f64 / 1048576.0
    );
    assert!(
        growth < CEILING_BYTES,
        "the resident set grew {growth} bytes over {} graphs (ceiling {CEILING_BYTES})",
        GRAPHS - WARM_UP
    );
}
