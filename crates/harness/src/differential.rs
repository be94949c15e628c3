//! Differential testing: CPU-JIT against INTERPRETER on random elementwise Functions.
//!
//! A [`Case`] is a plain description of a random graph: a broadcast target shape, 1–4
//! parameters of any element type whose shapes numpy-broadcast to it, and a list of ops from
//! the whole elementwise set (unary, binary, compare, select, convert; the builder inserts
//! the Broadcasts). The proptest in `tests/differential.rs` and the coverage-guided fuzz
//! target in `fuzz/` both draw `Case`s (from a strategy and from raw bytes) and hand them to
//! [`check`], so the two share one definition of "agree".
//!
//! The tolerance is the documented one. Kernels never contract `a*b+c` into an fma (see
//! `graphlift_jit`'s crate docs), so every exact op (everything but the `f32` and `f64`
//! vector math functions of [`graphlift_jit::vmath`]) must agree with the interpreter **bit
//! for bit**, any NaN matching any NaN. A vector math op (`exp`, `expm1`, `log`, ... on `f32`
//! or `f64`) is a *sink*: no later op uses it, so an approximation never feeds an exact
//! comparison; its input is always a result too, and the sink's output is held to the
//! documented ulp bound ([`vmath::max_ulp`] of its element type) against the interpreter's
//! value at that (bit-equal) input: for `f32` the reference's `f64` value before rounding
//! (an almost exact value at `f32` scale); for `f64` the reference's `f64` result, which is
//! itself up to [`F64_REFERENCE_ULP`] from the exact value, so an `f64` sink may differ from
//! it by its bound plus that (the bound itself is measured against 256-bit references:
//! `crate::accuracy::sweep_f64`).
//! `Power` on `f32` and `f64` (inline since issue 3) is a sink too, held to its bound
//! ([`graphlift_jit::vmath::pow::MAX_ULP`], [`graphlift_jit::vmath::pow::MAX_ULP_F64`]) plus
//! [`POWER_REFERENCE_ULP`] against the interpreter's result.
//! A subset of the other values (chosen by [`Case::results`]), every sink and every sink's
//! input are results, so kernels get several outputs and intermediate values are compared.

use std::fmt;

use graphlift_ir::{
    BinaryOp, CompareOp, ElementType, Function, FunctionBuilder, Op, TensorData, UnaryOp, Value,
};
use graphlift_jit::vmath;
use graphlift_runtime::reference::unary_f64;
use graphlift_runtime::{Backend, Tensor};

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
    /// Index into [`ElementType::ALL`] (taken modulo its length).
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
    /// Which op of the family ([`UnaryOp::ALL`], [`BinaryOp::ALL`], [`CompareOp::ALL`]).
    pub sub: usize,
    /// Operands, as indices into the values built so far (sinks excluded).
    pub operands: [usize; 3],
    /// An element type choice where the op needs one (convert target, operand coercion).
    pub ty: usize,
}

/// A random elementwise graph and its inputs, as plain data.
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
    /// Elements compared bit for bit.
    pub exact_elements: usize,
    /// Elements compared against an ulp bound.
    pub approximate_elements: usize,
}

impl std::ops::AddAssign for Stats {
    fn add_assign(&mut self, o: Stats) {
        self.kernels += o.kernels;
        self.multi_output_kernels += o.multi_output_kernels;
        self.exact_elements += o.exact_elements;
        self.approximate_elements += o.approximate_elements;
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

fn ty_of(v: &Value<'_>) -> ElementType {
    v.tensor_type().map(|t| t.0).unwrap_or(ElementType::F32)
}

fn to<'b>(v: Value<'b>, t: ElementType) -> Value<'b> {
    if ty_of(&v) == t {
        v
    } else {
        v.convert(t)
    }
}

fn numeric(t: usize) -> ElementType {
    [
        ElementType::F32,
        ElementType::F64,
        ElementType::I32,
        ElementType::I64,
    ][t % 4]
}

/// A built value and, for an approximate sink, its op and the index of its input value.
struct Built<'b> {
    v: Value<'b>,
    sink: Option<Sink>,
}

/// Builds the case's Function and says which results are approximate sinks; `None` if the
/// builder rejects the graph (a case can describe an ill-typed graph, which is no test).
pub fn build(c: &Case) -> Option<(Function, Sinks)> {
    if c.params.is_empty() {
        return None;
    }
    let b = FunctionBuilder::new("differential");
    let mut vals: Vec<Built<'_>> = Vec::new();
    for (k, p) in c.params.iter().enumerate() {
        let rank = c.dims.len().saturating_sub(p.drop.min(c.dims.len()));
        let offset = c.dims.len() - rank;
        let shape: Vec<usize> = (0..rank)
            .map(|a| {
                let from_right = rank - 1 - a;
                if p.keep >> (from_right % 8) & 1 == 1 {
                    c.dims[offset + a]
                } else {
                    1
                }
            })
            .collect();
        let ty = ElementType::ALL[p.ty % ElementType::ALL.len()];
        let v = b.parameter(&format!("p{k}"), ty, shape);
        vals.push(Built { v, sink: None });
    }
    let mut must_result: Vec<usize> = Vec::new();
    for op in &c.ops {
        let live: Vec<usize> = (0..vals.len())
            .filter(|&i| vals[i].sink.is_none())
            .collect();
        let pick = |k: usize| live[op.operands[k] % live.len()];
        let (a, bb, cc) = (vals[pick(0)].v, vals[pick(1)].v, vals[pick(2)].v);
        let built = match op.kind % 8 {
            0 | 4 => {
                let u = UnaryOp::ALL[op.sub % UnaryOp::ALL.len()];
                let x = match u {
                    UnaryOp::Not => to(a, ElementType::Bool),
                    UnaryOp::Exp
                    | UnaryOp::Log
                    | UnaryOp::Sqrt
                    | UnaryOp::Tanh
                    | UnaryOp::Sigmoid
                    | UnaryOp::Erf
                    | UnaryOp::Expm1
                    | UnaryOp::Log1p => {
                        if ty_of(&a).is_float() {
                            a
                        } else {
                            to(a, [ElementType::F32, ElementType::F64][op.ty % 2])
                        }
                    }
                    _ if ty_of(&a) == ElementType::Bool => to(a, numeric(op.ty)),
                    _ => a,
                };
                let y = b.op(Op::Unary(u), &[x]);
                if vmath::max_ulp(u, ty_of(&x)).is_some() {
                    vals.push(Built { v: x, sink: None });
                    must_result.push(vals.len() - 1);
                    Built {
                        v: y,
                        sink: Some(Sink::Unary(u, vals.len() - 1)),
                    }
                } else {
                    Built { v: y, sink: None }
                }
            }
            1 => {
                let op_b = BinaryOp::ALL[op.sub % BinaryOp::ALL.len()];
                let logical = matches!(op_b, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor);
                let t = if logical {
                    ElementType::Bool
                } else if ty_of(&a) == ElementType::Bool {
                    numeric(op.ty)
                } else {
                    ty_of(&a)
                };
                let y = b.broadcasting_op(Op::Binary(op_b), &[to(a, t), to(bb, t)]);
                let sink = (op_b == BinaryOp::Power && t.is_float()).then_some(Sink::Power);
                Built { v: y, sink }
            }
            2 => {
                let cmp = CompareOp::ALL[op.sub % CompareOp::ALL.len()];
                let y = b.broadcasting_op(Op::Compare(cmp), &[a, to(bb, ty_of(&a))]);
                Built { v: y, sink: None }
            }
            5..=7 => {
                let y = graphlift_ir::select(to(cc, ElementType::Bool), a, to(bb, ty_of(&a)));
                Built { v: y, sink: None }
            }
            _ => Built {
                v: to(a, ElementType::ALL[op.ty % ElementType::ALL.len()]),
                sink: None,
            },
        };
        vals.push(built);
    }
    let mut chosen: Vec<usize> = (0..vals.len())
        .filter(|&i| {
            vals[i].sink.is_some() || must_result.contains(&i) || c.results >> (i % 64) & 1 == 1
        })
        .collect();
    if chosen.is_empty() {
        chosen.push(vals.len() - 1);
    }
    let results: Vec<Value<'_>> = chosen.iter().map(|&i| vals[i].v).collect();
    let sinks = chosen
        .iter()
        .map(|&i| {
            vals[i].sink.map(|sink| match sink {
                Sink::Unary(u, input) => {
                    let at = chosen.iter().position(|&j| j == input);
                    Sink::Unary(u, at.unwrap_or(usize::MAX))
                }
                Sink::Power => Sink::Power,
            })
        })
        .collect();
    let f = b.finish(&results).ok()?;
    Some((f, sinks))
}

/// The special `f32` values inputs are drawn from a third of the time: signed zeros, ±1,
/// halves (round-to-even cases), ±inf, NaN, a denormal, the extremes, a value past `i32`'s
/// range, and the smallest normal.
pub const SPECIAL_F32: [f32; 16] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.5,
    -2.5,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    1e-40,
    f32::MAX,
    f32::MIN,
    3e9,
    -7.0,
    f32::MIN_POSITIVE,
];

/// `n` input values of type `t` from `seed` (xorshift64): a third special values
/// ([`SPECIAL_F32`]; `0, ±1, MIN, MAX, 2` for integers), the rest spread over many binades
/// for floats and small magnitudes for integers (so that arithmetic mostly stays in range).
pub fn input(t: ElementType, n: usize, seed: u64) -> TensorData {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut pick = |special: bool| -> (u64, bool) {
        let r = next();
        (r, special && r % 3 == 0)
    };
    let special = |r: u64| SPECIAL_F32[((r >> 8) % 16) as usize];
    match t {
        ElementType::F32 => TensorData::F32(
            (0..n)
                .map(|_| match pick(true) {
                    (r, true) => special(r),
                    (r, false) => ((r >> 11) as i32 as f32) * 2f32.powi((r % 24) as i32 - 40),
                })
                .collect(),
        ),
        ElementType::F64 => TensorData::F64(
            (0..n)
                .map(|_| match pick(true) {
                    (r, true) => f64::from(special(r)),
                    (r, false) => ((r >> 11) as i64 as f64) * 2f64.powi((r % 40) as i32 - 70),
                })
                .collect(),
        ),
        ElementType::I32 => TensorData::I32(
            (0..n)
                .map(|_| match pick(true) {
                    (r, true) => [0, 1, -1, i32::MIN, i32::MAX, 2][(r % 6) as usize],
                    (r, false) => (r >> 33) as i32 % 50,
                })
                .collect(),
        ),
        ElementType::I64 => TensorData::I64(
            (0..n)
                .map(|_| match pick(true) {
                    (r, true) => [0, 1, -1, i64::MIN, i64::MAX, 2][(r % 6) as usize],
                    (r, false) => (r >> 20) as i64 % 1000,
                })
                .collect(),
        ),
        ElementType::Bool => TensorData::Bool((0..n).map(|_| pick(false).0 & 1 == 1).collect()),
    }
}

/// The inputs of `f` for `seed`: parameter `k` gets [`input`] with `seed + 7919 k`.
///
/// # Panics
/// If a parameter's element count overflows `usize` (cases keep shapes small).
pub fn inputs(f: &Function, seed: u64) -> Vec<Tensor> {
    f.parameter_types()
        .into_iter()
        .enumerate()
        .map(|(k, t)| {
            let n = t
                .shape
                .element_count()
                .expect("case shapes are small enough to count");
            let data = input(t.element_type, n, seed.wrapping_add(k as u64 * 7919));
            Tensor::from_data(data, t.shape).expect("input data has the parameter's length")
        })
        .collect()
}

/// The first element where `a` and `b` differ bit for bit (any NaN matches any NaN), or
/// where their types or lengths differ (element 0).
fn first_difference(a: &TensorData, b: &TensorData) -> Option<usize> {
    fn pos<T: Copy>(x: &[T], y: &[T], eq: impl Fn(T, T) -> bool) -> Option<usize> {
        if x.len() != y.len() {
            return Some(0);
        }
        x.iter().zip(y).position(|(&p, &q)| !eq(p, q))
    }
    match (a, b) {
        (TensorData::F32(x), TensorData::F32(y)) => pos(x, y, |p, q| {
            p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())
        }),
        (TensorData::F64(x), TensorData::F64(y)) => pos(x, y, |p, q| {
            p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())
        }),
        (TensorData::I32(x), TensorData::I32(y)) => pos(x, y, |p, q| p == q),
        (TensorData::I64(x), TensorData::I64(y)) => pos(x, y, |p, q| p == q),
        (TensorData::Bool(x), TensorData::Bool(y)) => pos(x, y, |p, q| p == q),
        _ => Some(0),
    }
}

/// Runs `f` on both backends with `inputs` and compares every result under the module's
/// tolerance; `sinks` comes from [`build`].
///
/// # Errors
/// The first [`Mismatch`]. An interpreter error on a Function the builder accepted is a
/// mismatch too (the reference must run everything that builds).
pub fn compare_backends(
    jit: &dyn Backend,
    interpreter: &dyn Backend,
    f: &Function,
    sinks: &Sinks,
    inputs: &[Tensor],
) -> Result<Stats, Mismatch> {
    let fail = |backend: &'static str| {
        move |e: graphlift_runtime::RuntimeError| Mismatch::Backend {
            backend,
            error: e.to_string(),
        }
    };
    let exe = jit.compile(f).map_err(fail("CPU-JIT"))?;
    let kernels = exe.kernels();
    let mut stats = Stats {
        kernels: kernels.len(),
        multi_output_kernels: kernels.iter().filter(|k| k.outputs > 1).count(),
        ..Stats::default()
    };
    let got = exe.run(inputs).map_err(fail("CPU-JIT"))?;
    let want = interpreter
        .compile(f)
        .and_then(|e| e.run(inputs))
        .map_err(fail("INTERPRETER"))?;
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        if g.tensor_type() != w.tensor_type() {
            return Err(Mismatch::Type {
                result: k,
                jit: format!("{:?}", g.tensor_type()),
                interpreter: format!("{:?}", w.tensor_type()),
            });
        }
        match sinks.get(k).copied().flatten() {
            Some(Sink::Power) => {
                let power = |i: usize, jit: f64, interpreter: f64, ulp: f64, bound: f64| {
                    Mismatch::ApproximatePower {
                        result: k,
                        element: i,
                        jit,
                        interpreter,
                        ulp,
                        bound,
                    }
                };
                if let (Ok(y), Ok(r)) = (g.read::<f64>(), w.read::<f64>()) {
                    let bound = vmath::pow::MAX_ULP_F64 + POWER_REFERENCE_ULP;
                    for (i, (&yi, &ri)) in y.iter().zip(r.iter()).enumerate() {
                        // In the coarser ulp of the two (they differ at a binade edge).
                        let ulp = vmath::ulp_error_f64(yi, ri, 0.0)
                            .min(vmath::ulp_error_f64(ri, yi, 0.0));
                        if ulp > bound {
                            return Err(power(i, yi, ri, ulp, bound));
                        }
                    }
                    stats.approximate_elements += y.len();
                    continue;
                }
                let (Ok(y), Ok(r)) = (g.read::<f32>(), w.read::<f32>()) else {
                    return Err(Mismatch::Backend {
                        backend: "CPU-JIT",
                        error: format!("sink {k} of Power is neither f32 nor f64"),
                    });
                };
                let bound = vmath::pow::MAX_ULP + POWER_REFERENCE_ULP;
                for (i, (&yi, &ri)) in y.iter().zip(r.iter()).enumerate() {
                    let ulp = vmath::ulp_error(yi, f64::from(ri));
                    if ulp > bound {
                        return Err(power(i, f64::from(yi), f64::from(ri), ulp, bound));
                    }
                }
                stats.approximate_elements += y.len();
            }
            Some(Sink::Unary(op, input)) => {
                let approximate =
                    |i: usize, x: f64, y: f64, ulp: f64, bound: f64| Mismatch::Approximate {
                        result: k,
                        element: i,
                        op,
                        x,
                        y,
                        ulp,
                        bound,
                    };
                if let (Ok(x), Ok(y)) = (want[input].read::<f64>(), g.read::<f64>()) {
                    // f64: against the interpreter's own f64 value, which is itself up to
                    // F64_REFERENCE_ULP from the exact one.
                    let bound =
                        vmath::max_ulp(op, ElementType::F64).unwrap_or(0.0) + F64_REFERENCE_ULP;
                    for (i, (&xi, &yi)) in x.iter().zip(y.iter()).enumerate() {
                        // In the coarser ulp of the two (they differ at a binade edge).
                        let r = unary_f64(op, xi);
                        let ulp =
                            vmath::ulp_error_f64(yi, r, 0.0).min(vmath::ulp_error_f64(r, yi, 0.0));
                        if ulp > bound {
                            return Err(approximate(i, xi, yi, ulp, bound));
                        }
                    }
                    stats.approximate_elements += y.len();
                    continue;
                }
                let bound = vmath::max_ulp(op, ElementType::F32).unwrap_or(0.0);
                let (Ok(x), Ok(y)) = (want[input].read::<f32>(), g.read::<f32>()) else {
                    return Err(Mismatch::Backend {
                        backend: "CPU-JIT",
                        error: format!("sink {k} of {} is neither f32 nor f64", op.name()),
                    });
                };
                for (i, (&xi, &yi)) in x.iter().zip(y.iter()).enumerate() {
                    let ulp = vmath::ulp_error(yi, unary_f64(op, f64::from(xi)));
                    if ulp > bound {
                        return Err(approximate(i, f64::from(xi), f64::from(yi), ulp, bound));
                    }
                }
                stats.approximate_elements += y.len();
            }
            None => {
                if let Some(i) = first_difference(g.data(), w.data()) {
                    return Err(Mismatch::Exact {
                        result: k,
                        element: i,
                        jit: g.data().get_f64(i),
                        interpreter: w.data().get_f64(i),
                    });
                }
                stats.exact_elements += g.len();
            }
        }
    }
    Ok(stats)
}

/// A failed [`check`]: the mismatch and the Function it happened on.
#[derive(Debug)]
pub struct Finding {
    /// What differed.
    pub mismatch: Mismatch,
    /// The Function built from the case.
    pub function: Function,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}\nfunction: {:?}", self.mismatch, self.function)
    }
}

/// Builds `case` and compares the backends on it: `Ok(None)` when the case does not build,
/// `Ok(Some(stats))` when they agree.
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
