//! `GRAPHLIFT_NUM_THREADS` sets the thread count of backends created afterwards (its own test
//! binary: the variable is process-wide).

use graphlift::jit::{CpuJitBackend, Target};

#[test]
fn the_environment_variable_sets_the_thread_count() {
    std::env::set_var("GRAPHLIFT_NUM_THREADS", "3");
    assert_eq!(CpuJitBackend::new().thread_config().threads, 3);
    assert_eq!(Target::from_env().threads().threads, 3);
    // The API overrides it.
    assert_eq!(
        CpuJitBackend::new().with_threads(2).thread_config().threads,
        2
    );
    std::env::set_var("GRAPHLIFT_NUM_THREADS", "0");
    let all = std::thread::available_parallelism().map_or(1, usize::from);
    assert_eq!(CpuJitBackend::new().thread_config().threads, all);
    std::env::remove_var("GRAPHLIFT_NUM_THREADS");
    assert_eq!(CpuJitBackend::new().thread_config().threads, all);
}
