//! Control flow: ONNX `If`, `Loop` and `Scan` as one IR op, [`crate::Op::ControlFlow`], whose
//! bodies are sub-[`Function`]s (compiled once per backend, run by the executor as one step
//! that picks a branch or iterates).
//!
//! # Operands and bodies
//!
//! Every body takes, after the values the op itself hands it, the *captured* values: the
//! outer-scope values the body reads (ONNX lets a subgraph name any value of an enclosing
//! graph). An importer turns each such reference into a body parameter and the outer value
//! into an extra operand of the op, in the same order, so a body is a closed Function.
//!
//! | op | operands | body parameters | body results | outputs |
//! |---|---|---|---|---|
//! | [`If`] | `cond`, captured.. | captured.. (both branches) | `outs..` (branches agree) | `outs..` |
//! | [`Loop`] | `M`, `cond`, carried.., captured.. | `iter`, `cond`, carried.., captured.. | `cond`, carried.., scan.. | carried.., scan.. stacked on a new axis 0 |
//! | [`Scan`] | state.., scan inputs.., captured.. | state.., scan slices.., captured.. | state.., scan slices.. | state.., scan outputs |
//!
//! `cond` and `M` are one-element tensors (`bool`, `i64`); an ONNX `Loop` without `M` or
//! `cond` gets `i64::MAX` or `true` from the importer. A loop-carried value keeps its element
//! type and shape across iterations (checked when the node is built: a body result of
//! another type is an error naming the carried value).
//!
//! # Static shapes, and the one dynamic-shape case
//!
//! graphlift's Executables have static result shapes. A `Loop`'s scan outputs are stacked
//! along a new axis 0 whose length is the iteration count; it is static, and the op holds it
//! ([`Loop::scan_length`]), when the trip count is a constant and the condition is
//! constant-true or absent (importers check that). Otherwise the length is known only at run
//! time, which no executor of graphlift supports, so an importer refuses such a `Loop` with
//! an error naming the node and saying why; and a run whose iteration count differs from
//! `scan_length` (it cannot, by construction) is an execution error, never a wrong shape.
//!
//! # Bodies specialised per iteration ([`Body::Specialized`])
//!
//! A loop body may use a loop-carried value (typically the iteration counter) as a *shape
//! operand*: `Slice(buf, starts = i, ends = Min(d, i + 1))`, `Range(i, i + 1, 1)`. Under
//! static shapes such a body has a different Function for every value of those inputs.
//! The general mechanism is specialisation by binding: the body names which of its
//! parameters are *bound* ([`Specialized::bound`]); before each iteration the executor reads
//! their values (small integer tensors) and asks the op's [`Specializer`] for the body with
//! those values as constants (an importer re-imports the subgraph with them given, so every
//! shape folds to a constant, exactly as for a top-level graph input given at import), then
//! runs it. The importer declares the body's parameter and result types from the
//! specialisation at the initial values; every specialisation must have exactly those types
//! (a carried value that would change shape is an error at run time naming the node).
//!
//! Specialisations are cached, least recently used first out: the op caches the specialised
//! Functions (no second import), and each backend caches what it compiled from them (no
//! second compile), keyed the same way ([`specialization_key`]), so a second run of a model
//! imports and compiles nothing. Both caches hold the body's [`Specialized::capacity`]
//! entries ([`DEFAULT_SPECIALIZATION_CAPACITY`] unless [`Specialized::with_capacity`] says
//! otherwise): the body owns the one setting, as a backend's cache of its compilations is
//! worth no more entries than the body's (an importer offers it as an import option). This was chosen over keeping `Slice`/`Range` as ops with
//! run-time bounds because it works for every op that takes a shape operand (`Reshape`,
//! `Tile`, `Expand`, `ConstantOfShape`, `OneHot` depth, ...) with no new run-time-shape op,
//! and lets each specialisation be optimised and compiled like any static graph; its cost is
//! one import and compile per distinct bound value on the first run.

use crate::Lru;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::{ElementType, Function, Shape, TensorData, TensorType};

/// Default number of specialisations a [`Specialized`] body (and a backend, per body) keeps:
/// 1,024 entries ([`Specialized::with_capacity`] sets another). It holds every iteration of
/// the loops of the decoder models we run (SLANet's table decoder runs 501) with room to
/// spare; each entry is one small body Function (and, in a backend, its compilation).
pub const DEFAULT_SPECIALIZATION_CAPACITY: usize = 1024;

/// A control-flow op ([`crate::Op::ControlFlow`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ControlFlow {
    /// ONNX `If`.
    If(If),
    /// ONNX `Loop`.
    Loop(Loop),
    /// ONNX `Scan` (opset 9 on).
    Scan(Scan),
}

/// ONNX `If`: operands `cond` (one `bool` element) and the captured values; runs
/// `then_branch` or `else_branch` on the captured values. Both branches take the captured
/// values as parameters and their results agree in element type and shape.
#[derive(Debug, Clone, PartialEq)]
pub struct If {
    /// The branch taken when `cond` is true.
    pub then_branch: Function,
    /// The branch taken when `cond` is false.
    pub else_branch: Function,
}

/// ONNX `Loop` (see the module docs for operands, body and outputs).
#[derive(Debug, Clone, PartialEq)]
pub struct Loop {
    /// The body.
    pub body: Body,
    /// Number of loop-carried values.
    pub carried: usize,
    /// Number of scan outputs (body results after the carried values).
    pub scan_outputs: usize,
    /// The static iteration count, the length of the scan outputs' new axis 0; required when
    /// there are scan outputs.
    pub scan_length: Option<usize>,
}

/// ONNX `Scan`, opset 9 on (see the module docs): `scan_inputs` inputs are iterated along
/// `input_axes[k]` (from the end when `input_reverse[k]`), and the body's scan results are
/// stacked along `output_axes[k]` of the outputs (filled from the end when
/// `output_reverse[k]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Scan {
    /// The body.
    pub body: Function,
    /// Number of state variables.
    pub state: usize,
    /// Number of scan inputs.
    pub scan_inputs: usize,
    /// The axis of each scan input iterated over.
    pub input_axes: Vec<usize>,
    /// Whether each scan input is read from its end.
    pub input_reverse: Vec<bool>,
    /// The axis of each scan output its slices are stacked along.
    pub output_axes: Vec<usize>,
    /// Whether each scan output is filled from its end.
    pub output_reverse: Vec<bool>,
}

/// A loop body: a Function, or one specialised per iteration for the values of some
/// parameters (see the module docs).
// The op holding it is behind an `Arc` already: boxing the Function would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A body of static shapes, compiled once.
    Static(Function),
    /// A body specialised for the values of its bound parameters.
    Specialized(Arc<Specialized>),
}

/// Makes a body Function for given values of its bound parameters (an importer re-importing
/// the subgraph with those values known).
pub trait Specializer: Send + Sync + fmt::Debug {
    /// The body with the bound parameters' `values` (in [`Specialized::bound`] order) as
    /// constants: it still has every parameter (the bound ones unused), in order.
    ///
    /// # Errors
    /// A message saying why the body cannot be built for these values.
    fn specialize(&self, values: &[TensorData]) -> Result<Function, String>;
}

/// A body specialised per call for the values of its bound parameters.
pub struct Specialized {
    /// The body's name (the ONNX subgraph's), for messages.
    pub name: String,
    /// Indices of the bound parameters.
    pub bound: Vec<usize>,
    /// Every parameter's type.
    pub parameters: Vec<TensorType>,
    /// Every result's type.
    pub results: Vec<TensorType>,
    specializer: Arc<dyn Specializer>,
    cache: Mutex<Lru<Function>>,
}

impl fmt::Debug for Specialized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Specialized")
            .field("name", &self.name)
            .field("bound", &self.bound)
            .field("parameters", &self.parameters)
            .field("results", &self.results)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Specialized {
    /// Two specialised bodies are equal only when they are the same one.
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Specialized {
    /// A specialised body of these parameter and result types, caching
    /// [`DEFAULT_SPECIALIZATION_CAPACITY`] specialisations.
    pub fn new(
        name: impl Into<String>,
        bound: Vec<usize>,
        parameters: Vec<TensorType>,
        results: Vec<TensorType>,
        specializer: Arc<dyn Specializer>,
    ) -> Specialized {
        Specialized {
            name: name.into(),
            bound,
            parameters,
            results,
            specializer,
            cache: Mutex::new(Lru::new(DEFAULT_SPECIALIZATION_CAPACITY)),
        }
    }

    /// The body for the bound parameters' `values` (in [`Specialized::bound`] order), from
    /// the cache or specialised now, checked against the declared signature.
    ///
    /// # Errors
    /// The specializer's message, or a signature mismatch (a carried value whose shape
    /// would change), naming the body.
    pub fn function_for(&self, values: &[TensorData]) -> Result<Function, String> {
        let key = specialization_key(values);
        if let Some(f) = self
            .cache
            .lock()
            .ok()
            .and_then(|mut c| c.get(&key).cloned())
        {
            return Ok(f);
        }
        let f = self.specializer.specialize(values)?;
        let shown: Vec<String> = values.iter().map(short_values).collect();
        check_signature(&f, &self.parameters, &self.results).map_err(|e| {
            format!(
                "body `{}` specialised for {}: {e}",
                self.name,
                shown.join(", ")
            )
        })?;
        if let Ok(mut c) = self.cache.lock() {
            c.insert(key, f.clone());
        }
        Ok(f)
    }

    /// This body caching at most `entries` specialisations, least recently used evicted
    /// first (`0`: none kept, each lookup specialises anew); each backend's cache of their
    /// compilations holds as many.
    pub fn with_capacity(self, entries: usize) -> Specialized {
        Specialized {
            cache: Mutex::new(Lru::new(entries)),
            ..self
        }
    }

    /// The most specialisations this body (and each backend, for it) caches.
    pub fn capacity(&self) -> usize {
        let cache = self.cache.lock();
        cache
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .capacity()
    }

    /// Number of specialisations cached now.
    pub fn cached(&self) -> usize {
        self.cache.lock().map(|c| c.len()).unwrap_or(0)
    }
}

/// The cache key of bound values: each tensor's element type and element bits.
pub fn specialization_key(values: &[TensorData]) -> Vec<u64> {
    let mut key = Vec::new();
    for v in values {
        key.push(v.element_type() as u64);
        key.push(v.len() as u64);
        match v {
            TensorData::I64(d) => key.extend(d.iter().map(|&x| x as u64)),
            TensorData::U64(d) => key.extend(d.iter().copied()),
            _ => key.extend((0..v.len()).map(|i| v.get_f64(i).unwrap_or(0.0).to_bits())),
        }
    }
    key
}

fn short_values(v: &TensorData) -> String {
    let n = v.len().min(4);
    let vals: Vec<String> = (0..n)
        .map(|i| v.get_f64(i).map_or("?".into(), |x| x.to_string()))
        .collect();
    format!(
        "[{}{}]",
        vals.join(", "),
        if v.len() > n { ", .." } else { "" }
    )
}

impl ControlFlow {
    /// The ONNX op name: `If`, `Loop` or `Scan`.
    pub fn type_name(&self) -> &'static str {
        match self {
            ControlFlow::If(_) => "If",
            ControlFlow::Loop(_) => "Loop",
            ControlFlow::Scan(_) => "Scan",
        }
    }

    /// The static bodies, named (`then`, `else`, `body`); a specialised body is not listed.
    pub fn bodies(&self) -> Vec<(&'static str, &Function)> {
        match self {
            ControlFlow::If(i) => vec![("then", &i.then_branch), ("else", &i.else_branch)],
            ControlFlow::Loop(l) => match &l.body {
                Body::Static(f) => vec![("body", f)],
                Body::Specialized(_) => Vec::new(),
            },
            ControlFlow::Scan(s) => vec![("body", &s.body)],
        }
    }

    /// The output types for operands of types `inputs` (see the module docs), checking
    /// every body against them.
    ///
    /// # Errors
    /// A message naming what disagrees: an operand, a body's parameter or result count or
    /// type, a loop-carried value that changes type or shape, branches that disagree.
    pub fn infer(&self, inputs: &[TensorType]) -> Result<Vec<TensorType>, String> {
        match self {
            ControlFlow::If(i) => infer_if(i, inputs),
            ControlFlow::Loop(l) => infer_loop(l, inputs),
            ControlFlow::Scan(s) => infer_scan(s, inputs),
        }
    }
}

impl fmt::Display for ControlFlow {
    /// `If<then=`a`, else=`b`>`, `Loop<carried=2, scan_outputs=1, length=5, body=`b`>`,
    /// `Scan<state=1, scan_inputs=1, body=`b`>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlFlow::If(i) => write!(
                f,
                "If<then=`{}`, else=`{}`>",
                i.then_branch.name(),
                i.else_branch.name()
            ),
            ControlFlow::Loop(l) => {
                write!(
                    f,
                    "Loop<carried={}, scan_outputs={}",
                    l.carried, l.scan_outputs
                )?;
                if let Some(n) = l.scan_length {
                    write!(f, ", length={n}")?;
                }
                match &l.body {
                    Body::Static(b) => write!(f, ", body=`{}`>", b.name()),
                    Body::Specialized(s) => write!(
                        f,
                        ", body=`{}` specialised on parameters {:?}>",
                        s.name, s.bound
                    ),
                }
            }
            ControlFlow::Scan(s) => write!(
                f,
                "Scan<state={}, scan_inputs={}, input_axes={:?}, input_reverse={:?}, \
                 output_axes={:?}, output_reverse={:?}, body=`{}`>",
                s.state,
                s.scan_inputs,
                s.input_axes,
                s.input_reverse,
                s.output_axes,
                s.output_reverse,
                s.body.name()
            ),
        }
    }
}

fn one_element(t: &TensorType, et: ElementType, what: &str) -> Result<(), String> {
    if t.element_type != et || t.shape.element_count().ok() != Some(1) {
        return Err(format!("{what} must be one {et} element, is {t}"));
    }
    Ok(())
}

/// Parameter and result types of a body.
fn signature(f: &Function) -> (Vec<TensorType>, Vec<TensorType>) {
    (f.parameter_types(), f.result_types())
}

/// Checks that `f` has exactly these parameter and result types.
fn check_signature(
    f: &Function,
    params: &[TensorType],
    results: &[TensorType],
) -> Result<(), String> {
    let (p, r) = signature(f);
    if p.len() != params.len() {
        return Err(format!(
            "has {} parameters, needs {}",
            p.len(),
            params.len()
        ));
    }
    if r.len() != results.len() {
        return Err(format!("has {} results, needs {}", r.len(), results.len()));
    }
    for (k, (a, b)) in p.iter().zip(params).enumerate() {
        if a != b {
            return Err(format!("parameter {k} is {a}, needs {b}"));
        }
    }
    for (k, (a, b)) in r.iter().zip(results).enumerate() {
        if a != b {
            return Err(format!(
                "result {k} is {a}, needs {b} (a loop-carried value must keep its type and shape)"
            ));
        }
    }
    Ok(())
}

fn infer_if(i: &If, inputs: &[TensorType]) -> Result<Vec<TensorType>, String> {
    let Some(cond) = inputs.first() else {
        return Err("If needs a condition operand".into());
    };
    one_element(cond, ElementType::Bool, "the condition")?;
    let captured = &inputs[1..];
    let (tp, tr) = signature(&i.then_branch);
    let (ep, er) = signature(&i.else_branch);
    for (what, p) in [("then", &tp), ("else", &ep)] {
        if p.as_slice() != captured {
            return Err(format!(
                "the {what} branch takes {} parameter(s) {}, the operands after the \
                 condition are {} {}",
                p.len(),
                types(p),
                captured.len(),
                types(captured)
            ));
        }
    }
    if tr.len() != er.len() {
        return Err(format!(
            "the branches disagree: then has {} result(s), else {}",
            tr.len(),
            er.len()
        ));
    }
    for (k, (a, b)) in tr.iter().zip(&er).enumerate() {
        if a != b {
            return Err(format!(
                "the branches disagree on output {k}: then gives {a}, else {b}"
            ));
        }
    }
    if tr.is_empty() {
        return Err("If must have at least one output".into());
    }
    Ok(tr)
}

fn infer_loop(l: &Loop, inputs: &[TensorType]) -> Result<Vec<TensorType>, String> {
    let (params, results) = match &l.body {
        Body::Static(f) => signature(f),
        Body::Specialized(s) => (s.parameters.clone(), s.results.clone()),
    };
    if inputs.len() < 2 + l.carried {
        return Err(format!(
            "Loop needs the trip count, the condition and {} carried value(s), has {} operand(s)",
            l.carried,
            inputs.len()
        ));
    }
    one_element(&inputs[0], ElementType::I64, "the trip count")?;
    one_element(&inputs[1], ElementType::Bool, "the condition")?;
    if params.len() != inputs.len() {
        return Err(format!(
            "the body has {} parameter(s), needs {} (iteration number, condition, {} carried, \
             {} captured)",
            params.len(),
            inputs.len(),
            l.carried,
            inputs.len() - 2 - l.carried
        ));
    }
    one_element(&params[0], ElementType::I64, "the body's iteration number")?;
    one_element(&params[1], ElementType::Bool, "the body's condition")?;
    for k in 2..inputs.len() {
        if params[k] != inputs[k] {
            let what = if k < 2 + l.carried {
                format!("carried value {}", k - 2)
            } else {
                format!("captured value {}", k - 2 - l.carried)
            };
            return Err(format!(
                "{what} is {}, the body's parameter {k} is {}",
                inputs[k], params[k]
            ));
        }
    }
    if results.len() != 1 + l.carried + l.scan_outputs {
        return Err(format!(
            "the body has {} result(s), needs {} (condition, {} carried, {} scan output(s))",
            results.len(),
            1 + l.carried + l.scan_outputs,
            l.carried,
            l.scan_outputs
        ));
    }
    one_element(
        &results[0],
        ElementType::Bool,
        "the body's condition result",
    )?;
    let mut out = Vec::with_capacity(l.carried + l.scan_outputs);
    for k in 0..l.carried {
        let (init, next) = (&inputs[2 + k], &results[1 + k]);
        if init != next {
            return Err(format!(
                "loop-carried value {k} changes from {init} to {next} in an iteration (it \
                 must keep its element type and shape)"
            ));
        }
        out.push(init.clone());
    }
    if l.scan_outputs > 0 {
        let Some(n) = l.scan_length else {
            return Err(
                "scan outputs need a static iteration count (a constant trip count and a \
                 constant-true or absent condition)"
                    .into(),
            );
        };
        for r in &results[1 + l.carried..] {
            let mut dims = vec![n];
            dims.extend_from_slice(r.shape.dims());
            out.push(TensorType::new(r.element_type, Shape::new(dims)));
        }
    }
    Ok(out)
}

fn infer_scan(s: &Scan, inputs: &[TensorType]) -> Result<Vec<TensorType>, String> {
    let (params, results) = signature(&s.body);
    let (n, m) = (s.state, s.scan_inputs);
    if inputs.len() < n + m || m == 0 {
        return Err(format!(
            "Scan needs {n} state value(s) and {m} (at least one) scan input(s), has {} operand(s)",
            inputs.len()
        ));
    }
    if s.input_axes.len() != m || s.input_reverse.len() != m {
        return Err(format!(
            "needs an axis and a direction for each of {m} scan inputs"
        ));
    }
    let k_out = results.len().saturating_sub(n);
    if s.output_axes.len() != k_out || s.output_reverse.len() != k_out {
        return Err(format!(
            "needs an axis and a direction for each of {k_out} scan outputs"
        ));
    }
    if params.len() != inputs.len() {
        return Err(format!(
            "the body has {} parameter(s), needs {} ({n} state, {m} scan, {} captured)",
            params.len(),
            inputs.len(),
            inputs.len() - n - m
        ));
    }
    let mut length = None;
    for k in 0..m {
        let t = &inputs[n + k];
        let axis = s.input_axes[k];
        let Some(&len) = t.shape.dims().get(axis) else {
            return Err(format!("scan input {k} ({t}) has no axis {axis}"));
        };
        if *length.get_or_insert(len) != len {
            return Err(format!(
                "scan input {k} ({t}) has {len} slices along axis {axis}, scan input 0 has {}",
                length.unwrap_or(0)
            ));
        }
        let mut dims = t.shape.dims().to_vec();
        dims.remove(axis);
        let slice = TensorType::new(t.element_type, Shape::new(dims));
        if params[n + k] != slice {
            return Err(format!(
                "the body's parameter {} is {}, scan input {k}'s slice is {slice}",
                n + k,
                params[n + k]
            ));
        }
    }
    for k in (0..n).chain(n + m..inputs.len()) {
        if params[k] != inputs[k] {
            return Err(format!(
                "operand {k} is {}, the body's parameter {k} is {}",
                inputs[k], params[k]
            ));
        }
    }
    if results.len() < n {
        return Err(format!(
            "the body has {} result(s), fewer than the {n} state values",
            results.len()
        ));
    }
    let mut out = Vec::with_capacity(results.len());
    for k in 0..n {
        if results[k] != inputs[k] {
            return Err(format!(
                "state value {k} changes from {} to {} in an iteration (it must keep its \
                 element type and shape)",
                inputs[k], results[k]
            ));
        }
        out.push(inputs[k].clone());
    }
    let len = length.unwrap_or(0);
    for (k, r) in results[n..].iter().enumerate() {
        let axis = s.output_axes[k];
        if axis > r.shape.rank() {
            return Err(format!(
                "scan output {k} axis {axis} is out of range for slices {r}"
            ));
        }
        let mut dims = r.shape.dims().to_vec();
        dims.insert(axis, len);
        out.push(TensorType::new(r.element_type, Shape::new(dims)));
    }
    Ok(out)
}

fn types(t: &[TensorType]) -> String {
    let v: Vec<String> = t.iter().map(ToString::to_string).collect();
    format!("({})", v.join(", "))
}
