//! Differential property tests: CPU-JIT against INTERPRETER on random elementwise graphs,
//! stateless and stateful.
//!
//! The cases, the graph builders and the tolerance live in
//! [`graphlift_harness::differential`], which the fuzz targets
//! `fuzz/fuzz_targets/differential.rs` and `differential_state.rs` share. Here proptest draws
//! the cases: target shapes of rank 0–3 with extents that are not multiples of 4 (0 and 1
//! included); for stateless graphs, 1–4 parameters of every element type (`i8`, `u8`, `f16`
//! and the other narrow types too, which fused kernels compute in `i32` / `i64` / `f32`: bit for
//! bit, but `f16`/`bf16` vector math within one ulp of the type; a second property draws
//! mostly those) and 1–10 ops of the
//! whole elementwise set; for stateful programs, 0–2 parameters, 1–3 variables (mostly of
//! the target shape) with initializers of 0–2 ops, 1–12 steps (ops and assigns, guarded or
//! not) and 1–4 calls, on the default CPU-JIT and on one that splits kernel calls over 3
//! threads in tasks of 64 bytes.
//!
//! 256 stateless cases, 128 stateful ones and 64 on threads in CI; `GRAPHLIFT_DIFF_CASES=N`
//! runs N of each. Cases the properties or the fuzzers found are regression tests below.

use std::cell::{Cell, RefCell};
use std::fmt::Debug;

use graphlift::jit::{CpuJitBackend, ThreadConfig};
use graphlift::runtime::Backend as BackendTrait;
use graphlift::{Backend, ElementType};
use graphlift_harness::differential::{
    check, check_state, Case, Finding, OpSpec, ParamSpec, StateCase, Stats, StepSpec, VariableSpec,
    MAX_CALLS,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

fn dims() -> impl Strategy<Value = Vec<usize>> {
    let dim = prop_oneof![
        8 => prop::sample::select(vec![1usize, 2, 3, 5, 7, 9, 13]),
        1 => Just(0usize),
    ];
    prop::collection::vec(dim, 0..=3)
}

/// An index into [`ElementType::ALL`]: every element type, the 8- and 16-bit integers,
/// the unsigned ones and `f16`/`bf16` included (fused kernels compute the 8- and 16-bit
/// ones in `i32` / `f32` and `u32` in `i64`; `u64` nodes run on reference kernels on
/// CPU-JIT).
/// The storage-only types (float8, FLOAT4E2M1, INT4, ...) are drawn too, but only Convert
/// (and Select, which moves them) reads them: the case builder converts them to a numeric
/// type before any arithmetic or comparison, as it does `bool`.
fn element_type() -> impl Strategy<Value = usize> {
    0..ElementType::ALL.len()
}

/// An index into [`ElementType::ALL`], four times in five a type that fused kernels store
/// narrower than they compute it (`i8`, `u8`, `i16`, `u16`, `u32`, `f16`, `bf16`) or do not
/// lower (`u64`), else one of `f32`, `i32`, `f64`, `i64`, `bool` to mix with: random graphs
/// mostly over the narrow types, with conversions between them and the others.
fn narrow_element_type() -> impl Strategy<Value = usize> {
    use ElementType::{Bool, BF16, F16, F32, F64, I16, I32, I64, I8, U16, U32, U64, U8};
    let index = |t: ElementType| ElementType::ALL.iter().position(|&x| x == t).unwrap_or(0);
    let narrow = [I8, U8, I16, U16, U32, U64, F16, BF16].map(index).to_vec();
    let core = [F32, I32, F64, I64, Bool].map(index).to_vec();
    prop_oneof![
        4 => prop::sample::select(narrow),
        1 => prop::sample::select(core),
    ]
}

fn param_of(ty: impl Strategy<Value = usize>) -> impl Strategy<Value = ParamSpec> {
    (ty, any::<u8>(), 0..3usize).prop_map(|(ty, keep, drop)| ParamSpec { ty, keep, drop })
}

fn param() -> impl Strategy<Value = ParamSpec> {
    param_of(element_type())
}

fn op_of(ty: impl Strategy<Value = usize>) -> impl Strategy<Value = OpSpec> {
    (0..8usize, 0..64usize, prop::array::uniform3(0..64usize), ty).prop_map(
        |(kind, sub, operands, ty)| OpSpec {
            kind,
            sub,
            operands,
            ty,
        },
    )
}

fn op() -> impl Strategy<Value = OpSpec> {
    op_of(element_type())
}

fn case() -> impl Strategy<Value = Case> {
    case_of(param(), op())
}

/// Cases mostly over the narrow types ([`narrow_element_type`]).
fn narrow_case() -> impl Strategy<Value = Case> {
    case_of(
        param_of(narrow_element_type()),
        op_of(narrow_element_type()),
    )
}

fn case_of(
    param: impl Strategy<Value = ParamSpec>,
    op: impl Strategy<Value = OpSpec>,
) -> impl Strategy<Value = Case> {
    (
        dims(),
        prop::collection::vec(param, 1..=4),
        prop::collection::vec(op, 1..=10),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(dims, params, ops, results, seed)| Case {
            dims,
            params,
            ops,
            results,
            seed,
        })
}

/// Variables mostly of the whole target shape, so that many values can be assigned to them.
fn variable() -> impl Strategy<Value = VariableSpec> {
    (
        0..4usize,
        prop_oneof![3 => Just(u8::MAX), 1 => any::<u8>()],
        prop_oneof![3 => Just(0usize), 1 => 0..3usize],
        prop::collection::vec(op(), 0..=2),
    )
        .prop_map(|(ty, keep, drop, init)| VariableSpec {
            ty,
            keep,
            drop,
            init,
        })
}

fn step() -> impl Strategy<Value = StepSpec> {
    prop_oneof![
        3 => op().prop_map(StepSpec::Op),
        2 => (0..3usize, prop_oneof![Just(0usize), 0..32usize], any::<bool>()).prop_map(|(variable, value, guarded)| {
            StepSpec::Assign {
                variable,
                value,
                guarded,
            }
        }),
    ]
}

fn state_case() -> impl Strategy<Value = StateCase> {
    (
        dims(),
        prop::collection::vec(param(), 0..=2),
        prop::collection::vec(variable(), 1..=3),
        prop::collection::vec(step(), 1..=12),
        any::<u64>(),
        1..=MAX_CALLS,
        any::<u64>(),
    )
        .prop_map(
            |(dims, params, variables, steps, results, calls, seed)| StateCase {
                dims,
                params,
                variables,
                steps,
                results,
                calls,
                seed,
            },
        )
}

type Check<C> = fn(&dyn BackendTrait, &dyn BackendTrait, &C) -> Result<Option<Stats>, Box<Finding>>;

/// Runs `check` with `jit` and the interpreter on `GRAPHLIFT_DIFF_CASES` (else
/// `default_cases`) cases drawn from `strategy`; panics with the finding and the case on the first failure (after
/// shrinking). Returns the number of cases, of cases that built, and the summed stats.
fn run_property<C: Clone + Debug>(
    strategy: impl Strategy<Value = C>,
    default_cases: u32,
    jit: &dyn BackendTrait,
    check: Check<C>,
) -> (usize, usize, Stats) {
    let n_cases = std::env::var("GRAPHLIFT_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    let interp = Backend::create("INTERPRETER").unwrap();
    let built = Cell::new(0usize);
    let total = RefCell::new(Stats::default());
    let mut runner = TestRunner::new(Config {
        cases: n_cases,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy, |c| {
        let found = check(jit, &*interp, &c)
            .map_err(|e| TestCaseError::fail(format!("{e}\ncase: {c:?}")))?;
        if let Some(s) = found {
            built.set(built.get() + 1);
            *total.borrow_mut() += s;
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    let (built, total) = (built.get(), total.into_inner());
    eprintln!("{built} of {n_cases} cases built: {total:?}");
    (n_cases as usize, built, total)
}

#[test]
fn cpu_jit_matches_interpreter_on_random_elementwise_graphs() {
    let jit = Backend::create("CPU-JIT").unwrap();
    let (n, built, total) = run_property(case(), 256, &*jit, check);
    // Not vacuous: most cases built, many kernels (some with several outputs), and a good
    // number of elements compared both ways.
    assert!(built >= n * 3 / 4, "only {built} graphs built");
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

#[test]
fn cpu_jit_matches_interpreter_on_random_graphs_of_narrow_types() {
    // i8, u8, i16, u16, u32, f16, bf16 computed in fused kernels (loads widen, stores narrow):
    // bit for bit, but for f16/bf16 vector math sinks (one ulp of their type).
    let jit = Backend::create("CPU-JIT").unwrap();
    let (n, built, total) = run_property(narrow_case(), 256, &*jit, check);
    assert!(built >= n * 3 / 4, "only {built} graphs built");
    // Not vacuous: many kernels load or store the narrow types themselves.
    assert!(total.narrow_kernels >= n / 4, "{total:?}");
    assert!(total.exact_elements >= n * 8, "{total:?}");
}

#[test]
fn cpu_jit_matches_interpreter_on_random_stateful_programs() {
    let jit = Backend::create("CPU-JIT").unwrap();
    let (n, built, total) = run_property(state_case(), 128, &*jit, check_state);
    // Not vacuous: every case built (assigns are typed to fit), kernels wrote variables
    // in place, and results, sinks and variables were compared over the calls.
    assert_eq!(built, n, "only {built} programs built");
    assert!(total.kernels >= n / 2, "only {} kernels", total.kernels);
    assert!(
        total.in_place_writes >= n / 16,
        "only {} in-place writes",
        total.in_place_writes
    );
    assert!(
        total.exact_elements >= n * 8
            && total.variable_elements >= n * 8
            && total.approximate_elements >= 1,
        "{total:?}"
    );
}

#[test]
fn cpu_jit_on_threads_matches_interpreter_on_random_stateful_programs() {
    // Kernel calls split into tasks of 64 bytes over 3 threads, so that kernels writing a
    // variable in place and reading it (or an aliased read of it) do so chunk by chunk.
    let jit = CpuJitBackend::new().with_thread_config(ThreadConfig {
        threads: 3,
        min_bytes_per_task: 64,
    });
    let (n, built, total) = run_property(state_case(), 64, &jit, check_state);
    assert_eq!(built, n, "only {built} programs built");
    assert!(total.in_place_writes >= 1, "{total:?}");
}

/// Found by the stateful property (about once in 10,000 cases): `r = read v0; f = floor(r);
/// assign(v0, f - f); results: f` on `i32[]`. The builder leaves out the control dependency
/// that orders the read before the assign, as the assign's inputs imply it; the
/// simplification's integer `x - x -> 0` then cuts that path, and CPU-JIT's pass pipeline
/// refuses the rewritten function (the read and the assign are no longer ordered), while
/// the INTERPRETER gives `f = 32` and `v0 = 0`.
#[test]
fn regression_integer_x_minus_x_assigned_after_a_live_read() {
    let c = StateCase {
        dims: vec![],
        params: vec![],
        variables: vec![VariableSpec {
            ty: 2,
            keep: u8::MAX,
            drop: 0,
            init: vec![],
        }],
        steps: vec![
            StepSpec::Op(OpSpec {
                kind: 0,
                sub: 11,
                operands: [0; 3],
                ty: 0,
            }),
            StepSpec::Op(OpSpec {
                kind: 1,
                sub: 1,
                operands: [1; 3],
                ty: 0,
            }),
            StepSpec::Assign {
                variable: 0,
                value: 0,
                guarded: false,
            },
        ],
        results: 0b10,
        calls: 2,
        seed: 0,
    };
    state_agrees(&c);
}

/// Checks one stateful case on CPU-JIT against the INTERPRETER, panicking with the finding.
fn state_agrees(c: &StateCase) {
    let jit = Backend::create("CPU-JIT").unwrap();
    let interp = Backend::create("INTERPRETER").unwrap();
    if let Err(e) = check_state(&*jit, &*interp, c) {
        panic!("{e}");
    }
}

/// Found by the stateful property: `r = read v2; s = r + p0; assign(v2, p0) after r;
/// assign(v0, s)`, on `f32[1, 1, 7]`. CPU-JIT gave `s = p0 + p0` (the read saw the
/// assign that is ordered after it), the INTERPRETER `v2 + p0`.
#[test]
fn regression_read_before_an_assign_of_a_parameter() {
    let c = StateCase {
        dims: vec![1, 1, 7],
        params: vec![ParamSpec {
            ty: 0,
            keep: 65,
            drop: 1,
        }],
        variables: vec![
            VariableSpec {
                ty: 0,
                keep: 255,
                drop: 0,
                init: vec![],
            };
            3
        ],
        steps: vec![
            StepSpec::Op(OpSpec {
                kind: 1,
                sub: 12,
                operands: [19, 12, 0],
                ty: 0,
            }),
            StepSpec::Assign {
                variable: 2,
                value: 14,
                guarded: false,
            },
            StepSpec::Op(OpSpec {
                kind: 1,
                sub: 0,
                operands: [0, 0, 0],
                ty: 0,
            }),
            StepSpec::Assign {
                variable: 0,
                value: 23,
                guarded: false,
            },
        ],
        results: 0,
        calls: 1,
        seed: 0,
    };
    state_agrees(&c);
}
