//! graphlift-kernels: the code that graphlift compiles ahead of time, with Rust.
//!
//! - [`vmath`]: the vector math functions' constants, range reductions and error bounds —
//!   the one definition that the JIT's inline code (`graphlift-codegen`) and the library
//!   below both follow;
//! - [`veclib`]: the vector math library, whole strips of elements at AVX-512 or AVX2 width,
//!   bit for bit the inline code's results;
//! - [`native`]: MatMul (through `gemm`), convolution, normalisation, reductions and the
//!   row kernels, each tested against the reference kernels of `graphlift-runtime`;
//! - [`stream`]: non-temporal stores for outputs larger than the cache;
//! - [`parallel`]: the thread pool that kernels split their ranges over;
//! - [`target`]: the host's CPU features and the `GRAPHLIFT_*` switches, owned in one place.

#![warn(missing_docs)]

pub mod native;
pub mod parallel;
pub mod stream;
pub mod target;
pub mod veclib;
pub mod vmath;
