//! graphlift-jit: fused kernels lowered to Cranelift SIMD loops, and the CPU-JIT backend.
//!
//! Subgraph extraction (`graphlift-passes`) gathers regions of elementwise ops into
//! `FusedKernel` nodes. This crate lowers each one to a single Cranelift function with a
//! range ABI (`fn(inputs, outputs, begin, end)`), a vector main loop unrolled 2× and a tail
//! that runs the same vector body, broadcast inputs read in place (stride 0, row index
//! `i mod K`, or a general index map), loop invariants hoisted, and `exp`, `expm1`, `log`,
//! `log1p`, `tanh`, `sigmoid`, `erf` as inline polynomial approximations ([`vmath`], with
//! measured error bounds). The vectors are 128-bit (the only width x64 Cranelift lowers):
//! kernels whose values are all `f32`, `i32` or `bool` run four lanes (`F32X4`/`I32X4`),
//! kernels whose values are all `f64`, `i64` or `bool` run two (`F64X2`/`I64X2`), and kernels
//! that mix 32-bit and 64-bit numbers run four elements per vector body, each 32-bit value
//! one `F32X4`/`I32X4` and each 64-bit value two `F64X2`/`I64X2`, converting between the
//! widths with vector instructions where x64 Cranelift has them ([`JitKernel::lanes`],
//! [`JitKernel::is_mixed_width`]).
//!
//! Where 128-bit vectors bound a kernel's speed, in its `f32` `exp`, `sigmoid`, `tanh`,
//! `erf` and its divisions of two per-element values, a kernel calls the *vector math
//! library* instead: the same functions compiled ahead of time for AVX-512 or AVX2 with
//! FMA, performing the inline code's operations, so results are bit-identical. The kernel
//! then runs in strips of elements, computing each call's arguments into buffers on its
//! stack, calling the library once per strip, and going on with the results (LLVM's
//! `-fveclib`, Halide's `split`). Whole GELU and SiLU expressions, as exporters write them,
//! are one library call each (activation forms, matched exactly among a kernel's values).
//! On by default on hosts with AVX2 and FMA ([`CpuJitBackend::with_veclib`],
//! [`VECLIB_ENV`], [`JitKernel::compile_inline`]).
//!
//! On hosts with AVX-512, a kernel made only of simple `f32` operations (`+ - * /`,
//! negation, absolute value, `Relu`, square root, rounding, bounds by a constant) over
//! contiguous, scalar, row, column and channel inputs skips Cranelift: it is assembled
//! straight to sixteen-lane AVX-512 code with the same range ABI and bit-identical results
//! (`codegen::avx512`; [`CpuJitBackend::with_avx512`], [`AVX512_ENV`]).
//!
//! A kernel whose call moves more than twice the last-level cache writes its `f32` and
//! `i32` outputs with non-temporal stores (through strip buffers, one store fence per call:
//! Cranelift has no such store), so the output lines are not read before they are written
//! ([`CpuJitBackend::with_streaming_stores`], [`STREAM_ENV`]).
//!
//! [`CpuJitBackend`] (registered as `"CPU-JIT"` by [`register`]) compiles a Function into a
//! [`CpuJitExecutable`]: its kernels from the backend's kernel cache or compiled into one new
//! JIT module (freed when no executable and no cache entry uses it), split over a thread pool
//! when large enough ([`parallel`], [`ThreadConfig`]). Nodes outside kernels run native
//! kernels where there is one (`MatMul` through the `gemm` crate, 2-D `Convolution` as
//! im2col + GEMM or a direct depthwise loop, trailing-axis reductions, last-axis `Softmax`
//! and `LayerNorm`; the GEMM-based ones round differently from the reference's single
//! rounding of an `f64` sum, by the rounding of an `f32`/`f64` dot product; `f32`
//! `Softmax` computes in `f32` within a relative `2^-21 · (1 + |x − max|)` of the
//! reference; `LayerNorm` and `ReduceSum`/`ReduceMean` sum in interleaved `f64` partial
//! sums, within 1 ulp of it), else the
//! reference kernels of `graphlift-runtime`. Constants are bound once per executable;
//! intermediates share buffers by liveness and are recycled across calls
//! ([`CpuJitExecutable::intermediate_buffers`]).
//!
//! # Semantics
//!
//! Kernels compute what the INTERPRETER computes (the table in
//! `graphlift_runtime::reference`), bit for bit, except the seven vector math functions on
//! `f32` and `f64`, and `Power` on `f32` and `f64`, which are within their documented ulp
//! bounds ([`vmath::max_ulp`] per element type, [`vmath::pow::MAX_ULP`],
//! [`vmath::pow::MAX_ULP_F64`]; special values `±0`, `±inf`, NaN as the interpreter). In
//! particular:
//!
//! - `a*b + c` is never contracted into a fused multiply-add, so `+ - * /` give the
//!   interpreter's bits (XLA's contraction made `a*x - a*x` nonzero); fused multiply-adds
//!   appear only inside the vector math polynomials;
//! - integer division never traps: `x / 0 = 0`, `MIN / -1 = MIN`;
//! - float-to-int conversion saturates (NaN → 0), as Rust's `as`;
//! - `Maximum`/`Minimum` propagate NaN and order `-0 < +0`; `Relu(NaN) = NaN`,
//!   `Relu(-0) = -0`; `Round` ties to even; `bool` is one byte holding 0 or 1.
//!
//! # Host helpers
//!
//! Besides the vector math library's strip functions (above), only `Power` on integers
//! calls a host function (the `f64` transcendental functions and `Power` on `f32` and `f64`
//! are inline [`vmath`] code since issue 3). It calls a host
//! function (a JIT symbol) that runs the reference's own scalar code, so it too matches the
//! interpreter bit for bit; everything else is inline code:
//!
//! | op | element type | computed by |
//! |---|---|---|
//! | `Power` | `i32`, `i64` | `reference::binary_i32` / `binary_i64` |
//!
//! In a vector loop a helper is called once per lane. So are the ops that have no vector
//! lowering on x64: integer `Divide` (made trap-free first) and `Convert` `f64` to `i64`.

#![warn(missing_docs)]

pub mod accuracy;
mod backend;
mod cache;
mod codegen;
mod error;
mod helpers;
mod isa;
mod jit_kernel;
mod module;
mod native;
pub mod parallel;
mod provenance;
mod stream;
mod veclib;
pub mod vmath;

#[cfg(test)]
mod tests;

pub use backend::{CpuJitBackend, CpuJitExecutable, ExecutableCacheStats, BACKEND_NAME};
pub use cache::KernelCacheStats;
pub use codegen::avx512::AVX512_ENV;
pub use error::JitError;
pub use jit_kernel::JitKernel;
pub use module::{live_modules, MemoryWatch};
pub use parallel::ThreadConfig;
pub use stream::STREAM_ENV;
pub use veclib::VECLIB_ENV;

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
