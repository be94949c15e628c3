//! Reverse-mode differentiation as a graph transformation (Nervana Graph's `deriv`): the
//! derivative is another subgraph of the function being built, compiled like any other, so
//! the backward pass gets the same fusion, code generation and provenance as the forward.
//!
//! The nodes on a path from a value asked for to the scalar `c` are visited in reverse
//! topological order; each one's adjoint (the sum of its users' contributions) is passed to
//! those of its inputs on such a path by the op's rule (`builder/adjoint.rs`), so nothing is
//! built for constants (a model's weights) that no derivative asked for needs. Every backward node carries the tags of the forward node it
//! differentiates as `deriv:<tag>`, and the pass history `autodiff`.

use std::collections::{HashMap, HashSet};

use super::{FunctionBuilder, Value};
use crate::{Function, IrError, NodeId, Op, Output, ReduceOp, Reduction, UnaryOp};

/// The pass name recorded on every node the derivative adds.
pub const AUTODIFF: &str = "autodiff";

impl FunctionBuilder {
    /// The derivative of the float scalar `c` with respect to `wrt` (a parameter, a
    /// variable, a constant or an intermediate value upstream of `c`): a value of `wrt`'s
    /// type whose elements are `dc/dwrt` (Nervana Graph's `deriv`). Nothing is computed: the
    /// derivative is a subgraph of the function being built. A value that does not reach `c`
    /// has a zero derivative.
    ///
    /// ```
    /// use graphlift_ir::{ElementType::F64, FunctionBuilder, Op, ReduceOp, Reduction};
    /// let b = FunctionBuilder::new("grad");
    /// let x = b.parameter("x", F64, [3]);
    /// let sum = Reduction { op: ReduceOp::Sum, axes: vec![0], keep_dims: false };
    /// let c = b.op(Op::Reduce(sum), &[x * x]); // c = sum(x^2)
    /// let dx = b.deriv(c, x); // 2x
    /// let f = b.finish(&[dx]).unwrap();
    /// assert!(f.nodes().any(|n| n.pass_history().iter().any(|p| p == "autodiff")));
    /// ```
    ///
    /// # Errors (recorded, returned by `finish`)
    /// [`IrError::Derivative`] naming `c` when it is not a float scalar (rank 0), when `wrt`
    /// is not a float value, or when a node between them has no adjoint (naming its op).
    #[track_caller]
    pub fn deriv<'b>(&'b self, c: Value<'b>, wrt: Value<'b>) -> Value<'b> {
        self.gradients(c, &[wrt])
            .pop()
            .unwrap_or_else(|| self.value(None))
    }

    /// The derivatives of `c` with respect to each of `wrt`, from one backward pass (see
    /// [`FunctionBuilder::deriv`]).
    ///
    /// # Errors (recorded, returned by `finish`)
    /// As [`FunctionBuilder::deriv`].
    #[track_caller]
    pub fn gradients<'b>(&'b self, c: Value<'b>, wrt: &[Value<'b>]) -> Vec<Value<'b>> {
        let poisoned = || wrt.iter().map(|_| self.value(None)).collect();
        if !self.check_owned(&"deriv", &[c]) || !self.check_owned(&"deriv", wrt) {
            return poisoned();
        }
        let targets: Option<Vec<Output>> = wrt.iter().map(|v| v.output).collect();
        let (Some(c), Some(targets)) = (c.output, targets) else {
            return poisoned();
        };
        match self.backward(c, &targets) {
            Ok(grads) => grads,
            Err(e) => {
                self.record::<()>(Err(e));
                poisoned()
            }
        }
    }

    /// The value at output `o` of the function being built (for a function taken over with
    /// [`FunctionBuilder::from_function`]); an `o` it does not have makes the ops that use
    /// the value fail with [`IrError::Dangling`].
    pub fn value_of(&self, o: Output) -> Value<'_> {
        Value {
            builder: self,
            generation: self.generation.get(),
            output: Some(o),
        }
    }

    fn backward<'b>(&'b self, c: Output, targets: &[Output]) -> Result<Vec<Value<'b>>, IrError> {
        let (order, c_name) = {
            let f = self.function.borrow();
            let c_node = f.node(c.node)?;
            let name = c_node.name().to_string();
            let t = f.output_type(c)?;
            if !t.element_type.is_float() || t.shape.rank() != 0 {
                return Err(derivative(
                    &name,
                    format!("differentiates a float scalar, `{name}` is {t}"),
                ));
            }
            for &w in targets {
                let t = f.output_type(w)?;
                if !t.element_type.is_float() {
                    let n = f.node(w.node)?.name();
                    return Err(derivative(
                        &name,
                        format!("`{n}` is {t}: only float values have a derivative"),
                    ));
                }
            }
            (between(&f, c, targets)?, name)
        };
        let mut adjoints: HashMap<Output, Value<'b>> = HashMap::new();
        adjoints.insert(c, self.value_of(c).scalar_like(1.0));
        let mut done: HashMap<Output, Value<'b>> = HashMap::new();
        let pass = Pass {
            targets,
            of: &c_name,
            on_path: order.iter().copied().collect(),
        };
        self.propagate(&pass, &order, &mut adjoints, &mut done)?;
        Ok(targets
            .iter()
            .map(|&w| match done.get(&w) {
                Some(&g) => g,
                None => {
                    let v = self.value_of(w);
                    let shape = v.tensor_type().map_or_else(crate::Shape::scalar, |t| t.1);
                    v.scalar_like(0.0).broadcast_to(shape)
                }
            })
            .collect())
    }

    /// Passes adjoints back through the nodes of `order` (a topological order, walked in
    /// reverse): each node's output adjoints are taken from `adjoints` (and kept in `done`),
    /// and the contributions of its adjoint rule are added to its inputs' entries. Adjoints
    /// of values outside `order` stay in `adjoints`.
    fn propagate<'b>(
        &'b self,
        pass: &Pass<'_>,
        order: &[NodeId],
        adjoints: &mut HashMap<Output, Value<'b>>,
        done: &mut HashMap<Output, Value<'b>>,
    ) -> Result<(), IrError> {
        for &id in order.iter().rev() {
            let (op, inputs, tags, outputs) = {
                let f = self.function.borrow();
                let n = f.node(id)?;
                let tags: Vec<String> = n.tags().iter().map(|t| format!("deriv:{t}")).collect();
                (n.op().clone(), n.inputs().to_vec(), tags, n.outputs().len())
            };
            let gs: Vec<Option<Value<'b>>> = (0..outputs)
                .map(|i| adjoints.remove(&Output::new(id, i)))
                .collect();
            if gs.iter().all(Option::is_none) {
                continue;
            }
            for (i, g) in gs.iter().enumerate() {
                if let Some(g) = g {
                    done.insert(Output::new(id, i), *g);
                }
            }
            let first = self.function.borrow().arena_len();
            let ins: Vec<Value<'b>> = inputs.iter().map(|&o| self.value_of(o)).collect();
            let (inputs, contributions) = match (&op, self.log_of_softmax(id, pass.targets)) {
                // A stable form: d log(softmax(x)) / dx without dividing by the softmax.
                (_, Some((softmax, x, axis))) => {
                    let g = gs[0].unwrap_or_else(|| self.value(None));
                    let s = self.value_of(softmax);
                    let total = self.op(Op::Reduce(sum_keeping(axis)), &[g]);
                    let shape = s.tensor_type().map_or_else(crate::Shape::scalar, |t| t.1);
                    (vec![x], vec![Some(g - s * total.broadcast_to(shape))])
                }
                (Op::FusedKernel(k), None) => {
                    (inputs, self.fused_adjoint(pass, &k.body, &ins, &gs)?)
                }
                (Op::Recurrent(r), None) => {
                    let body = self.recurrent_body(pass, r, &inputs)?;
                    (inputs, self.fused_adjoint(pass, &body, &ins, &gs)?)
                }
                (Op::ControlFlow(c), None) => {
                    let message = format!(
                        "no adjoint for {} (node `{}`): control flow is not differentiable \
                         in graphlift",
                        c.type_name(),
                        self.function
                            .borrow()
                            .node(id)
                            .map(|n| n.name().to_string())
                            .unwrap_or_default()
                    );
                    return Err(derivative(pass.of, message));
                }
                (_, None) => {
                    let [Some(g)] = gs[..] else {
                        let message = format!("`{op}` has {outputs} outputs and no adjoint");
                        return Err(derivative(pass.of, message));
                    };
                    let wanted: Vec<bool> = inputs
                        .iter()
                        .map(|o| pass.on_path.contains(&o.node))
                        .collect();
                    let c = self
                        .adjoint(&op, &ins, &wanted, self.value_of(Output::from(id)), g)
                        .map_err(|m| derivative(pass.of, m))?;
                    (inputs, c)
                }
            };
            for (&input, contribution) in inputs.iter().zip(contributions) {
                let Some(d) = contribution.filter(|_| pass.on_path.contains(&input.node)) else {
                    continue;
                };
                let total = match adjoints.remove(&input) {
                    Some(sum) => sum + d,
                    None => d,
                };
                adjoints.insert(input, total);
            }
            self.mark_backward(first, &tags);
            if let Some(e) = self.error() {
                return Err(e);
            }
        }
        Ok(())
    }

    /// A fused kernel's adjoint, through its body: the body's nodes are emitted again on the
    /// kernel's inputs (the forward values the rules need are recomputed, and fuse with the
    /// backward pass), and the adjoints of the kernel's outputs pass back through them. An
    /// input that feeds the kernel at several slots gets its whole adjoint at the first.
    fn fused_adjoint<'b>(
        &'b self,
        pass: &Pass<'_>,
        body: &Function,
        x: &[Value<'b>],
        gs: &[Option<Value<'b>>],
    ) -> Result<Vec<Option<Value<'b>>>, IrError> {
        let mut map: HashMap<Output, Output> = HashMap::new();
        for (&p, v) in body.parameters().iter().zip(x) {
            if let Some(o) = v.output {
                map.insert(Output::from(p), o);
            }
        }
        let mut emitted = Vec::new();
        for id in body.topological_order()? {
            let n = body.node(id)?;
            if matches!(n.op(), Op::Parameter | Op::Result) {
                continue;
            }
            let ins = n
                .inputs()
                .iter()
                .map(|o| map.get(o).copied())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    derivative(
                        pass.of,
                        format!(
                            "fused body node `{}` reads an input the kernel does not have",
                            n.name()
                        ),
                    )
                })?;
            let new = self
                .function
                .borrow_mut()
                .import_node_from(body, id, &ins)?;
            for i in 0..n.outputs().len() {
                map.insert(Output::new(id, i), Output::new(new, i));
            }
            emitted.push(new);
        }
        let mut adjoints: HashMap<Output, Value<'b>> = HashMap::new();
        for (&r, g) in body.results().iter().zip(gs) {
            let Some(g) = *g else { continue };
            let Some(&source) = map.get(&body.result_source(r)?) else {
                continue;
            };
            let total = match adjoints.remove(&source) {
                Some(sum) => sum + g,
                None => g,
            };
            adjoints.insert(source, total);
        }
        // Inside the body, every emitted node is on the path, and so is each kernel input
        // the outer pass wants.
        let mut on_path: HashSet<NodeId> = emitted.iter().copied().collect();
        on_path.extend(
            x.iter()
                .filter_map(|v| v.output.map(|o| o.node))
                .filter(|n| pass.on_path.contains(n)),
        );
        let inner = Pass { on_path, ..*pass };
        self.propagate(&inner, &emitted, &mut adjoints, &mut HashMap::new())?;
        Ok(x.iter()
            .map(|v| v.output.and_then(|o| adjoints.remove(&o)))
            .collect())
    }

    /// A recurrent op's unrolled form ([`crate::unroll::decomposition`]), through which its
    /// adjoint passes as a fused kernel's does through its body; its `sequence_lens` must be
    /// a constant.
    fn recurrent_body(
        &self,
        pass: &Pass<'_>,
        r: &crate::RecurrentSequence,
        inputs: &[Output],
    ) -> Result<Function, IrError> {
        let f = self.function.borrow();
        let types = inputs
            .iter()
            .map(|&o| f.output_type(o).cloned())
            .collect::<Result<Vec<_>, _>>()?;
        let lens = inputs.get(4).map(|o| f.node(o.node)).transpose()?;
        let lengths = match lens.map(|n| n.op()) {
            Some(Op::Constant(d)) => (0..d.len())
                .map(|i| d.get_f64(i).map(|v| v as usize))
                .collect::<Option<Vec<usize>>>(),
            _ => None,
        };
        let Some(lengths) = lengths else {
            let message = format!(
                "`{}` has no adjoint with sequence_lens known only at run time (a constant is \
                 needed to unroll it)",
                r.type_name()
            );
            return Err(derivative(pass.of, message));
        };
        crate::unroll::decomposition(r, &types, Some(lengths))
    }

    /// For `Log(Softmax(x))` whose softmax nothing else uses (a cross-entropy's log
    /// probabilities): the softmax's output, `x` and the axis. Its derivative is then
    /// `g - softmax(x) * sum(g)` over the axis: the plain chain rule would divide by the
    /// softmax, infinite where it underflows to 0 (Nervana Graph marked such subgraphs).
    /// Not when the softmax itself is asked for (`targets`): it needs its own adjoint.
    fn log_of_softmax(&self, id: NodeId, targets: &[Output]) -> Option<(Output, Output, usize)> {
        let f = self.function.borrow();
        let log = f.get(id)?;
        if !matches!(log.op(), Op::Unary(UnaryOp::Log)) {
            return None;
        }
        let s = *log.inputs().first()?;
        if targets.contains(&s) {
            return None;
        }
        let softmax = f.get(s.node)?;
        match (softmax.op(), softmax.users(0)) {
            (Op::Softmax(axis), [(user, _)]) if *user == id => {
                Some((s, *softmax.inputs().first()?, *axis))
            }
            _ => None,
        }
    }

    /// Tags every node made since arena index `first` with `tags` and records `autodiff`.
    fn mark_backward(&self, first: usize, tags: &[String]) {
        self.with_function(|f| {
            let made: Vec<_> = f
                .nodes()
                .filter(|n| n.id().index() >= first)
                .map(|n| n.id())
                .collect();
            for id in made {
                for t in tags {
                    f.add_tag(id, t.as_str())?;
                }
                f.record_pass(id, AUTODIFF)?;
            }
            Ok(())
        });
    }
}

/// What one backward pass is for: the values asked for (the stable patterns leave them
/// alone) and the name of the scalar differentiated (for errors).
struct Pass<'a> {
    targets: &'a [Output],
    of: &'a str,
    /// The nodes an adjoint flows through ([`between`]): a rule computes, and a node
    /// receives, contributions only for inputs among them.
    on_path: HashSet<NodeId>,
}

/// The nodes through which an adjoint flows from `c` to `targets`, in topological order:
/// upstream of `c` and downstream of a target (a node elsewhere contributes nothing, and an
/// op without an adjoint there is no error).
fn between(f: &Function, c: Output, targets: &[Output]) -> Result<Vec<NodeId>, IrError> {
    let mut upstream = HashSet::new();
    let mut stack = vec![c.node];
    while let Some(id) = stack.pop() {
        if upstream.insert(id) {
            stack.extend(f.node(id)?.inputs().iter().map(|o| o.node));
        }
    }
    let mut downstream = HashSet::new();
    let mut stack: Vec<NodeId> = targets.iter().map(|o| o.node).collect();
    while let Some(id) = stack.pop() {
        if upstream.contains(&id) && downstream.insert(id) {
            let n = f.node(id)?;
            for i in 0..n.outputs().len() {
                stack.extend(n.users(i).iter().map(|&(user, _)| user));
            }
        }
    }
    Ok(f.topological_order()?
        .into_iter()
        .filter(|id| downstream.contains(id))
        .collect())
}

/// A sum over `axis` keeping it as extent 1.
fn sum_keeping(axis: usize) -> Reduction {
    Reduction {
        op: ReduceOp::Sum,
        axes: vec![axis],
        keep_dims: true,
    }
}

fn derivative(of: &str, message: String) -> IrError {
    IrError::Derivative {
        of: of.to_string(),
        message,
    }
}
