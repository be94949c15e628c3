//! graphlift-harness: the harnesses graphlift is checked and measured with, kept out of the
//! library's API (the tests, benchmarks, fuzz targets and the `graphlift` command use them).
//!
//! - [`accuracy`]: sweeps of the vector math (every `f32`, a dense `f64` sample, `Power`)
//!   against the interpreter's values and 256-bit references;
//! - [`differential`]: random elementwise Functions run on CPU-JIT and INTERPRETER, which
//!   must agree within the documented tolerance;
//! - [`exprs`]: the peers benchmark's expressions E1–E4.

#![warn(missing_docs)]

pub mod accuracy;
pub mod differential;
pub mod exprs;
