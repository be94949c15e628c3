//! Differential fuzzing of state: raw bytes decode into a random stateful program
//! ([`graphlift_harness::differential::StateCase`]: variables with initializers, ops that
//! read them, assigns in the main stream and inside `saved_user_deps`); CPU-JIT and
//! INTERPRETER call it 1–4 times with the same inputs and must agree on every result of
//! every call (under the documented tolerance) and on every variable before the first call
//! and after each (bit for bit). A difference, an error from either backend on a program
//! the builder accepted, or a crash is a finding.
//!
//! Compared with the proptest in `tests/differential.rs`, the decoder reaches further:
//! the target shapes of the `differential` target (ranks up to 4, up to 4,096 elements),
//! up to 3 parameters, up to 4 variables with initializers of up to 3 ops, and up to 24
//! steps.
#![no_main]

mod common;

use arbitrary::{Arbitrary, Result, Unstructured};
use graphlift_harness::differential::{check_state, StateCase, StepSpec, VariableSpec, MAX_CALLS};
use libfuzzer_sys::fuzz_target;

#[derive(Debug)]
struct FuzzStateCase(StateCase);

/// A variable, of the whole target shape half the time (so that many values fit it).
fn variable(u: &mut Unstructured<'_>, rank: usize) -> Result<VariableSpec> {
    let whole = u.arbitrary::<bool>()?;
    let n_init = u.int_in_range(0..=3)?;
    Ok(VariableSpec {
        ty: u.int_in_range(0..=3)?,
        keep: if whole { u8::MAX } else { u.arbitrary()? },
        drop: if whole { 0 } else { u.int_in_range(0..=rank)? },
        init: (0..n_init).map(|_| common::op(u)).collect::<Result<_>>()?,
    })
}

/// An op three times in five, else an assign (of the newest fitting value half the time).
fn step(u: &mut Unstructured<'_>) -> Result<StepSpec> {
    if u.ratio(3u8, 5)? {
        return Ok(StepSpec::Op(common::op(u)?));
    }
    let newest = u.arbitrary::<bool>()?;
    Ok(StepSpec::Assign {
        variable: usize::from(u.arbitrary::<u8>()?),
        value: if newest {
            0
        } else {
            usize::from(u.arbitrary::<u8>()?)
        },
        guarded: u.arbitrary()?,
    })
}

impl<'a> Arbitrary<'a> for FuzzStateCase {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let dims = common::dims(u)?;
        let rank = dims.len();
        let n_params = u.int_in_range(0..=3)?;
        let params = (0..n_params)
            .map(|_| common::param(u, rank))
            .collect::<Result<_>>()?;
        let n_variables = u.int_in_range(1..=4)?;
        let variables = (0..n_variables)
            .map(|_| variable(u, rank))
            .collect::<Result<_>>()?;
        let n_steps = u.int_in_range(1..=24)?;
        let steps = (0..n_steps).map(|_| step(u)).collect::<Result<_>>()?;
        Ok(FuzzStateCase(StateCase {
            dims,
            params,
            variables,
            steps,
            results: u.arbitrary()?,
            calls: u.int_in_range(1..=MAX_CALLS)?,
            seed: u.arbitrary()?,
        }))
    }
}

fuzz_target!(|c: FuzzStateCase| {
    let (jit, interp) = common::backends();
    if let Err(finding) = check_state(&**jit, &**interp, &c.0) {
        panic!("{finding}\ncase: {:?}", c.0);
    }
});
