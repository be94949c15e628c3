//! graphlift-kernels: the code graphlift compiles ahead of time with Rust: the vector math
//! definitions ([`vmath`]) and library ([`veclib`]), the [`native`] kernels, non-temporal
//! [`stream`] stores, the [`parallel`] thread pool and the host [`target`] and its switches.

#![warn(missing_docs)]

pub mod native;
pub mod parallel;
pub mod stream;
pub mod target;
pub mod veclib;
pub mod vmath;
