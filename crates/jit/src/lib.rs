//! graphlift-jit: the CPU-JIT backend, after nGraph's CPU backend with its Halide subgraphs:
//! elementwise regions become JIT-compiled fused kernels, every other node a native kernel,
//! and results are the INTERPRETER's (the vector math within its documented bounds).

#![warn(missing_docs)]

mod backend;
mod cache;

pub use backend::{
    CpuJitBackend, CpuJitExecutable, ExecutableCacheStats, SampleSpread, BACKEND_NAME,
};
pub use cache::KernelCacheStats;
pub use graphlift_codegen::module::{live_modules, MemoryWatch};
pub use graphlift_codegen::{vmath, JitError, JitKernel};
pub use graphlift_kernels::parallel::{self, ThreadConfig};
pub use graphlift_kernels::target::{
    CpuFeatures, OffReason, Target, VectorIsa, ASSEMBLER_ENV, AVX512_ENV,
    DEFAULT_KERNEL_CACHE_CAPACITY, EPILOGUE_FUSION_ENV, KERNEL_CACHE_ENV, NUM_THREADS_ENV,
    STREAM_ENV, VECLIB_ENV,
};

use std::sync::{Arc, Once};

/// Registers the CPU-JIT backend under `"CPU-JIT"` with the runtime's backend registry.
///
/// Idempotent and cheap: the registration runs once per process (`std::sync::Once`).
pub fn register() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        graphlift_runtime::register_backend(BACKEND_NAME, || {
            Ok(Arc::new(CpuJitBackend::new()) as Arc<dyn graphlift_runtime::Backend>)
        });
    });
}
