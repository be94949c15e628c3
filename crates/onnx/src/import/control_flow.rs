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
//!   a body whose condition result is `true` or its condition input. A loop whose length is
//!   known only at run time is [`OnnxError::DataDependentShape`]: a [`crate::Session`] runs
//!   it as a dynamic step, iterating its body on the host.
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

mod branch;
mod checks;
mod hoist;
mod iterate;

use checks::{graph_attr, int_attr, ints_attr};

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

/// The settings a subgraph import shares with its enclosing graph's, and the control-flow
/// node the subgraph belongs to.
#[derive(Debug, Clone)]
struct Context {
    opset: i64,
    opsets: HashMap<String, i64>,
    source: String,
    node: NodeRef,
    /// [`crate::ImportOptions::specialization_capacity`].
    specialization_capacity: usize,
}

/// The kinds of [`NodeRef::item`] a subgraph's own errors name: its inputs, outputs,
/// initializers, and the subgraph as a whole.
const BODY_ITEMS: [&str; 6] = [
    "graph",
    "graph input",
    "graph output",
    "initializer",
    "subgraph",
    "subgraph output",
];

/// Imports `graph` as a closed Function by `spec`. An error at one of the subgraph's own
/// items (not at one of its nodes) names the control-flow node too: `Loop `l` body `b`:
/// graph output `y``.
fn import_body(graph: &GraphProto, spec: &BodySpec, cx: &Context) -> Result<Function, OnnxError> {
    import_body_items(graph, spec, cx).map_err(|mut e| {
        if let Some(at) = e
            .location_mut()
            .filter(|at| BODY_ITEMS.contains(&at.op_type.as_str()))
        {
            at.op_type = format!("{} body `{}`: {}", cx.node, graph.name, at.op_type);
        }
        e
    })
}

/// [`import_body`] but for naming the control-flow node.
fn import_body_items(
    graph: &GraphProto,
    spec: &BodySpec,
    cx: &Context,
) -> Result<Function, OnnxError> {
    let mut imp = Importer::new(graph, cx.opset, cx.opsets.clone(), &cx.source)?;
    imp.specialization_capacity = cx.specialization_capacity;
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
pub(crate) fn free_names(graph: &GraphProto) -> Vec<String> {
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
