//! Differential testing: CPU-JIT against INTERPRETER on random elementwise Functions, with
//! one definition of "agree" that the proptest and the coverage-guided fuzz targets share:
//! stateless [`Case`]s ([`check`]) and stateful [`StateCase`]s, whose variables must agree
//! too, call after call ([`check_state`]).

use std::fmt;

use graphlift_ir::{Function, UnaryOp};
use graphlift_runtime::Backend;

mod build;
mod compare;
mod inputs;
mod state;

pub use build::build;
pub use compare::compare_backends;
pub use inputs::{input, inputs, SPECIAL_F32};
pub use state::{build_state, check_state, StateCase, StepSpec, VariableSpec, MAX_CALLS};

/// The error, in `f64` ulp, allowed for the interpreter's own `f64` transcendental
/// functions, added to an `f64` sink's bound:
/// [`crate::accuracy::INTERPRETER_F64_MAX_ULP`], which a `graphlift-harness` test
/// checks against 256-bit references.
pub const F64_REFERENCE_ULP: f64 = crate::accuracy::INTERPRETER_F64_MAX_ULP;

/// The error, in ulp of the element type, allowed for the interpreter's own `Power`
/// (`f64::powf`, glibc's `pow`, documented within 0.52 ulp of `f64`; `f32` `Power` rounds
/// that once more, within 0.5 ulp of `f32` plus a tiny amount), added to a `Power` sink's
/// bound.
pub const POWER_REFERENCE_ULP: f64 = 1.0;

/// One parameter of a [`Case`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSpec {
    /// Index into [`graphlift_ir::ElementType::ALL`] (taken modulo its length).
    pub ty: usize,
    /// Bit `k` set: axis `k` (counted from the right) keeps the target extent; clear: 1.
    pub keep: u8,
    /// Leading axes of the target shape to drop (numpy broadcasting prepends them).
    pub drop: usize,
}

/// One op of a [`Case`]. Every field is taken modulo the range it selects from, so any
/// values are valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpSpec {
    /// Family: 0 and 4 unary, 1 binary, 2 compare, 5–7 select, 3 convert.
    pub kind: usize,
    /// Which op of the family ([`UnaryOp::ALL`], [`graphlift_ir::BinaryOp::ALL`],
    /// [`graphlift_ir::CompareOp::ALL`]).
    pub sub: usize,
    /// Operands, as indices into the values built so far (sinks excluded).
    pub operands: [usize; 3],
    /// An element type choice where the op needs one (convert target, operand coercion).
    pub ty: usize,
}

/// A random elementwise graph and its inputs, as plain data.
///
/// A broadcast target shape, 1–4 parameters of any element type whose shapes
/// numpy-broadcast to it, and a list of ops from the whole elementwise set (unary, binary,
/// compare, select, convert; the builder inserts the Broadcasts). The proptest in
/// `tests/differential.rs` and the fuzz target in `fuzz/` both draw `Case`s (from a strategy
/// and from raw bytes) and hand them to [`check`]. A subset of the other values (chosen by
/// [`Case::results`]), every sink and every sink's input are results, so kernels get several
/// outputs and intermediate values are compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The broadcast target shape (rank 0–3 in the proptest; any rank is valid).
    pub dims: Vec<usize>,
    /// The parameters; at least one.
    pub params: Vec<ParamSpec>,
    /// The ops, in order; each may use any earlier non-sink value.
    pub ops: Vec<OpSpec>,
    /// Bit `i % 64` set: value `i` is also a result.
    pub results: u64,
    /// Seed of the input data (special values included; see [`input`]).
    pub seed: u64,
}

/// An approximate result of a [`Case`] (no later op uses it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    /// A vector math function on `f32` or `f64`, and the index of the result holding its
    /// input.
    Unary(UnaryOp, usize),
    /// `Power` on `f32` or `f64` ([`graphlift_jit::vmath::pow`]): held to its bound plus
    /// [`POWER_REFERENCE_ULP`] against the interpreter's own result.
    Power,
}

/// Per result: `Some(sink)` for an approximate sink.
pub type Sinks = Vec<Option<Sink>>;

/// What one agreeing [`check`] compared, for "not vacuous" assertions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Fused kernels in the CPU-JIT executable.
    pub kernels: usize,
    /// Of those, kernels with more than one output.
    pub multi_output_kernels: usize,
    /// Of those, kernels that load or store elements narrower than they compute them (`i8`,
    /// `u8`, `i16`, `u16`, `u32`, `f16`, `bf16` values: their Cranelift IR has a narrow load
    /// or store).
    pub narrow_kernels: usize,
    /// Elements compared bit for bit.
    pub exact_elements: usize,
    /// Elements compared against an ulp bound.
    pub approximate_elements: usize,
    /// Variables that CPU-JIT kernels write in place (0 without state).
    pub in_place_writes: usize,
    /// Variable elements compared bit for bit, summed over the calls (0 without state).
    pub variable_elements: usize,
}

impl std::ops::AddAssign for Stats {
    fn add_assign(&mut self, o: Stats) {
        self.kernels += o.kernels;
        self.multi_output_kernels += o.multi_output_kernels;
        self.narrow_kernels += o.narrow_kernels;
        self.exact_elements += o.exact_elements;
        self.approximate_elements += o.approximate_elements;
        self.in_place_writes += o.in_place_writes;
        self.variable_elements += o.variable_elements;
    }
}

/// Why a [`check`] failed: the backends disagree, or one of them returned an error.
#[derive(Debug, Clone, PartialEq)]
pub enum Mismatch {
    /// CPU-JIT could not compile or run what the interpreter runs.
    Backend {
        /// `"CPU-JIT"` or `"INTERPRETER"`.
        backend: &'static str,
        /// The error's message.
        error: String,
    },
    /// An exact result differs.
    Exact {
        /// Result index.
        result: usize,
        /// Element index.
        element: usize,
        /// CPU-JIT's value, widened to f64.
        jit: Option<f64>,
        /// The interpreter's value, widened to f64.
        interpreter: Option<f64>,
    },
    /// An approximate result is further from the f64 reference than its documented bound.
    Approximate {
        /// Result index.
        result: usize,
        /// Element index.
        element: usize,
        /// The vector math op.
        op: UnaryOp,
        /// The input value (widened to `f64` for an `f32` op).
        x: f64,
        /// CPU-JIT's value (widened to `f64` for an `f32` op).
        y: f64,
        /// Error in ulp.
        ulp: f64,
        /// The documented bound in ulp.
        bound: f64,
    },
    /// A `Power` result is further from the interpreter's than its bound allows.
    ApproximatePower {
        /// Result index.
        result: usize,
        /// Element index.
        element: usize,
        /// CPU-JIT's value (an `f32` one converted exactly).
        jit: f64,
        /// The interpreter's value.
        interpreter: f64,
        /// Error in ulp of the element type, against the interpreter's value.
        ulp: f64,
        /// The bound in ulp.
        bound: f64,
    },
    /// An `f16` or `bf16` approximate sink is more than one ulp of its type off.
    ApproximateHalf {
        /// Result index.
        result: usize,
        /// Element index.
        element: usize,
        /// CPU-JIT's value.
        jit: f64,
        /// The interpreter's value.
        interpreter: f64,
        /// Representable values apart.
        ulp: u32,
    },
    /// A variable differs after a call (compared bit for bit, any NaN matching any NaN).
    Variable {
        /// The variable's name.
        name: String,
        /// Element index.
        element: usize,
        /// CPU-JIT's value, widened to f64.
        jit: Option<f64>,
        /// The interpreter's value, widened to f64.
        interpreter: Option<f64>,
    },
    /// A mismatch of a [`StateCase`], in or after the given call.
    Call {
        /// The call, from 1; 0 for the variables' initial values, before any call.
        call: usize,
        /// What differed.
        mismatch: Box<Mismatch>,
    },
    /// The result types differ.
    Type {
        /// Result index.
        result: usize,
        /// CPU-JIT's result type, as text.
        jit: String,
        /// The interpreter's result type, as text.
        interpreter: String,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Backend { backend, error } => write!(f, "{backend} failed: {error}"),
            Mismatch::Exact {
                result,
                element,
                jit,
                interpreter,
            } => write!(
                f,
                "result {result} element {element}: CPU-JIT {jit:?}, INTERPRETER {interpreter:?}"
            ),
            Mismatch::Approximate {
                result,
                element,
                op,
                x,
                y,
                ulp,
                bound,
            } => write!(
                f,
                "result {result} element {element}: {}({x:e}) = {y:e}, {ulp} ulp off (bound {bound})",
                op.name()
            ),
            Mismatch::ApproximatePower {
                result,
                element,
                jit,
                interpreter,
                ulp,
                bound,
            } => write!(
                f,
                "result {result} element {element}: Power: CPU-JIT {jit:e}, INTERPRETER {interpreter:e}, {ulp} ulp apart (bound {bound})"
            ),
            Mismatch::ApproximateHalf {
                result,
                element,
                jit,
                interpreter,
                ulp,
            } => write!(
                f,
                "result {result} element {element}: CPU-JIT {jit:e}, INTERPRETER {interpreter:e}, {ulp} ulp of the 16-bit type apart (bound 1)"
            ),
            Mismatch::Variable {
                name,
                element,
                jit,
                interpreter,
            } => write!(
                f,
                "variable {name} element {element}: CPU-JIT {jit:?}, INTERPRETER {interpreter:?}"
            ),
            Mismatch::Call { call: 0, mismatch } => write!(f, "before the first call: {mismatch}"),
            Mismatch::Call { call, mismatch } => write!(f, "call {call}: {mismatch}"),
            Mismatch::Type {
                result,
                jit,
                interpreter,
            } => write!(
                f,
                "result {result}: CPU-JIT gives {jit}, INTERPRETER gives {interpreter}"
            ),
        }
    }
}

/// A failed [`check`] or [`check_state`]: the mismatch and the Function it happened on.
#[derive(Debug)]
pub struct Finding {
    /// What differed.
    pub mismatch: Mismatch,
    /// The Function built from the case.
    pub function: Function,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The text form: one line per node, variables with their initializers.
        write!(f, "{}\nfunction:\n{}", self.mismatch, self.function)
    }
}

/// Builds `case` and compares the backends on it: `Ok(None)` when the case does not build,
/// `Ok(Some(stats))` when they agree.
///
/// The tolerance is the documented one. Kernels never contract `a*b+c` into an fma, so every
/// exact op (everything but the `f32` and `f64` vector math functions of
/// [`graphlift_jit::vmath`]) must agree with the interpreter **bit for bit**, any NaN
/// matching any NaN. A vector math op (`exp`, `expm1`, `log`, ... on `f32` or `f64`) is a
/// *sink*: no later op uses it, so an approximation never feeds an exact comparison; its
/// input is always a result too, and the sink's output is held to the documented ulp bound
/// ([`graphlift_jit::vmath::max_ulp`] of its element type) against the interpreter's value
/// at that (bit-equal) input: for `f32` the reference's `f64` value before rounding (an
/// almost exact value at `f32` scale); for `f64` the reference's `f64` result, which is
/// itself up to [`F64_REFERENCE_ULP`] from the exact value, so an `f64` sink may differ from
/// it by its bound plus that (the bound itself holds against 256-bit references:
/// `crate::accuracy::sweep_f64`). `Power` on `f32` and `f64` is a sink too, held to its
/// bound ([`graphlift_jit::vmath::pow::MAX_ULP`], [`graphlift_jit::vmath::pow::MAX_ULP_F64`])
/// plus [`POWER_REFERENCE_ULP`] against the interpreter's result.
///
/// # Errors
/// A [`Finding`] with the first [`Mismatch`].
pub fn check(
    jit: &dyn Backend,
    interpreter: &dyn Backend,
    case: &Case,
) -> Result<Option<Stats>, Box<Finding>> {
    let Some((f, sinks)) = build(case) else {
        return Ok(None);
    };
    let inputs = inputs(&f, case.seed);
    match compare_backends(jit, interpreter, &f, &sinks, &inputs) {
        Ok(s) => Ok(Some(s)),
        Err(mismatch) => Err(Box::new(Finding {
            mismatch,
            function: f,
        })),
    }
}
