//! graphlift-codegen: a fused kernel's body to native code (Cranelift SIMD loops, or AVX2 /
//! AVX-512 code assembled directly) for the CPU-JIT backend to call. Results are the INTERPRETER's
//! bit for bit, but vector math and float `Power` are within [`graphlift_kernels::vmath`]'s bounds.

#![warn(missing_docs)]

pub mod access;
pub mod asm;
pub mod broadcast;
pub mod calls;
pub mod code_path;
pub mod compile;
pub mod convert;
pub mod cost;
pub mod divide;
mod error;
pub mod half;
pub mod helpers;
pub mod in_place;
pub mod isa;
mod jit_kernel;
pub mod kernel;
pub mod lanes;
pub mod loops;
pub mod lower;
pub mod magnitude;
pub mod mixed;
pub mod module;
pub mod plan;
pub mod provenance;
pub mod reciprocal;
pub mod storage;
pub mod strip;
pub mod vmath;

pub use error::JitError;

use graphlift_ir::ElementType;

/// The element types fused kernels lower: `f32`, `f64`, `i32`, `i64`, `bool`, and the
/// storage types `f16`, `bf16` (computed in `f32`), `i8`, `u8`, `i16`, `u16` (computed in
/// `i32`) and `u32` (in `i64`), wrapping to their width: see [`storage`].
///
/// `u64` (unsigned compares, divisions and conversions in a full-width lane) has no
/// lowering yet: [`plan::plan_kernel`] refuses a body that holds one
/// ([`JitError::Unsupported`]), and the CPU-JIT backend keeps such nodes out of fused
/// kernels (subgraph extraction's element types), so they run on their reference kernels;
/// `explain` lists them with that reason.
pub const ELEMENT_TYPES: [ElementType; 12] = [
    ElementType::F32,
    ElementType::F64,
    ElementType::I32,
    ElementType::I64,
    ElementType::Bool,
    ElementType::F16,
    ElementType::BF16,
    ElementType::I8,
    ElementType::U8,
    ElementType::I16,
    ElementType::U16,
    ElementType::U32,
];

/// Whether fused kernels lower element type `t` (one of [`ELEMENT_TYPES`]).
pub fn lowers(t: ElementType) -> bool {
    ELEMENT_TYPES.contains(&t)
}
pub use jit_kernel::JitKernel;
