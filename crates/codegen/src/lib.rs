//! graphlift-codegen: a fused kernel's body to native code.
//!
//! [`plan`] flattens a `FusedKernel` body into slots (with [`broadcast`] addressing for
//! broadcast inputs); [`kernel`] builds the loops and the range ABI
//! (`fn(inputs, outputs, begin, end)`), [`lower`] lowers each op through the lane view of
//! [`lanes`] (128-bit vectors: four `f32`/`i32` lanes, two `f64`/`i64` lanes; [`mixed`] for
//! kernels that mix the widths), with the vector math functions inline ([`vmath`]). Where
//! 128-bit vectors bound a kernel, [`strip`] runs it in strips that call the vector math
//! library of `graphlift-kernels` at full width ([`calls`]); a kernel of simple `f32`
//! operations on an AVX-512 host is assembled straight to sixteen-lane code ([`avx512`]).
//! [`compile`] puts kernels into JIT modules ([`module`]); [`JitKernel`] compiles and calls
//! one kernel on its own. It knows no executor: the CPU-JIT backend (`graphlift-jit`) plans
//! buffers and steps and calls these kernels.
//!
//! Kernels compute what the INTERPRETER computes, bit for bit, except the vector math
//! functions and `Power` on floats, which are within their documented ulp bounds
//! (`graphlift_kernels::vmath`): `a*b + c` is never contracted, integer division never
//! traps (`x / 0 = 0`, `MIN / -1 = MIN`), float-to-int conversion saturates (NaN → 0),
//! `Maximum`/`Minimum` propagate NaN and order `-0 < +0`, `Round` ties to even, and `bool`
//! is one byte holding 0 or 1.

#![warn(missing_docs)]

pub mod access;
pub mod avx512;
pub mod broadcast;
pub mod calls;
pub mod compile;
pub mod convert;
pub mod cost;
pub mod divide;
mod error;
pub mod helpers;
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

#[cfg(test)]
mod tests;

pub use error::JitError;
pub use jit_kernel::JitKernel;
