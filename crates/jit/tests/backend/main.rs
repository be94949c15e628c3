//! Unit tests of the CPU-JIT backend: executables against the INTERPRETER, thread splitting,
//! epilogue fusion, products on packed constant weights, streaming decisions, provenance and
//! execution traces.

mod backend;
mod batch_split;
mod code_paths;
mod epilogue;
mod kernel_cache;
mod packed;
mod parallel;
mod provenance;
mod storage_types;
mod stream;
mod trace;
mod trace_inner;

pub use graphlift_testkit::{bits, data, first_difference, uniform};
