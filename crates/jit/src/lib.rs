//! graphlift-jit: the CPU-JIT backend.
//!
//! [`CpuJitBackend`] (registered as `"CPU-JIT"` by [`register`]) runs the pass pipeline
//! (subgraph extraction gathers elementwise regions into `FusedKernel` nodes), compiles each
//! fused kernel with `graphlift-codegen` (from its kernel cache when an equal kernel was
//! compiled before), and plans the rest as native kernels of `graphlift-kernels` (MatMul,
//! convolution, normalisation, reductions; epilogue kernels fused into their output loops)
//! or the reference kernels of `graphlift-runtime`. The result, a [`CpuJitExecutable`], is an
//! ordered list of steps over buffers planned by liveness (constants bound once,
//! intermediates recycled across calls), split over a thread pool when large enough
//! ([`ThreadConfig`]). Kernels compute what the INTERPRETER computes (see
//! `graphlift_codegen` for the exceptions: the vector math bounds).

#![warn(missing_docs)]

mod backend;
mod cache;

pub use backend::{CpuJitBackend, CpuJitExecutable, ExecutableCacheStats, BACKEND_NAME};
pub use cache::KernelCacheStats;
pub use graphlift_codegen::module::{live_modules, MemoryWatch};
pub use graphlift_codegen::{vmath, JitError, JitKernel};
pub use graphlift_kernels::parallel::{self, ThreadConfig};
pub use graphlift_kernels::target::{
    CpuFeatures, Off, Target, AVX512_ENV, EPILOGUE_FUSION_ENV, NUM_THREADS_ENV, STREAM_ENV,
    VECLIB_ENV,
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
