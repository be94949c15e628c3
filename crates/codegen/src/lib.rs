//! graphlift-codegen: a fused kernel's body to native code (Cranelift SIMD loops, or AVX-512
//! code assembled directly) for the CPU-JIT backend to call. Results are the INTERPRETER's
//! bit for bit, but vector math and float `Power` are within [`graphlift_kernels::vmath`]'s bounds.

#![warn(missing_docs)]

pub mod access;
pub mod avx512;
pub mod broadcast;
pub mod calls;
pub mod code_path;
pub mod compile;
pub mod convert;
pub mod cost;
pub mod divide;
mod error;
pub mod helpers;
pub mod in_place;
pub mod isa;
mod jit_kernel;
pub mod kernel;
pub mod lanes;
pub mod loops;
pub mod lower;
pub mod mixed;
pub mod module;
pub mod plan;
pub mod provenance;
pub mod strip;
pub mod vmath;

pub use error::JitError;
pub use jit_kernel::JitKernel;
