//! Differential fuzzing: raw bytes decode into a random elementwise Function
//! ([`graphlift_harness::differential::Case`]); CPU-JIT and INTERPRETER run it and must agree
//! within the documented tolerance (bit for bit for exact ops, the ulp bound for the `f32`
//! vector math). A difference, an error from either backend on a Function the builder
//! accepted, or a crash is a finding.
//!
//! Compared with the proptest in `tests/differential.rs`, the decoder reaches further:
//! ranks up to 4, extents on both sides of the vector widths and the 2× unroll (2, 4, 8, 16,
//! 17, 31, 33, 64), up to 24 ops, and up to 4,096 elements.
#![no_main]

mod common;

use arbitrary::{Arbitrary, Result, Unstructured};
use graphlift_harness::differential::{check, Case};
use libfuzzer_sys::fuzz_target;

#[derive(Debug)]
struct FuzzCase(Case);

impl<'a> Arbitrary<'a> for FuzzCase {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let dims = common::dims(u)?;
        let rank = dims.len();
        let n_params = u.int_in_range(1..=4)?;
        let params = (0..n_params)
            .map(|_| common::param(u, rank))
            .collect::<Result<_>>()?;
        let n_ops = u.int_in_range(1..=24)?;
        let ops = (0..n_ops).map(|_| common::op(u)).collect::<Result<_>>()?;
        Ok(FuzzCase(Case {
            dims,
            params,
            ops,
            results: u.arbitrary()?,
            seed: u.arbitrary()?,
        }))
    }
}

fuzz_target!(|c: FuzzCase| {
    let (jit, interp) = common::backends();
    if let Err(finding) = check(&**jit, &**interp, &c.0) {
        panic!("{finding}\ncase: {:?}", c.0);
    }
});
