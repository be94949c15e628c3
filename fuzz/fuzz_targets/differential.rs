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

use std::sync::{Arc, OnceLock};

use arbitrary::{Arbitrary, Result, Unstructured};
use graphlift::runtime::Backend as BackendTrait;
use graphlift::Backend;
use graphlift_harness::differential::{check, Case, OpSpec, ParamSpec};
use libfuzzer_sys::fuzz_target;

/// Extents across the vector-width (2 and 4 lanes) and 2× unroll (4 and 8) boundaries.
const EXTENTS: [usize; 16] = [0, 1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 31, 33, 64];
const MAX_ELEMENTS: usize = 4096;

#[derive(Debug)]
struct FuzzCase(Case);

impl<'a> Arbitrary<'a> for FuzzCase {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let rank = u.int_in_range(0..=4)?;
        let mut dims = Vec::with_capacity(rank);
        let mut count = 1usize;
        for _ in 0..rank {
            let d = *u.choose(&EXTENTS)?;
            let d = if d > 1 && count * d > MAX_ELEMENTS {
                1
            } else {
                d
            };
            count *= d.max(1);
            dims.push(d);
        }
        let n_params = u.int_in_range(1..=4)?;
        let params = (0..n_params)
            .map(|_| {
                Ok(ParamSpec {
                    ty: u.int_in_range(0..=4)?,
                    keep: u.arbitrary()?,
                    drop: u.int_in_range(0..=rank)?,
                })
            })
            .collect::<Result<_>>()?;
        let n_ops = u.int_in_range(1..=24)?;
        let ops = (0..n_ops)
            .map(|_| {
                Ok(OpSpec {
                    kind: u.int_in_range(0..=7)?,
                    sub: u.int_in_range(0..=63)?,
                    operands: [u.arbitrary::<u8>()?, u.arbitrary()?, u.arbitrary()?]
                        .map(usize::from),
                    ty: u.int_in_range(0..=4)?,
                })
            })
            .collect::<Result<_>>()?;
        Ok(FuzzCase(Case {
            dims,
            params,
            ops,
            results: u.arbitrary()?,
            seed: u.arbitrary()?,
        }))
    }
}

fn backends() -> &'static (Arc<dyn BackendTrait>, Arc<dyn BackendTrait>) {
    static B: OnceLock<(Arc<dyn BackendTrait>, Arc<dyn BackendTrait>)> = OnceLock::new();
    B.get_or_init(|| {
        (
            Backend::create("CPU-JIT").expect("CPU-JIT is registered"),
            Backend::create("INTERPRETER").expect("INTERPRETER is registered"),
        )
    })
}

fuzz_target!(|c: FuzzCase| {
    let (jit, interp) = backends();
    if let Err(finding) = check(&**jit, &**interp, &c.0) {
        panic!("{finding}\ncase: {:?}", c.0);
    }
});
