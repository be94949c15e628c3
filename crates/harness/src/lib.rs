//! graphlift-harness: the harnesses graphlift is checked and measured with ([`accuracy`]
//! sweeps, [`differential`] testing, the peers benchmark's [`exprs`]), kept out of the
//! library's API for the tests, benchmarks, fuzz targets and the `graphlift` command.

#![warn(missing_docs)]

pub mod accuracy;
pub mod differential;
pub mod exprs;
