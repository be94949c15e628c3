//! ONNX `If`, `Loop` and `Scan` (opset 9 on): subgraphs imported as sub-Functions of one
//! [`Op::ControlFlow`] node ([`graphlift_ir::control_flow`] gives the operand and body
//! layout).
//!
//! - **Outer-scope values.** A subgraph may read any value of an enclosing graph. Each such
//!   name is resolved in the enclosing importer: a small constant (at most
//!   [`EMBED_LIMIT`] elements: shapes, axes, scalars) is copied into the body as a Constant,
//!   so shape subgraphs over it fold; any other value (weights too: copying them into every
//!   specialisation would cost memory) becomes a body parameter and an extra operand of the
//!   node (*captured*). A captured constant that the body turns out to need as a shape
//!   operand is copied in after all.
//! - **`If` with a constant condition** (the common case in exported models, after shape
//!   folding) imports only the taken branch, inline: its nodes join the enclosing graph and
//!   its outer-scope references are the enclosing graph's values. Otherwise both branches
//!   become sub-Functions of the same captured values and must agree in type and shape.
//! - **`Loop`**: a loop-carried value that the body passes through unchanged (its output is
//!   its input, as exporters do for weights) is captured instead of carried: it is not copied
//!   from one iteration to the next. Absent `M` and `cond` become `i64::MAX` and `true`.
//!   Scan outputs need a static length: a constant `M` and a `cond` constant or absent, and
//!   a body whose condition result is `true` or its condition input; else an error naming
//!   the node says why (graphlift's executables have static shapes).
//! - **Shape operands that change every iteration.** A body that uses its iteration number
//!   or a loop-carried value as a shape operand (`Slice` starts, `Range` bounds) is imported
//!   with that value bound ([`OnnxError::RunTimeOperand`] names it, as it names a graph input
//!   for a top-level graph), giving a body specialised per iteration
//!   ([`graphlift_ir::control_flow::Body::Specialized`]): the node keeps the subgraph and
//!   imports it again for each new value of the bound inputs, through a bounded cache (the
//!   IR module's docs say why this and not run-time-shape ops). The initial values must be
//!   known at import (constants), as the signature comes from that first specialisation.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use graphlift_ir::control_flow::{Body, ControlFlow, If, Loop, Scan, Specialized, Specializer};
use graphlift_ir::{
    CreationSite, ElementType, Function, Op, Output, Shape, TensorData, TensorType,
};
use graphlift_runtime::{reference, Tensor};

use super::importer::Importer;
use super::value_info::declared_dims;
use super::{explain_order, node_ref};
use crate::error::{NodeRef, OnnxError};
use crate::import::unique_name;
use crate::proto::{GraphProto, NodeProto, ValueInfoProto};

/// Outer-scope constants of at most this many elements are copied into a body; larger ones
/// are captured (passed as operands).
pub(crate) const EMBED_LIMIT: usize = 64;

/// How to import one subgraph as a Function.
#[derive(Debug, Clone)]
struct BodySpec {
    /// Formal parameters in order: ONNX name and type.
    params: Vec<(String, TensorType)>,
    /// Captured values, parameters after `params`: ONNX name and type.
    captured: Vec<(String, TensorType)>,
    /// Names bound to constants in the body.
    constants: Vec<(String, Tensor)>,
    /// Values of some parameters (index into `params`): the parameter stays, its name reads
    /// the constant.
    bound: BTreeMap<usize, Tensor>,
    /// The ONNX names of the body's results, in order.
    results: Vec<String>,
}

impl BodySpec {
    /// A spec of these formal parameters and results, capturing and binding nothing yet.
    fn new(params: Vec<(String, TensorType)>, results: Vec<String>) -> BodySpec {
        BodySpec {
            params,
            captured: Vec::new(),
            constants: Vec::new(),
            bound: BTreeMap::new(),
            results,
        }
    }
}

/// The settings a subgraph import shares with its enclosing graph's.
#[derive(Debug, Clone)]
struct Context {
    opset: i64,
    opsets: HashMap<String, i64>,
    source: String,
}

/// Imports `graph` as a closed Function by `spec`.
fn import_body(graph: &GraphProto, spec: &BodySpec, cx: &Context) -> Result<Function, OnnxError> {
    let mut imp = Importer::new(graph, cx.opset, cx.opsets.clone(), &cx.source)?;
    let at = NodeRef::item("subgraph", &graph.name);
    let ir = |e| OnnxError::Ir {
        at: at.clone(),
        source: Box::new(e),
    };
    for (k, (name, t)) in spec.params.iter().chain(&spec.captured).enumerate() {
        let pname = unique_name(&imp.function, &imp.reserved, name);
        let id = imp
            .function
            .add_parameter(pname, t.element_type, t.shape.clone())
            .map_err(ir)?;
        imp.function
            .add_tag(id, format!("onnx:graph_input:{name}"))
            .map_err(ir)?;
        let value = match spec.bound.get(&k) {
            Some(v) => {
                let c = imp
                    .function
                    .add_constant(v.data().clone(), v.shape().clone())
                    .map_err(ir)?;
                let cname = unique_name(&imp.function, &imp.reserved, &format!("{name}/bound"));
                imp.function.set_name(c, cname).map_err(ir)?;
                Output::from(c)
            }
            None => Output::from(id),
        };
        imp.values.insert(name.clone(), value);
    }
    for (name, v) in &spec.constants {
        let c = imp
            .function
            .add_constant(v.data().clone(), v.shape().clone())
            .map_err(ir)?;
        let cname = unique_name(&imp.function, &imp.reserved, name);
        imp.function.set_name(c, cname).map_err(ir)?;
        imp.function
            .add_tag(c, format!("onnx:outer_scope:{name}"))
            .map_err(ir)?;
        imp.values.insert(name.clone(), Output::from(c));
    }
    for (index, node) in graph.node.iter().enumerate() {
        imp.node(index, node)
            .map_err(|e| explain_order(e, graph, index))?;
    }
    for (i, name) in spec.results.iter().enumerate() {
        let at = NodeRef::item("subgraph output", name);
        let v = imp.value(name, &at, i)?;
        let rname = unique_name(&imp.function, &HashSet::new(), name);
        imp.function
            .add_result(v, Some(rname))
            .map_err(|e| OnnxError::Ir {
                at: at.clone(),
                source: Box::new(e),
            })?;
    }
    let mut f = imp.function;
    f.remove_dead_nodes();
    f.validate().map_err(ir)?;
    Ok(f)
}

/// The names a subgraph reads from enclosing graphs, in order of first use (through nested
/// subgraphs too).
fn free_names(graph: &GraphProto) -> Vec<String> {
    let mut defined: HashSet<&str> = graph.input.iter().map(|v| v.name.as_str()).collect();
    defined.extend(graph.initializer.iter().map(|t| t.name.as_str()));
    for n in &graph.node {
        defined.extend(n.output.iter().map(String::as_str));
    }
    let mut out: Vec<String> = Vec::new();
    let push = |name: &str, out: &mut Vec<String>| {
        if !name.is_empty() && !defined.contains(name) && !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    };
    for n in &graph.node {
        for i in &n.input {
            push(i, &mut out);
        }
        for a in &n.attribute {
            for g in a.g.iter().chain(&a.graphs) {
                for name in free_names(g) {
                    push(&name, &mut out);
                }
            }
        }
    }
    for o in &graph.output {
        push(&o.name, &mut out);
    }
    out
}

/// The value of `o` when it is known at import: a Constant, or a Broadcast of one.
fn constant_of(f: &Function, o: Output) -> Option<Tensor> {
    let node = f.node(o.node).ok()?;
    match node.op() {
        Op::Constant(d) => Tensor::from_data((**d).clone(), node.output_type().shape.clone()).ok(),
        Op::Broadcast(to) => {
            let from = constant_of(f, *node.inputs().first()?)?;
            let data = reference::broadcast(from.data(), from.shape(), to).ok()?;
            Tensor::from_data(data, to.clone()).ok()
        }
        _ => None,
    }
}

/// The declared type of a body input when it is a static tensor type, else `fallback`.
fn declared_or(vi: &ValueInfoProto, fallback: TensorType) -> TensorType {
    let dims = declared_dims(vi).and_then(|d| {
        d.into_iter()
            .map(|x| x.ok().flatten())
            .collect::<Option<Vec<usize>>>()
    });
    match dims {
        Some(d) => TensorType::new(fallback.element_type, Shape::new(d)),
        None => fallback,
    }
}

/// A subgraph attribute of `node`.
fn graph_attr<'n>(
    node: &'n NodeProto,
    name: &str,
    at: &NodeRef,
) -> Result<&'n GraphProto, OnnxError> {
    node.attribute
        .iter()
        .find(|a| a.name == name)
        .and_then(|a| a.g.as_ref())
        .ok_or_else(|| OnnxError::BadAttribute {
            at: at.clone(),
            attribute: name.to_string(),
            message: "the subgraph attribute is missing".into(),
        })
}

fn ints_attr(node: &NodeProto, name: &str) -> Option<Vec<i64>> {
    node.attribute
        .iter()
        .find(|a| a.name == name)
        .map(|a| a.ints.clone())
}

fn int_attr(node: &NodeProto, name: &str) -> Option<i64> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.i)
}

/// A captured value of the enclosing graph: its ONNX name, its value there, and whether
/// it is copied into the body as a constant.
struct Captures {
    names: Vec<String>,
    values: Vec<Output>,
    constants: Vec<Option<Tensor>>,
    embedded: Vec<bool>,
}

impl Captures {
    /// Resolves `names` in the enclosing importer.
    fn resolve(
        imp: &mut Importer<'_>,
        names: Vec<String>,
        at: &NodeRef,
    ) -> Result<Captures, OnnxError> {
        let mut c = Captures {
            names: Vec::new(),
            values: Vec::new(),
            constants: Vec::new(),
            embedded: Vec::new(),
        };
        for (i, name) in names.into_iter().enumerate() {
            let v = imp.value(&name, at, i)?;
            let k = constant_of(&imp.function, v);
            let small = k.as_ref().is_some_and(|t| t.len() <= EMBED_LIMIT);
            c.add(name, v, k, small);
        }
        Ok(c)
    }

    fn add(&mut self, name: String, value: Output, constant: Option<Tensor>, embedded: bool) {
        self.names.push(name);
        self.values.push(value);
        self.constants.push(constant);
        self.embedded.push(embedded);
    }

    /// Fills `spec`'s captured parameters and constants.
    fn fill(&self, f: &Function, spec: &mut BodySpec) -> Result<(), OnnxError> {
        spec.captured.clear();
        spec.constants.clear();
        for k in 0..self.names.len() {
            match (&self.constants[k], self.embedded[k]) {
                (Some(t), true) => spec.constants.push((self.names[k].clone(), t.clone())),
                _ => {
                    let t = f.output_type(self.values[k]).map_err(|e| OnnxError::Ir {
                        at: NodeRef::item("outer value", &self.names[k]),
                        source: Box::new(e),
                    })?;
                    spec.captured.push((self.names[k].clone(), t.clone()));
                }
            }
        }
        Ok(())
    }

    /// The node's operands for the captured (not embedded) values.
    fn operands(&self) -> Vec<Output> {
        (0..self.names.len())
            .filter(|&k| !(self.constants[k].is_some() && self.embedded[k]))
            .map(|k| self.values[k])
            .collect()
    }

    /// Embeds captured value `name` if it is a constant not embedded yet; `true` if it did.
    fn embed(&mut self, name: &str) -> bool {
        match self.names.iter().position(|n| n == name) {
            Some(k) if self.constants[k].is_some() && !self.embedded[k] => {
                self.embedded[k] = true;
                true
            }
            _ => false,
        }
    }
}

/// Imports a body by `spec`, embedding captured constants the body needs as shape operands
/// and binding the formal parameters of `bindable` it needs so (with the value the closure
/// gives, `None` when it is not known at import); returns the body and the bound indices.
fn import_binding(
    graph: &GraphProto,
    spec: &mut BodySpec,
    captures: &mut Captures,
    f: &Function,
    cx: &Context,
    bindable: &dyn Fn(usize) -> Option<Option<Tensor>>,
    at: &NodeRef,
) -> Result<Function, OnnxError> {
    loop {
        captures.fill(f, spec)?;
        match import_body(graph, spec, cx) {
            Ok(body) => return Ok(body),
            Err(OnnxError::RunTimeOperand {
                at: inner,
                what,
                input,
            }) => {
                if captures.embed(&input) {
                    continue;
                }
                let k = spec.params.iter().position(|(n, _)| *n == input);
                match k.and_then(|k| bindable(k).map(|v| (k, v))) {
                    Some((k, Some(v))) if !spec.bound.contains_key(&k) => {
                        spec.bound.insert(k, v);
                    }
                    Some((_, None)) => {
                        return Err(OnnxError::UnsupportedFeature {
                            at: at.clone(),
                            feature: format!(
                                "the body uses loop-carried `{input}` as a shape operand \
                                 ({inner}: {what}) and its initial value is computed at run \
                                 time; graphlift specialises such a body per iteration from \
                                 an initial value known at import"
                            ),
                        })
                    }
                    None if k.is_some() => {
                        return Err(OnnxError::UnsupportedFeature {
                            at: at.clone(),
                            feature: format!(
                                "the body uses its input `{input}` as a shape operand ({inner}: \
                                 {what}); graphlift specialises only a Loop body, on its \
                                 iteration number and loop-carried values"
                            ),
                        })
                    }
                    _ => {
                        return Err(OnnxError::RunTimeOperand {
                            at: inner,
                            what,
                            input,
                        })
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// The nodes of a loop body that read only loop-invariant values (outer-scope values, the
/// `invariant` body inputs, and the outputs of such nodes), in order: deterministic
/// default-domain nodes without subgraphs, and the `Constant`s they read. Hoisting them
/// out of the loop computes them once per run instead of once per iteration (SLANet's
/// decoder transposes two weight matrices in its body).
fn hoistable<'a>(body: &GraphProto, invariant: impl Iterator<Item = &'a str>) -> Vec<usize> {
    const IMPURE: [&str; 9] = [
        "If",
        "Loop",
        "Scan",
        "RandomNormal",
        "RandomUniform",
        "RandomNormalLike",
        "RandomUniformLike",
        "Bernoulli",
        "Multinomial",
    ];
    let mut local: HashSet<&str> = body.input.iter().map(|v| v.name.as_str()).collect();
    local.extend(body.initializer.iter().map(|t| t.name.as_str()));
    for nd in &body.node {
        local.extend(nd.output.iter().map(String::as_str));
    }
    let mut available: HashSet<&str> = invariant.collect();
    let mut candidates = Vec::new();
    for (k, nd) in body.node.iter().enumerate() {
        let pure = super::is_default_domain(&nd.domain)
            && !IMPURE.contains(&nd.op_type.as_str())
            && nd
                .attribute
                .iter()
                .all(|a| a.g.is_none() && a.graphs.is_empty());
        let ready = nd
            .input
            .iter()
            .all(|i| i.is_empty() || available.contains(i.as_str()) || !local.contains(i.as_str()));
        if pure && ready {
            available.extend(nd.output.iter().map(String::as_str));
            candidates.push(k);
        }
    }
    // Constants move only with a node that reads them.
    let moving: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|&k| body.node[k].op_type != "Constant")
        .collect();
    let read: HashSet<&str> = moving
        .iter()
        .flat_map(|&k| body.node[k].input.iter().map(String::as_str))
        .collect();
    candidates
        .into_iter()
        .filter(|&k| {
            let nd = &body.node[k];
            nd.op_type != "Constant" || nd.output.iter().any(|o| read.contains(o.as_str()))
        })
        .collect()
}

/// The [`Specializer`] of an ONNX loop body: imports the subgraph again with the bound
/// parameters' values.
#[derive(Debug)]
struct OnnxBody {
    graph: GraphProto,
    spec: BodySpec,
    bound: Vec<usize>,
    cx: Context,
}

impl Specializer for OnnxBody {
    fn specialize(&self, values: &[TensorData]) -> Result<Function, String> {
        let mut spec = self.spec.clone();
        spec.bound.clear();
        for (&k, v) in self.bound.iter().zip(values) {
            let shape = spec.params[k].1.shape.clone();
            let t = Tensor::from_data(v.clone(), shape).map_err(|e| e.to_string())?;
            spec.bound.insert(k, t);
        }
        import_body(&self.graph, &spec, &self.cx).map_err(|e| e.to_string())
    }
}

impl<'m> Importer<'m> {
    /// Imports control-flow node `index` (`If`, `Loop`, `Scan`); returns its outputs.
    pub(super) fn control_flow(
        &mut self,
        index: usize,
        node: &'m NodeProto,
        inputs: &[Option<Output>],
    ) -> Result<Vec<Output>, OnnxError> {
        let at = node_ref(index, node);
        let cx = Context {
            opset: self.opset,
            opsets: self.opsets.clone(),
            source: self.source.to_string(),
        };
        match node.op_type.as_str() {
            "If" => self.import_if(index, node, inputs, &at, &cx),
            "Loop" => self.import_loop(index, node, inputs, &at, &cx),
            _ => self.import_scan(index, node, inputs, &at, &cx),
        }
    }

    /// Adds the control-flow node with its operands; names and tags it as the importer does.
    fn add_control_flow(
        &mut self,
        index: usize,
        node: &NodeProto,
        cf: ControlFlow,
        operands: &[Output],
        at: &NodeRef,
    ) -> Result<graphlift_ir::NodeId, OnnxError> {
        let site = CreationSite {
            file: self.source.clone(),
            line: u32::try_from(index + 1).unwrap_or(u32::MAX),
            column: 1,
        };
        let ir = |e| OnnxError::Ir {
            at: at.clone(),
            source: Box::new(e),
        };
        let id = self
            .function
            .add_node_at(Op::ControlFlow(Arc::new(cf)), operands, site)
            .map_err(ir)?;
        let base = if node.name.is_empty() {
            node.output
                .iter()
                .find(|o| !o.is_empty())
                .cloned()
                .unwrap_or_else(|| node.op_type.clone())
        } else {
            node.name.clone()
        };
        let name = unique_name(&self.function, &self.reserved, &base);
        self.function.set_name(id, name).map_err(ir)?;
        self.function
            .add_tag(id, format!("onnx:{}:{base}", node.op_type))
            .map_err(ir)?;
        Ok(id)
    }

    fn import_if(
        &mut self,
        _index: usize,
        node: &'m NodeProto,
        inputs: &[Option<Output>],
        at: &NodeRef,
        cx: &Context,
    ) -> Result<Vec<Output>, OnnxError> {
        let cond = inputs
            .first()
            .copied()
            .flatten()
            .ok_or_else(|| OnnxError::Arity {
                at: at.clone(),
                message: "If needs its condition input".into(),
            })?;
        let then_g = graph_attr(node, "then_branch", at)?;
        let else_g = graph_attr(node, "else_branch", at)?;
        if let Some(c) = constant_of(&self.function, cond) {
            let taken = if c.data().get_f64(0).is_some_and(|x| x != 0.0) {
                then_g
            } else {
                else_g
            };
            return self.inline_branch(taken, at);
        }
        let mut names = free_names(then_g);
        for n in free_names(else_g) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        let mut captures = Captures::resolve(self, names, at)?;
        let branch = |g: &GraphProto, captures: &mut Captures, f: &Function| {
            let mut spec = BodySpec::new(
                Vec::new(),
                g.output.iter().map(|o| o.name.clone()).collect(),
            );
            import_binding(g, &mut spec, captures, f, cx, &|_| None, at)
        };
        let mut then_branch = branch(then_g, &mut captures, &self.function)?;
        let embedded = captures.embedded.clone();
        let else_branch = branch(else_g, &mut captures, &self.function)?;
        // Both branches take the same parameters: a constant the else branch needed copied
        // in is copied into the then branch too.
        if captures.embedded != embedded {
            then_branch = branch(then_g, &mut captures, &self.function)?;
        }
        let mut operands = vec![cond];
        operands.extend(captures.operands());
        let n = then_branch.results().len();
        let cf = ControlFlow::If(If {
            then_branch,
            else_branch,
        });
        let id = self.add_control_flow(_index, node, cf, &operands, at)?;
        Ok((0..n).map(|k| Output::new(id, k)).collect())
    }

    /// Imports the nodes of `branch` into this graph (an `If` whose condition is constant);
    /// returns the values of its outputs.
    fn inline_branch(
        &mut self,
        branch: &'m GraphProto,
        at: &NodeRef,
    ) -> Result<Vec<Output>, OnnxError> {
        for t in &branch.initializer {
            self.initializers.insert(t.name.as_str(), t);
        }
        for (index, n) in branch.node.iter().enumerate() {
            self.node(index, n)
                .map_err(|e| explain_order(e, branch, index))?;
        }
        branch
            .output
            .iter()
            .enumerate()
            .map(|(i, o)| self.value(&o.name, at, i))
            .collect()
    }

    fn import_loop(
        &mut self,
        index: usize,
        node: &'m NodeProto,
        inputs: &[Option<Output>],
        at: &NodeRef,
        cx: &Context,
    ) -> Result<Vec<Output>, OnnxError> {
        let body_g = graph_attr(node, "body", at)?;
        let arity = |message: String| OnnxError::Arity {
            at: at.clone(),
            message,
        };
        if inputs.len() < 2 {
            return Err(arity(
                "Loop needs the inputs M and cond (either may be empty)".into(),
            ));
        }
        let n = inputs.len() - 2;
        if body_g.input.len() != 2 + n {
            return Err(arity(format!(
                "the body has {} inputs, needs {} (iteration number, condition, {n} carried)",
                body_g.input.len(),
                2 + n
            )));
        }
        if body_g.output.len() < 1 + n {
            return Err(arity(format!(
                "the body has {} outputs, needs at least {} (condition, {n} carried)",
                body_g.output.len(),
                1 + n
            )));
        }
        let k_scan = body_g.output.len() - 1 - n;
        if node.output.len() > n + k_scan {
            return Err(arity(format!(
                "has {} outputs; its body gives {n} carried values and {k_scan} scan outputs",
                node.output.len()
            )));
        }
        let ir = |e| OnnxError::Ir {
            at: at.clone(),
            source: Box::new(e),
        };
        // M and cond, made one-element i64 and bool.
        let trip = match inputs[0] {
            Some(m) => m,
            None => Output::from(
                self.function
                    .add_constant(TensorData::I64(vec![i64::MAX]), Shape::scalar())
                    .map_err(ir)?,
            ),
        };
        let cond = match inputs[1] {
            Some(c) => c,
            None => Output::from(
                self.function
                    .add_constant(TensorData::Bool(vec![true]), Shape::scalar())
                    .map_err(ir)?,
            ),
        };
        let mut initial = Vec::with_capacity(n);
        for (k, v) in inputs[2..].iter().enumerate() {
            initial.push(v.ok_or_else(|| arity(format!("loop-carried input {} is empty", k + 2)))?);
        }
        // Carried values the body passes through unchanged are captured instead.
        let invariant: Vec<bool> = (0..n)
            .map(|k| body_g.output[1 + k].name == body_g.input[2 + k].name)
            .collect();
        let variant: Vec<usize> = (0..n).filter(|&k| !invariant[k]).collect();
        let ty = |f: &Function, o: Output| f.output_type(o).cloned().map_err(ir);
        let iter_t = declared_or(
            &body_g.input[0],
            TensorType::new(ElementType::I64, Shape::scalar()),
        );
        let cond_t = declared_or(
            &body_g.input[1],
            TensorType::new(ElementType::Bool, Shape::scalar()),
        );
        let mut params = vec![
            (body_g.input[0].name.clone(), iter_t.clone()),
            (body_g.input[1].name.clone(), cond_t),
        ];
        for &k in &variant {
            params.push((
                body_g.input[2 + k].name.clone(),
                ty(&self.function, initial[k])?,
            ));
        }
        // Loop-invariant code motion: the body's nodes that read only invariant values run
        // once, before the loop, in this graph (the invariant carried values are their
        // initial values here while they are imported).
        let invariant_names: Vec<(String, Output)> = (0..n)
            .filter(|&k| invariant[k])
            .map(|k| (body_g.input[2 + k].name.clone(), initial[k]))
            .collect();
        let hoisted = if invariant_names
            .iter()
            .any(|(name, _)| self.values.contains_key(name))
        {
            Vec::new()
        } else {
            hoistable(body_g, invariant_names.iter().map(|(n, _)| n.as_str()))
        };
        let body_owned: GraphProto;
        let body_g: &GraphProto = if hoisted.is_empty() {
            body_g
        } else {
            for (name, v) in &invariant_names {
                self.values.insert(name.clone(), *v);
            }
            let imported: Result<(), OnnxError> = hoisted
                .iter()
                .try_for_each(|&h| self.node(h, &body_g.node[h]));
            for (name, _) in &invariant_names {
                self.values.remove(name);
            }
            imported?;
            let mut b = body_g.clone();
            b.node = body_g
                .node
                .iter()
                .enumerate()
                .filter(|(k, _)| !hoisted.contains(k))
                .map(|(_, n)| n.clone())
                .collect();
            body_owned = b;
            &body_owned
        };
        let mut results = vec![body_g.output[0].name.clone()];
        results.extend(variant.iter().map(|&k| body_g.output[1 + k].name.clone()));
        results.extend(body_g.output[1 + n..].iter().map(|o| o.name.clone()));
        let free = free_names(body_g);
        let mut captures = Captures::resolve(self, free, at)?;
        for (name, v) in invariant_names {
            let used =
                results.contains(&name) || body_g.node.iter().any(|nd| nd.input.contains(&name));
            if used {
                let k = constant_of(&self.function, v);
                let small = k.as_ref().is_some_and(|t| t.len() <= EMBED_LIMIT);
                captures.add(name, v, k, small);
            }
        }
        let mut spec = BodySpec::new(params, results);
        // The iteration number starts at 0; a carried value at its initial value, when known.
        let f = &self.function;
        let initial_of = |k: usize| -> Option<Option<Tensor>> {
            match k {
                0 => Some(Tensor::from_data(TensorData::I64(vec![0]), iter_t.shape.clone()).ok()),
                1 => None,
                _ => Some(constant_of(f, initial[variant[k - 2]])),
            }
        };
        let probe = import_binding(body_g, &mut spec, &mut captures, f, cx, &initial_of, at)?;
        // Scan outputs need a static length.
        let scan_length = if k_scan > 0 {
            Some(self.static_trip_count(trip, cond, &probe, !spec.bound.is_empty(), at)?)
        } else {
            None
        };
        let body = if spec.bound.is_empty() {
            Body::Static(probe)
        } else {
            let bound: Vec<usize> = spec.bound.keys().copied().collect();
            let specializer = OnnxBody {
                graph: body_g.clone(),
                spec: spec.clone(),
                bound: bound.clone(),
                cx: cx.clone(),
            };
            Body::Specialized(Arc::new(Specialized::new(
                if body_g.name.is_empty() {
                    "body".to_string()
                } else {
                    body_g.name.clone()
                },
                bound,
                probe.parameter_types(),
                probe.result_types(),
                Arc::new(specializer),
            )))
        };
        let mut operands = vec![trip, cond];
        operands.extend(variant.iter().map(|&k| initial[k]));
        operands.extend(captures.operands());
        let cf = ControlFlow::Loop(Loop {
            body,
            carried: variant.len(),
            scan_outputs: k_scan,
            scan_length,
        });
        let id = self.add_control_flow(index, node, cf, &operands, at)?;
        let mut outs = Vec::with_capacity(n + k_scan);
        for (k, &init) in initial.iter().enumerate() {
            outs.push(match variant.iter().position(|&v| v == k) {
                Some(p) => Output::new(id, p),
                None => init,
            });
        }
        for j in 0..k_scan {
            outs.push(Output::new(id, variant.len() + j));
        }
        Ok(outs)
    }

    /// The iteration count of a loop whose scan outputs need it static: a constant `M` with
    /// a constant (or absent) `cond` and a body whose condition result is `true` or its
    /// condition input (a body specialised per iteration must pass the condition input
    /// through: a constant in one specialisation may depend on the bound values).
    fn static_trip_count(
        &self,
        trip: Output,
        cond: Output,
        body: &Function,
        specialised: bool,
        at: &NodeRef,
    ) -> Result<usize, OnnxError> {
        let why = "the length of its scan outputs is the number of iterations, which graphlift \
                   needs static (its executables have static shapes): give M as a constant \
                   and make the condition constant-true or absent";
        let known = |o: Output, what: &str| -> Result<Tensor, OnnxError> {
            if let Some(t) = constant_of(&self.function, o) {
                return Ok(t);
            }
            match crate::emit::parameter_source(&self.function, o) {
                Some(input) => Err(OnnxError::RunTimeOperand {
                    at: at.clone(),
                    what: format!("{what} (it fixes the length of the scan outputs)"),
                    input,
                }),
                None => Err(OnnxError::UnsupportedFeature {
                    at: at.clone(),
                    feature: format!("{what} is computed at run time; {why}"),
                }),
            }
        };
        let m = known(trip, "the trip count M")?;
        let c = known(cond, "the condition cond")?;
        let body_cond = body
            .results()
            .first()
            .and_then(|&r| body.result_source(r).ok());
        let trivially_true = body_cond.is_some_and(|o| {
            body.parameters().get(1) == Some(&o.node)
                || (!specialised
                    && constant_of(body, o).is_some_and(|t| t.data().get_f64(0) == Some(1.0)))
        });
        if !trivially_true {
            return Err(OnnxError::UnsupportedFeature {
                at: at.clone(),
                feature: format!(
                    "the body computes its condition, so the loop may stop early; {why}"
                ),
            });
        }
        if c.data().get_f64(0) == Some(0.0) {
            return Ok(0);
        }
        let m = match m.data() {
            TensorData::I64(d) => d.first().copied().unwrap_or(0),
            d => d.get_f64(0).unwrap_or(0.0) as i64,
        };
        usize::try_from(m.max(0)).map_err(|_| OnnxError::UnsupportedFeature {
            at: at.clone(),
            feature: format!("trip count {m}"),
        })
    }

    fn import_scan(
        &mut self,
        index: usize,
        node: &'m NodeProto,
        inputs: &[Option<Output>],
        at: &NodeRef,
        cx: &Context,
    ) -> Result<Vec<Output>, OnnxError> {
        if self.opset < 9 {
            return Err(OnnxError::UnsupportedFeature {
                at: at.clone(),
                feature: "Scan before opset 9 (a batch axis and sequence_lens); graphlift \
                          imports the Scan of opset 9 on"
                    .into(),
            });
        }
        let body_g = graph_attr(node, "body", at)?;
        let bad = |attribute: &str, message: String| OnnxError::BadAttribute {
            at: at.clone(),
            attribute: attribute.to_string(),
            message,
        };
        let m = int_attr(node, "num_scan_inputs")
            .ok_or_else(|| bad("num_scan_inputs", "is required".into()))?;
        let m = usize::try_from(m)
            .ok()
            .filter(|&m| m >= 1 && m <= inputs.len())
            .ok_or_else(|| {
                bad(
                    "num_scan_inputs",
                    format!("{m} for {} inputs", inputs.len()),
                )
            })?;
        let n = inputs.len() - m;
        let ins: Vec<Output> = inputs
            .iter()
            .enumerate()
            .map(|(k, v)| {
                v.ok_or_else(|| OnnxError::Arity {
                    at: at.clone(),
                    message: format!("input {k} is empty"),
                })
            })
            .collect::<Result<_, _>>()?;
        if body_g.input.len() != n + m {
            return Err(OnnxError::Arity {
                at: at.clone(),
                message: format!(
                    "the body has {} inputs, needs {} ({n} state, {m} scan)",
                    body_g.input.len(),
                    n + m
                ),
            });
        }
        if body_g.output.len() < n {
            return Err(OnnxError::Arity {
                at: at.clone(),
                message: format!(
                    "the body has {} outputs, fewer than its {n} state values",
                    body_g.output.len()
                ),
            });
        }
        let k_out = body_g.output.len() - n;
        let ir = |e| OnnxError::Ir {
            at: at.clone(),
            source: Box::new(e),
        };
        let types: Vec<TensorType> = ins
            .iter()
            .map(|&o| self.function.output_type(o).cloned().map_err(ir))
            .collect::<Result<_, _>>()?;
        let norm =
            |axes: Option<Vec<i64>>, count: usize, ranks: &dyn Fn(usize) -> usize, what: &str| {
                let axes = axes.unwrap_or_else(|| vec![0; count]);
                if axes.len() != count {
                    return Err(bad(
                        what,
                        format!("has {} entries for {count} values", axes.len()),
                    ));
                }
                axes.iter()
                    .enumerate()
                    .map(|(k, &a)| {
                        let r = ranks(k) as i64;
                        let a2 = if a < 0 { a + r } else { a };
                        usize::try_from(a2)
                            .ok()
                            .filter(|&x| (x as i64) < r)
                            .ok_or_else(|| bad(what, format!("axis {a} out of range for rank {r}")))
                    })
                    .collect::<Result<Vec<usize>, OnnxError>>()
            };
        let input_axes = norm(
            ints_attr(node, "scan_input_axes"),
            m,
            &|k| types[n + k].shape.rank(),
            "scan_input_axes",
        )?;
        let dirs = |name: &str, count: usize| -> Result<Vec<bool>, OnnxError> {
            let d = ints_attr(node, name).unwrap_or_else(|| vec![0; count]);
            if d.len() != count {
                return Err(bad(
                    name,
                    format!("has {} entries for {count} values", d.len()),
                ));
            }
            Ok(d.iter().map(|&x| x != 0).collect())
        };
        let input_reverse = dirs("scan_input_directions", m)?;
        let output_reverse = dirs("scan_output_directions", k_out)?;
        let mut params = Vec::with_capacity(n + m);
        for (vi, t) in body_g.input.iter().zip(&types).take(n) {
            params.push((vi.name.clone(), t.clone()));
        }
        for k in 0..m {
            let t = &types[n + k];
            let mut d = t.shape.dims().to_vec();
            d.remove(input_axes[k]);
            params.push((
                body_g.input[n + k].name.clone(),
                TensorType::new(t.element_type, Shape::new(d)),
            ));
        }
        let mut captures = Captures::resolve(self, free_names(body_g), at)?;
        let mut spec = BodySpec::new(
            params,
            body_g.output.iter().map(|o| o.name.clone()).collect(),
        );
        let body = import_binding(
            body_g,
            &mut spec,
            &mut captures,
            &self.function,
            cx,
            &|_| None,
            at,
        )?;
        let out_types = body.result_types();
        let output_axes = norm(
            ints_attr(node, "scan_output_axes"),
            k_out,
            &|k| out_types.get(n + k).map_or(0, |t| t.shape.rank() + 1),
            "scan_output_axes",
        )?;
        let mut operands = ins.clone();
        operands.extend(captures.operands());
        let cf = ControlFlow::Scan(Scan {
            body,
            state: n,
            scan_inputs: m,
            input_axes,
            input_reverse,
            output_axes,
            output_reverse,
        });
        let id = self.add_control_flow(index, node, cf, &operands, at)?;
        Ok((0..n + k_out).map(|k| Output::new(id, k)).collect())
    }
}
