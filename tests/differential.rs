//! Differential property test: CPU-JIT against INTERPRETER on random elementwise graphs.
//!
//! The cases, the graph builder and the tolerance live in [`graphlift_harness::differential`], which
//! the fuzz target `fuzz/fuzz_targets/differential.rs` shares. Here proptest draws the cases:
//! target shapes of rank 0–3 with extents that are not multiples of 4 (0 and 1 included),
//! 1–4 parameters of every element type, 1–10 ops of the whole elementwise set.
//!
//! 256 cases in CI; `GRAPHLIFT_DIFF_CASES=N` for a longer run. Cases the fuzzer found are
//! regression tests below.

use std::cell::{Cell, RefCell};

use graphlift::Backend;
use graphlift_harness::differential::{check, Case, OpSpec, ParamSpec, Stats};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

fn case() -> impl Strategy<Value = Case> {
    let dim = prop_oneof![
        8 => prop::sample::select(vec![1usize, 2, 3, 5, 7, 9, 13]),
        1 => Just(0usize),
    ];
    (
        prop::collection::vec(dim, 0..=3),
        prop::collection::vec((0..5usize, any::<u8>(), 0..3usize), 1..=4),
        prop::collection::vec(
            (0..8usize, 0..64usize, any::<[usize; 3]>(), 0..5usize),
            1..=10,
        ),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(dims, params, ops, results, seed)| Case {
            dims,
            params: params
                .into_iter()
                .map(|(ty, keep, drop)| ParamSpec { ty, keep, drop })
                .collect(),
            ops: ops
                .into_iter()
                .map(|(kind, sub, operands, ty)| OpSpec {
                    kind,
                    sub,
                    operands,
                    ty,
                })
                .collect(),
            results,
            seed,
        })
}

fn run_case(c: &Case) -> Result<Option<Stats>, String> {
    let jit = Backend::create("CPU-JIT").unwrap();
    let interp = Backend::create("INTERPRETER").unwrap();
    check(&*jit, &*interp, c).map_err(|e| format!("{e}\ncase: {c:?}"))
}

#[test]
fn cpu_jit_matches_interpreter_on_random_elementwise_graphs() {
    let cases = Cell::new(0usize);
    let total = RefCell::new(Stats::default());
    let n_cases = std::env::var("GRAPHLIFT_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256u32);
    let mut runner = TestRunner::new(Config {
        cases: n_cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&case(), |c| {
        if let Some(s) = run_case(&c).map_err(TestCaseError::fail)? {
            cases.set(cases.get() + 1);
            *total.borrow_mut() += s;
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // Not vacuous: most cases built, many kernels (some with several outputs), and a good
    // number of elements compared both ways.
    let (cases, total) = (cases.get(), total.into_inner());
    eprintln!("{cases} graphs: {total:?}");
    let n = n_cases as usize;
    assert!(cases >= n * 3 / 4, "only {cases} graphs built");
    assert!(total.kernels >= n / 2, "only {} kernels", total.kernels);
    assert!(
        total.multi_output_kernels >= n / 20,
        "only {} multi-output kernels",
        total.multi_output_kernels
    );
    assert!(
        total.exact_elements >= n * 8 && total.approximate_elements >= n / 2,
        "{total:?}"
    );
}
