//! The kernel cache's bound: least recently used entries are evicted beyond the capacity,
//! and an evicted kernel's code lives as long as an executable uses it.

use graphlift_ir::{ElementType::F32, Function, FunctionBuilder};
use graphlift_jit::{CpuJitBackend, CpuJitExecutable, DEFAULT_KERNEL_CACHE_CAPACITY};
use graphlift_runtime::{Backend, Executable, InterpreterBackend, Tensor};

/// `relu((a + b) * c) + d * k` on `[16]`: one fused kernel, a distinct one for each `k`.
fn scaled(k: f64) -> Function {
    let b = FunctionBuilder::new("scaled");
    let [a, bb, c, d] = ["a", "b", "c", "d"].map(|x| b.parameter(x, F32, [16]));
    b.finish(&[((a + bb) * c).relu() + d * k]).unwrap()
}

/// A backend whose every compile asks the kernel cache (the executable cache off).
fn backend(capacity: usize) -> CpuJitBackend {
    CpuJitBackend::new()
        .with_executable_cache(false)
        .with_kernel_cache_capacity(capacity)
}

fn entry(exe: &CpuJitExecutable) -> usize {
    let ks = exe.kernels();
    assert_eq!(ks.len(), 1, "{ks:?}");
    exe.kernel_entry_address(&ks[0].name).unwrap()
}

fn inputs() -> Vec<Tensor> {
    (0..4)
        .map(|s| Tensor::from_vec(super::uniform(16, s), [16]).unwrap())
        .collect()
}

/// `exe` computes what the INTERPRETER computes for `f` (exactly: no vector math).
fn assert_runs_right(exe: &CpuJitExecutable, f: &Function) {
    let want = InterpreterBackend
        .compile(f)
        .unwrap()
        .run(&inputs())
        .unwrap();
    assert_eq!(exe.run(&inputs()).unwrap(), want);
}

#[test]
fn the_default_capacity_is_the_documented_one() {
    let b = CpuJitBackend::new();
    assert_eq!(
        b.kernel_cache_capacity(),
        b.target().kernel_cache_capacity()
    );
    let b = b.with_kernel_cache_capacity(7);
    assert_eq!(b.kernel_cache_capacity(), 7);
    assert_eq!(b.target().kernel_cache_capacity(), 7);
    let fresh = CpuJitBackend::for_target(Default::default(), graphlift_jit::Target::host());
    assert_eq!(fresh.kernel_cache_capacity(), DEFAULT_KERNEL_CACHE_CAPACITY);
}

#[test]
fn the_cache_stays_at_its_capacity_and_evicted_kernels_keep_running() {
    let backend = backend(4);
    let fs: Vec<Function> = (0..10).map(|k| scaled(f64::from(k) + 0.5)).collect();
    let first = backend.compile_executable(&fs[0]).unwrap();
    let watch = first.memory_watch();
    let rest: Vec<CpuJitExecutable> = fs[1..]
        .iter()
        .map(|f| backend.compile_executable(f).unwrap())
        .collect();
    let stats = backend.cache_stats();
    assert_eq!(
        (
            stats.compiled,
            stats.hits,
            stats.entries,
            stats.evicted,
            stats.capacity
        ),
        (10, 0, 4, 6, 4),
        "{stats:?}"
    );
    // The first kernel was evicted, but its executable holds the code and runs it.
    assert!(!watch.is_released());
    assert_runs_right(&first, &fs[0]);
    // Compiling it again compiles anew: the cache no longer had it.
    let again = backend.compile_executable(&fs[0]).unwrap();
    assert_ne!(entry(&first), entry(&again));
    assert_eq!(backend.cache_stats().compiled, 11);
    // Dropping the executable frees the evicted code; code still cached stays.
    drop(first);
    assert!(watch.is_released());
    let last = rest.last().unwrap();
    let cached = last.memory_watch();
    assert_runs_right(last, &fs[9]);
    drop(rest);
    assert!(!cached.is_released());
    assert_runs_right(&again, &fs[0]);
}

#[test]
fn a_hit_makes_its_entry_the_most_recently_used() {
    let backend = backend(2);
    let [a, b, c] = [scaled(1.5), scaled(2.5), scaled(3.5)];
    // Every executable stays alive, so no freed code's address can be reused.
    let a1 = backend.compile_executable(&a).unwrap();
    let b1 = backend.compile_executable(&b).unwrap();
    let a2 = backend.compile_executable(&a).unwrap();
    assert_eq!(entry(&a1), entry(&a2));
    // A was used after B: C evicts B.
    let _c1 = backend.compile_executable(&c).unwrap();
    let stats = backend.cache_stats();
    assert_eq!((stats.compiled, stats.hits, stats.evicted), (3, 1, 1));
    let a3 = backend.compile_executable(&a).unwrap();
    assert_eq!(entry(&a1), entry(&a3), "A was evicted");
    let b2 = backend.compile_executable(&b).unwrap();
    assert_ne!(entry(&b1), entry(&b2), "B was kept");
    assert_runs_right(&b1, &b);
    assert_runs_right(&b2, &b);
}

#[test]
fn capacity_zero_shares_no_code() {
    let backend = backend(0);
    let f = scaled(1.5);
    let one = backend.compile_executable(&f).unwrap();
    let two = backend.compile_executable(&f).unwrap();
    assert_ne!(entry(&one), entry(&two));
    let stats = backend.cache_stats();
    assert_eq!(
        (stats.compiled, stats.hits, stats.entries, stats.capacity),
        (2, 0, 0, 0),
        "{stats:?}"
    );
    // Nothing but the executable holds its code.
    let watch = one.memory_watch();
    assert_runs_right(&one, &f);
    drop(one);
    assert!(watch.is_released());
}

#[test]
fn many_distinct_graphs_compiled_and_dropped_leave_only_the_cached_code() {
    // The memory bound: of 200 compiled and dropped graphs, only the code of the last
    // `capacity` stays alive (in the cache).
    let backend = backend(8);
    let watches: Vec<_> = (0..200)
        .map(|k| {
            let f = scaled(f64::from(k) + 0.25);
            let exe = backend.compile_executable(&f).unwrap();
            exe.run(&inputs()).unwrap();
            exe.memory_watch()
        })
        .collect();
    let alive = watches.iter().filter(|w| !w.is_released()).count();
    assert_eq!(alive, 8);
    assert!(watches[192..].iter().all(|w| !w.is_released()));
    backend.clear_cache();
    assert!(watches.iter().all(|w| w.is_released()));
}

#[test]
fn kernels_that_differ_only_in_a_storage_type_do_not_share_code() {
    // `f32 -> f16 -> f32` and `f32 -> bf16 -> f32` plan to the same ops on the same `f32`
    // lanes and differ only in how the middle value is rounded.
    let through = |t| {
        let b = FunctionBuilder::new("through");
        let [x, y] = ["x", "y"].map(|p| b.parameter(p, F32, [16]));
        b.finish(&[x.convert(t).convert(F32) + y]).unwrap()
    };
    let backend = backend(4);
    for t in [
        graphlift_ir::ElementType::F16,
        graphlift_ir::ElementType::BF16,
    ] {
        let f = through(t);
        let exe = backend.compile_executable(&f).unwrap();
        let ins = &inputs()[..2];
        let want = InterpreterBackend.compile(&f).unwrap().run(ins).unwrap();
        assert_eq!(exe.run(ins).unwrap(), want, "through {t}");
    }
    assert_eq!(backend.cache_stats().compiled, 2);
}
