//! Running control flow ([`graphlift_ir::control_flow`]): one executor step that picks an
//! `If` branch or iterates a `Loop` or `Scan` body, shared by every backend. A backend says
//! how a body runs through [`Bodies`]: the INTERPRETER interprets the body Functions
//! ([`ReferenceBodies`], what [`crate::reference::evaluate_node`] uses), a compiling backend
//! compiles each static body once into an [`Executable`] and each specialisation of a
//! specialised body once, into a bounded cache ([`CompiledBodies`]), so each iteration is
//! one call of a compiled body.
//!
//! The iteration itself (the semantics) lives once, in [`execute`]:
//!
//! - `If`: the first element of `cond` picks the branch, which runs on the captured values.
//! - `Loop` (ONNX): `i = 0`; while `i < M` and `cond`: run the body on `(i, cond, carried..,
//!   captured..)`, take its condition and carried values, append its scan outputs; `i += 1`.
//!   Outputs: the last carried values (the initial ones if no iteration ran), then each scan
//!   output stacked on a new axis 0. A body specialised per iteration
//!   ([`graphlift_ir::control_flow::Body::Specialized`]) is looked up for the values of its
//!   bound parameters before each iteration.
//! - `Scan` (opset 9 on): for `t` in `0..len`, each scan input's slice `t` along its axis
//!   (`len - 1 - t` when reversed) is handed to the body with the state; the body's scan
//!   results are stacked along each output's axis (filled from the end when reversed).

use std::sync::{Arc, Mutex};

use graphlift_ir::control_flow::{Body, Loop, Scan, Specialized};
use graphlift_ir::{ControlFlow, Function, Lru, Node, Shape, SliceAxis, TensorData, TensorType};

use crate::reference::{concat, evaluate_function, slice};
use crate::{Executable, RuntimeError, Tensor};

/// How a backend runs the bodies of one control-flow node.
pub trait Bodies {
    /// Runs static body `k` ([`ControlFlow::bodies`] order: `then`/`body` is 0, `else` 1).
    ///
    /// # Errors
    /// The body's execution error.
    fn run_static(&self, k: usize, inputs: &[Tensor]) -> Result<Vec<Tensor>, RuntimeError>;

    /// Runs the specialisation of `body` for the bound parameters' `values`.
    ///
    /// # Errors
    /// A specialisation that fails or does not fit (as a message), or the body's execution
    /// error.
    fn run_specialized(
        &self,
        body: &Specialized,
        values: &[TensorData],
        inputs: &[Tensor],
    ) -> Result<Vec<Tensor>, RuntimeError>;
}

/// The INTERPRETER's bodies: each runs through [`evaluate_function`] (specialised bodies
/// from the op's own cache of specialised Functions).
pub struct ReferenceBodies<'a>(pub &'a ControlFlow);

impl Bodies for ReferenceBodies<'_> {
    fn run_static(&self, k: usize, inputs: &[Tensor]) -> Result<Vec<Tensor>, RuntimeError> {
        let bodies = self.0.bodies();
        let (_, f) = bodies.get(k).ok_or_else(|| RuntimeError::Compile {
            function: "control flow".into(),
            message: format!("no body {k}"),
        })?;
        evaluate_function(f, inputs)
    }

    fn run_specialized(
        &self,
        body: &Specialized,
        values: &[TensorData],
        inputs: &[Tensor],
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let f = body
            .function_for(values)
            .map_err(|message| RuntimeError::Compile {
                function: body.name.clone(),
                message,
            })?;
        evaluate_function(&f, inputs)
    }
}

/// A compile function: a backend's [`crate::Backend::compile`].
pub type CompileFn =
    Arc<dyn Fn(&Function) -> Result<Arc<dyn Executable>, RuntimeError> + Send + Sync>;

/// The bodies of one control-flow node compiled by a backend: each static body once (when
/// made), each specialisation of a specialised body once, kept in a least-recently-used
/// cache keyed by the bound values, of as many entries as the body caches specialisations
/// ([`Specialized::capacity`], by default
/// [`graphlift_ir::control_flow::DEFAULT_SPECIALIZATION_CAPACITY`]: the body owns the
/// setting).
pub struct CompiledBodies {
    statics: Vec<Arc<dyn Executable>>,
    /// Compiles a specialisation.
    compile: CompileFn,
    specialized: Mutex<Lru<Arc<dyn Executable>>>,
}

impl std::fmt::Debug for CompiledBodies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledBodies")
            .field("statics", &self.statics.len())
            .field("specializations", &self.specializations())
            .finish()
    }
}

impl CompiledBodies {
    /// Compiles every static body of `cf` with `compile`; specialisations will compile with
    /// `specialize` (a backend may set them up differently: each runs once per call of a
    /// loop, a static body once per iteration).
    ///
    /// # Errors
    /// The first body's compile error.
    pub fn new(
        cf: &ControlFlow,
        compile: &CompileFn,
        specialize: CompileFn,
    ) -> Result<CompiledBodies, RuntimeError> {
        let statics = cf
            .bodies()
            .into_iter()
            .map(|(_, f)| compile(f))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(CompiledBodies {
            statics,
            compile: specialize,
            specialized: Mutex::new(Lru::new(specialization_capacity(cf))),
        })
    }

    /// The most compiled specialisations cached ([`Specialized::capacity`] of the node's
    /// specialised body; 0 for a node without one).
    pub fn capacity(&self) -> usize {
        self.specialized.lock().map(|c| c.capacity()).unwrap_or(0)
    }

    /// The compiled static bodies ([`ControlFlow::bodies`] order).
    pub fn statics(&self) -> &[Arc<dyn Executable>] {
        &self.statics
    }

    /// Number of compiled specialisations cached.
    pub fn specializations(&self) -> usize {
        self.specialized.lock().map(|c| c.len()).unwrap_or(0)
    }
}

/// The capacity of `cf`'s specialised body (only a `Loop` has one), else 0: nothing to cache.
fn specialization_capacity(cf: &ControlFlow) -> usize {
    match cf {
        ControlFlow::Loop(Loop {
            body: Body::Specialized(s),
            ..
        }) => s.capacity(),
        _ => 0,
    }
}

impl Bodies for CompiledBodies {
    fn run_static(&self, k: usize, inputs: &[Tensor]) -> Result<Vec<Tensor>, RuntimeError> {
        let exe = self.statics.get(k).ok_or_else(|| RuntimeError::Compile {
            function: "control flow".into(),
            message: format!("no body {k}"),
        })?;
        crate::trace::untraced(|| exe.run(inputs))
    }

    fn run_specialized(
        &self,
        body: &Specialized,
        values: &[TensorData],
        inputs: &[Tensor],
    ) -> Result<Vec<Tensor>, RuntimeError> {
        let key = graphlift_ir::control_flow::specialization_key(values);
        let cached = self
            .specialized
            .lock()
            .ok()
            .and_then(|mut c| c.get(&key).cloned());
        let exe = match cached {
            Some(e) => e,
            None => {
                let f = body
                    .function_for(values)
                    .map_err(|message| RuntimeError::Compile {
                        function: body.name.clone(),
                        message,
                    })?;
                let e = crate::trace::untraced(|| (self.compile)(&f))?;
                if let Ok(mut c) = self.specialized.lock() {
                    c.insert(key, Arc::clone(&e));
                }
                e
            }
        };
        crate::trace::untraced(|| exe.run(inputs))
    }
}

/// Runs control-flow `node` (whose op is `cf`) on `inputs` with `bodies`.
///
/// # Errors
/// [`RuntimeError::Execution`] naming the node: a body that fails (its error in the
/// message), a specialisation that does not fit, scan outputs whose length differs from the
/// static one.
pub fn execute(
    cf: &ControlFlow,
    node: &Node,
    inputs: &[&Tensor],
    bodies: &dyn Bodies,
) -> Result<Vec<Tensor>, RuntimeError> {
    let fail = |message: String| RuntimeError::Execution {
        node: node.name().to_string(),
        op: cf.type_name().to_string(),
        provenance: node.tags().iter().collect::<Vec<_>>().join(", "),
        message,
    };
    let wrap = |e: RuntimeError| match e {
        e @ RuntimeError::Execution { .. } => fail(format!("in the body: {e}")),
        other => fail(other.to_string()),
    };
    match cf {
        ControlFlow::If(_) => {
            let cond =
                first_bool(inputs.first().copied()).ok_or_else(|| fail("no condition".into()))?;
            let captured: Vec<Tensor> = inputs[1..].iter().map(|&t| t.clone()).collect();
            bodies
                .run_static(usize::from(!cond), &captured)
                .map_err(wrap)
        }
        ControlFlow::Loop(l) => run_loop(l, node, inputs, bodies, &fail, &wrap),
        ControlFlow::Scan(s) => run_scan(s, node, inputs, bodies, &fail, &wrap),
    }
}

fn first_bool(t: Option<&Tensor>) -> Option<bool> {
    t?.data().get_f64(0).map(|x| x != 0.0)
}

fn first_i64(t: &Tensor) -> Option<i64> {
    match t.data() {
        TensorData::I64(d) => d.first().copied(),
        d => d.get_f64(0).map(|x| x as i64),
    }
}

fn run_loop(
    l: &Loop,
    node: &Node,
    inputs: &[&Tensor],
    bodies: &dyn Bodies,
    fail: &dyn Fn(String) -> RuntimeError,
    wrap: &dyn Fn(RuntimeError) -> RuntimeError,
) -> Result<Vec<Tensor>, RuntimeError> {
    let c = l.carried;
    if inputs.len() < 2 + c {
        return Err(fail(format!(
            "{} operands for {c} carried values",
            inputs.len()
        )));
    }
    let trip = first_i64(inputs[0]).ok_or_else(|| fail("no trip count".into()))?;
    let mut cond = first_bool(Some(inputs[1])).ok_or_else(|| fail("no condition".into()))?;
    let (iter_shape, cond_shape) = match &l.body {
        Body::Static(f) => {
            let p = f.parameter_types();
            (shape_of(&p, 0), shape_of(&p, 1))
        }
        Body::Specialized(s) => (shape_of(&s.parameters, 0), shape_of(&s.parameters, 1)),
    };
    // The body's operands, owned once: [iteration, condition, carried.., captured..]; the
    // carried values are moved in from each iteration's results, never copied.
    let mut state: Vec<Tensor> = Vec::with_capacity(inputs.len());
    state.push(Tensor::from_data(
        TensorData::I64(vec![0]),
        iter_shape.clone(),
    )?);
    state.push(Tensor::from_data(
        TensorData::Bool(vec![cond]),
        cond_shape.clone(),
    )?);
    state.extend(inputs[2..].iter().map(|&t| t.clone()));
    let mut scans: Vec<Vec<Tensor>> = vec![Vec::new(); l.scan_outputs];
    let mut i: i64 = 0;
    while i < trip && cond {
        state[0] = Tensor::from_data(TensorData::I64(vec![i]), iter_shape.clone())?;
        state[1] = Tensor::from_data(TensorData::Bool(vec![cond]), cond_shape.clone())?;
        let outs = match &l.body {
            Body::Static(_) => bodies.run_static(0, &state),
            Body::Specialized(s) => {
                let values: Vec<TensorData> =
                    s.bound.iter().map(|&k| state[k].data().clone()).collect();
                bodies.run_specialized(s, &values, &state)
            }
        }
        .map_err(wrap)
        .map_err(|e| match e {
            RuntimeError::Execution {
                node,
                op,
                provenance,
                message,
            } => RuntimeError::Execution {
                node,
                op,
                provenance,
                message: format!("iteration {i}: {message}"),
            },
            other => other,
        })?;
        if outs.len() != 1 + c + l.scan_outputs {
            return Err(fail(format!(
                "iteration {i}: the body gave {} results, needs {}",
                outs.len(),
                1 + c + l.scan_outputs
            )));
        }
        let mut outs = outs.into_iter();
        cond = first_bool(outs.next().as_ref()).ok_or_else(|| fail("no condition".into()))?;
        for k in 0..c {
            if let Some(t) = outs.next() {
                state[2 + k] = t;
            }
        }
        for s in &mut scans {
            if let Some(t) = outs.next() {
                s.push(t);
            }
        }
        i += 1;
    }
    let mut out: Vec<Tensor> = state.drain(2..2 + c).collect();
    if l.scan_outputs > 0 {
        let n = l.scan_length.unwrap_or(0);
        if usize::try_from(i).ok() != Some(n) {
            return Err(fail(format!(
                "ran {i} iterations; its scan outputs were given the static length {n} (the \
                 trip count), and graphlift's executables have static shapes"
            )));
        }
        for (k, parts) in scans.into_iter().enumerate() {
            let t = node
                .outputs()
                .get(c + k)
                .ok_or_else(|| fail(format!("no output {}", c + k)))?;
            out.push(stack(&parts, 0, false, t).map_err(fail)?);
        }
    }
    Ok(out)
}

fn shape_of(types: &[TensorType], k: usize) -> Shape {
    types.get(k).map_or_else(Shape::scalar, |t| t.shape.clone())
}

/// Stacks `parts` (equal types) along a new axis `axis` into a tensor of type `t`, the
/// last part first when `reverse`.
fn stack(parts: &[Tensor], axis: usize, reverse: bool, t: &TensorType) -> Result<Tensor, String> {
    if parts.is_empty() {
        return Tensor::zeros(t.element_type, t.shape.clone()).map_err(|e| e.to_string());
    }
    let shapes: Vec<Shape> = parts
        .iter()
        .map(|p| {
            let mut d = p.shape().dims().to_vec();
            d.insert(axis, 1);
            Shape::new(d)
        })
        .collect();
    let mut refs: Vec<(&TensorData, &Shape)> =
        parts.iter().map(Tensor::data).zip(shapes.iter()).collect();
    if reverse {
        refs.reverse();
    }
    let data = concat(&refs, axis)?;
    Tensor::from_data(data, t.shape.clone()).map_err(|e| e.to_string())
}

fn run_scan(
    s: &Scan,
    node: &Node,
    inputs: &[&Tensor],
    bodies: &dyn Bodies,
    fail: &dyn Fn(String) -> RuntimeError,
    wrap: &dyn Fn(RuntimeError) -> RuntimeError,
) -> Result<Vec<Tensor>, RuntimeError> {
    let (n, m) = (s.state, s.scan_inputs);
    if inputs.len() < n + m || m == 0 {
        return Err(fail(format!("{} operands", inputs.len())));
    }
    let len = inputs[n]
        .shape()
        .dims()
        .get(s.input_axes[0])
        .copied()
        .unwrap_or(0);
    let mut state: Vec<Tensor> = inputs.iter().map(|&t| t.clone()).collect();
    let k_out = node.outputs().len() - n;
    let mut scans: Vec<Vec<Tensor>> = vec![Vec::new(); k_out];
    for t in 0..len {
        for k in 0..m {
            let x = inputs[n + k];
            let axis = s.input_axes[k];
            let at = if s.input_reverse[k] { len - 1 - t } else { t };
            let axes: Vec<SliceAxis> = x
                .shape()
                .dims()
                .iter()
                .enumerate()
                .map(|(a, &d)| {
                    if a == axis {
                        SliceAxis {
                            start: at,
                            step: 1,
                            len: 1,
                        }
                    } else {
                        SliceAxis {
                            start: 0,
                            step: 1,
                            len: d,
                        }
                    }
                })
                .collect();
            let data = slice(x.data(), x.shape(), &axes).map_err(fail)?;
            let mut dims = x.shape().dims().to_vec();
            dims.remove(axis);
            state[n + k] = Tensor::from_data(data, Shape::new(dims))?;
        }
        let outs = bodies.run_static(0, &state).map_err(wrap)?;
        if outs.len() != n + k_out {
            return Err(fail(format!(
                "the body gave {} results, needs {}",
                outs.len(),
                n + k_out
            )));
        }
        let mut outs = outs.into_iter();
        for (slot, v) in state.iter_mut().take(n).zip(outs.by_ref()) {
            *slot = v;
        }
        for sc in &mut scans {
            if let Some(v) = outs.next() {
                sc.push(v);
            }
        }
    }
    let mut out: Vec<Tensor> = state.drain(..n).collect();
    for (k, parts) in scans.into_iter().enumerate() {
        let t = &node.outputs()[n + k];
        out.push(stack(&parts, s.output_axes[k], s.output_reverse[k], t).map_err(fail)?);
    }
    Ok(out)
}
