//! Stateful differential cases: random programs of variables, reads, and assigns in the
//! main stream or inside `saved_user_deps`, called several times on both backends.
//!
//! What may differ, and how it is compared, is the stateless [`Case`]'s rule ([`check`]),
//! applied so that nothing approximate reaches the state: every value an op or an assign
//! may use, and so every value a variable is ever written, comes from the exact ops, which
//! CPU-JIT computes bit for bit as the interpreter does (kernels never contract `a*b+c`):
//! `Negative`, `Abs`, `Relu`, `Sqrt` (correctly rounded), `Floor`, `Ceil`, `Round`, `Sign`,
//! `Not`; `Add`, `Subtract`, `Multiply`, `Divide`, `Maximum`, `Minimum`, `And`, `Or`, `Xor`,
//! and `Power` on integers; the compares, `Select` and `Convert`. The approximate ops (the
//! vector math functions and `Power` on `f32` and `f64`) appear only as sinks, as in a
//! `Case`: results that nothing uses, neither an op nor an assign, held to their ulp bound
//! against the interpreter at their (bit-equal) input in each call, so their error never
//! feeds a later call. An initializer holds exact ops only (its value is state from the
//! start). Integer arithmetic wraps alike on both backends, any NaN matches any NaN when
//! values are compared, and no exact op gives a number that depends on a NaN's payload or
//! sign, so exact state stays exact over any number of calls.

use graphlift_ir::{Function, FunctionBuilder, Shape, Value};
use graphlift_runtime::{Backend, Tensor};

use super::build::{numeric, operand_shape, to, Values};
use super::compare::{compare_results, Compiled};
use super::*;

/// The most calls a [`StateCase`] makes.
pub const MAX_CALLS: usize = 4;

/// One variable of a [`StateCase`], named `v0`, `v1`, ... in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariableSpec {
    /// Element type: `f32`, `f64`, `i32`, `i64` (taken modulo 4).
    pub ty: usize,
    /// As [`ParamSpec::keep`]: the variable's shape broadcasts to the target shape.
    pub keep: u8,
    /// As [`ParamSpec::drop`].
    pub drop: usize,
    /// The initializer: these ops, the exact ones only (an approximate op is left out),
    /// over two constants of the variable's type and shape (data from [`input`]); the last
    /// value built (with no op, the second constant), converted to the variable's type, is
    /// the initial value.
    pub init: Vec<OpSpec>,
}

/// One step of a [`StateCase`]: every step adds one value (an approximate op two: its
/// input, then the sink), which later steps and the results may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepSpec {
    /// An op over the values built so far, as in a [`Case`]; a variable operand is read
    /// at this step, so it sees the assigns made before it.
    Op(OpSpec),
    /// Writes a value to variable `variable` (taken modulo the count) and adds the value
    /// written (the assign's value). The value is picked by `value`, counted from the
    /// newest, among the values a later op may use whose shape broadcasts to the
    /// variable's (the variable itself, read here, always does), converted to the variable's element type and broadcast to its
    /// shape. Made in the main stream it runs on every call; with `guarded`, inside
    /// `saved_user_deps`, only when a result (or a value behind one) is the assign.
    Assign {
        /// Which variable.
        variable: usize,
        /// Which value.
        value: usize,
        /// Inside `saved_user_deps`.
        guarded: bool,
    },
}

/// A random stateful program and its inputs, as plain data: run [`StateCase::calls`] times
/// on both backends with the same inputs, every result of every call and every variable
/// before the first call and after each must agree ([`check_state`]).
///
/// The values are, in order: the parameters `p0`, `p1`, ... (shapes and types as in a
/// [`Case`]), the variables, then a value per step. A variable used as an operand is read
/// where it is used; as a result, it is read at the end of the call. Results are chosen as
/// in a `Case` (by [`StateCase::results`], plus every sink and its input), and may be
/// variables, assigns (naming a guarded one makes it run) and any other value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateCase {
    /// The broadcast target shape.
    pub dims: Vec<usize>,
    /// The parameters; there may be none.
    pub params: Vec<ParamSpec>,
    /// The variables; at least one.
    pub variables: Vec<VariableSpec>,
    /// The steps, in order.
    pub steps: Vec<StepSpec>,
    /// Bit `i % 64` set: value `i` is also a result.
    pub results: u64,
    /// How many calls (clamped to `1..=`[`MAX_CALLS`]).
    pub calls: usize,
    /// Seed of the input data and of the initializers' constants (see [`input`]).
    pub seed: u64,
}

/// Builds the case's Function (variables with their initializers, assigns named `a0`,
/// `a1`, ... in step order) and says which results are approximate sinks; `None` if the
/// builder rejects it.
pub fn build_state(c: &StateCase) -> Option<(Function, Sinks)> {
    if c.variables.is_empty() {
        return None;
    }
    let b = FunctionBuilder::new("differential_state");
    let mut vals = Values::default();
    vals.push_params(&b, &c.dims, &c.params);
    let mut variables = Vec::with_capacity(c.variables.len());
    for (k, spec) in c.variables.iter().enumerate() {
        let (ty, shape) = (
            numeric(spec.ty),
            operand_shape(&c.dims, spec.keep, spec.drop),
        );
        let v = b.variable(&format!("v{k}"), initial_value(&b, spec, &shape, c.seed, k));
        vals.push(v);
        variables.push((v, ty, Shape::from(shape)));
    }
    let mut assigns = 0;
    for step in &c.steps {
        match *step {
            StepSpec::Op(ref op) => vals.push_op(&b, op, false),
            StepSpec::Assign {
                variable,
                value,
                guarded,
            } => {
                let (var, ty, ref shape) = variables[variable % variables.len()];
                let fits: Vec<usize> = vals
                    .live()
                    .into_iter()
                    .filter(|&i| {
                        let s = vals.get(i).tensor_type().map(|t| t.1);
                        s.and_then(|s| Shape::broadcast(&s, shape)).as_ref() == Some(shape)
                    })
                    .collect();
                let newest_first = fits.len().checked_sub(1 + value % fits.len().max(1))?;
                let src = vals.get(fits[newest_first]);
                let write = || {
                    let a = b.assign(var, to(src, ty).broadcast_to(shape.clone()));
                    a.named(&format!("a{assigns}"))
                };
                let a = if guarded {
                    b.saved_user_deps(write)
                } else {
                    write()
                };
                assigns += 1;
                vals.push(a);
            }
        }
    }
    let (results, sinks) = vals.results(c.results);
    let f = b.finish(&results).ok()?;
    Some((f, sinks))
}

/// The initial value of variable `k`: `spec`'s exact ops over two constants of its type
/// and `shape`, converted to its type.
fn initial_value<'b>(
    b: &'b FunctionBuilder,
    spec: &VariableSpec,
    shape: &[usize],
    seed: u64,
    k: usize,
) -> Value<'b> {
    let ty = numeric(spec.ty);
    let n = shape.iter().product();
    let mut pool = Values::default();
    for j in 0..2u64 {
        let salt = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(2 * k as u64 + j + 1);
        let data = input(ty, n, seed ^ salt);
        pool.push(b.constant(data, shape.to_vec()));
    }
    for op in &spec.init {
        pool.push_op(b, op, true);
    }
    to(pool.get(pool.len() - 1), ty)
}

/// Builds `case` and compares the backends on it: `Ok(None)` when the case does not build,
/// `Ok(Some(stats))` when they agree on the variables' initial values and, in each of the
/// case's calls (all with the same inputs, [`inputs`] of the case's seed), on every result
/// (under [`check`]'s tolerance) and then on every variable (bit for bit).
///
/// # Errors
/// A [`Finding`] whose [`Mismatch::Call`] says in (or after) which call the first
/// mismatch happened (0: the initial values).
pub fn check_state(
    jit: &dyn Backend,
    interpreter: &dyn Backend,
    case: &StateCase,
) -> Result<Option<Stats>, Box<Finding>> {
    let Some((f, sinks)) = build_state(case) else {
        return Ok(None);
    };
    let inputs = inputs(&f, case.seed);
    let calls = case.calls.clamp(1, MAX_CALLS);
    match compare_calls(jit, interpreter, &f, &sinks, &inputs, calls) {
        Ok(s) => Ok(Some(s)),
        Err(mismatch) => Err(Box::new(Finding {
            mismatch,
            function: f,
        })),
    }
}

/// Compiles `f` on both backends, compares the initial variables, then calls both `calls`
/// times with `inputs`, comparing the results and the variables after each call.
fn compare_calls(
    jit: &dyn Backend,
    interpreter: &dyn Backend,
    f: &Function,
    sinks: &Sinks,
    inputs: &[Tensor],
    calls: usize,
) -> Result<Stats, Mismatch> {
    let in_call = |call: usize| {
        move |m: Mismatch| Mismatch::Call {
            call,
            mismatch: Box::new(m),
        }
    };
    let both = Compiled::new(jit, interpreter, f)?;
    let mut stats = both.kernel_stats();
    both.compare_variables(&mut stats).map_err(in_call(0))?;
    for call in 1..=calls {
        let (got, want) = both.run(inputs).map_err(in_call(call))?;
        compare_results(&got, &want, sinks, &mut stats).map_err(in_call(call))?;
        both.compare_variables(&mut stats).map_err(in_call(call))?;
    }
    Ok(stats)
}
