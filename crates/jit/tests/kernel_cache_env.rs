//! `GRAPHLIFT_KERNEL_CACHE` sets the kernel cache's capacity of backends created from the
//! environment; a value that is not a count falls back to the default (its own test binary:
//! the variable is process-wide).

use graphlift_jit::{CpuJitBackend, Target, DEFAULT_KERNEL_CACHE_CAPACITY, KERNEL_CACHE_ENV};

#[test]
fn the_variable_sets_the_capacity_and_a_bad_value_falls_back_to_the_default() {
    let capacity = |value: &str| {
        std::env::set_var(KERNEL_CACHE_ENV, value);
        let backend = CpuJitBackend::new();
        assert_eq!(
            Target::from_env().kernel_cache_capacity(),
            backend.kernel_cache_capacity()
        );
        backend.kernel_cache_capacity()
    };
    assert_eq!(capacity("16"), 16);
    assert_eq!(capacity("0"), 0);
    assert_eq!(capacity("many"), DEFAULT_KERNEL_CACHE_CAPACITY);
    assert_eq!(capacity("-3"), DEFAULT_KERNEL_CACHE_CAPACITY);
    std::env::remove_var(KERNEL_CACHE_ENV);
    assert_eq!(
        CpuJitBackend::new().kernel_cache_capacity(),
        DEFAULT_KERNEL_CACHE_CAPACITY
    );
}
