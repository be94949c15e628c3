//! `Function`: an arena of nodes with ordered parameters and results (nGraph's Function).

mod build;
mod edit;
mod order;
mod state;
use std::collections::BTreeMap;

use foldhash::HashMap;
use std::sync::Arc;

use smallvec::SmallVec;
mod derived;
mod provenance_groups;

use derived::Derived;

use crate::{IrError, Node, NodeId, Op, Output, TensorType};

/// A computation graph: a DAG of typed nodes with ordered parameters and results.
///
/// Nodes live in an arena and are addressed by [`NodeId`]; a node's inputs are [`Output`]
/// handles. Every node knows its users, so [`Function::replace_node`] is cheap. Parameters and
/// results are nodes (`Op::Parameter`, `Op::Result`), kept in call order; sinks
/// ([`Function::sinks`]) are nodes that run although no result reads them. Topological order
/// is derived ([`Function::topological_order`]); it and the fact that the function validates
/// are remembered until the graph next changes (`function/derived.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    name: String,
    /// The node arena. Nodes are shared copy-on-write: copying a Function copies a pointer
    /// per node, and a node is copied when it is first changed in one of the copies (every
    /// rewrite pass works on a copy, and most of its nodes stay as they are).
    nodes: Vec<Option<Arc<Node>>>,
    parameters: Vec<NodeId>,
    results: Vec<NodeId>,
    /// See [`Function::sinks`].
    sinks: Vec<NodeId>,
    names: HashMap<Arc<str>, NodeId>,
    /// Provenance groups: root -> members (see [`Function::add_provenance_group_members`]).
    groups: BTreeMap<NodeId, Vec<NodeId>>,
    /// Whether passes propagate provenance tags (see [`Function::provenance_enabled`]).
    provenance_enabled: bool,
    /// Facts derived from the graph, forgotten by every change to it.
    derived: Derived,
}

impl Function {
    /// An empty function.
    pub fn new(name: impl Into<String>) -> Function {
        Function {
            name: name.into(),
            nodes: Vec::new(),
            parameters: Vec::new(),
            results: Vec::new(),
            sinks: Vec::new(),
            names: HashMap::default(),
            groups: BTreeMap::new(),
            provenance_enabled: true,
            derived: Derived::default(),
        }
    }

    /// Makes room for `additional` more nodes (and their names), so that adding them grows
    /// no table; builders that know their size, like subgraph extraction's kernel bodies,
    /// call this first.
    pub fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
        self.names.reserve(additional);
    }

    /// A function from its nodes in arena order (node `i` gets id `i`; each node's `id` and
    /// `users` are set here), for loaders such as the JSON reader. Checks that every
    /// reference is in range and every name unique; it does not infer types, check ops or
    /// look for cycles: the caller runs [`Function::validate`] for that.
    ///
    /// # Errors
    /// [`IrError::Dangling`] for an input, control dependency, parameter or result that
    /// refers to no node or output; [`IrError::DuplicateName`] for a name used twice.
    pub(crate) fn from_parts(
        name: String,
        nodes: Vec<Node>,
        parameters: Vec<NodeId>,
        results: Vec<NodeId>,
    ) -> Result<Function, IrError> {
        let mut f = Function::new(name);
        let out_counts: Vec<usize> = nodes.iter().map(|n| n.outputs.len()).collect();
        let exists = |id: NodeId| id.index() < out_counts.len();
        for (i, mut node) in nodes.into_iter().enumerate() {
            let id =
                NodeId(u32::try_from(i).map_err(|_| f.dangling("more than 2^32 nodes".into()))?);
            for o in &node.inputs {
                if out_counts.get(o.node.index()).is_none_or(|&c| o.index >= c) {
                    return Err(f.dangling(format!(
                        "node `{}` uses output {} of {}, which does not exist",
                        node.name, o.index, o.node
                    )));
                }
            }
            if let Some(d) = node.other_deps.iter().find(|d| !exists(**d)) {
                return Err(f.dangling(format!(
                    "node `{}` has a control dependency on {d}, which does not exist",
                    node.name
                )));
            }
            f.check_name_free(&node.name)?;
            node.id = id;
            node.users = (0..node.outputs.len()).map(|_| SmallVec::new()).collect();
            f.names.insert(node.name.clone(), id);
            f.nodes.push(Some(Arc::new(node)));
        }
        for i in 0..f.nodes.len() {
            let inputs = f.nodes[i]
                .as_ref()
                .map(|n| n.inputs.clone())
                .unwrap_or_default();
            for (slot, o) in inputs.into_iter().enumerate() {
                if let Some(Some(p)) = f.nodes.get_mut(o.node.index()) {
                    if let Some(u) = Arc::make_mut(p).users.get_mut(o.index) {
                        u.push((NodeId(i as u32), slot));
                    }
                }
            }
        }
        for &id in parameters.iter().chain(&results) {
            if !exists(id) {
                return Err(f.dangling(format!("parameter or result {id} does not exist")));
            }
        }
        f.parameters = parameters;
        f.results = results;
        Ok(f)
    }

    /// One past the largest node index ever used (node ids are never reused).
    pub(crate) fn arena_len(&self) -> usize {
        self.nodes.len()
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Parameter nodes, in call order.
    pub fn parameters(&self) -> &[NodeId] {
        &self.parameters
    }

    /// Result nodes, in call order.
    pub fn results(&self) -> &[NodeId] {
        &self.results
    }

    /// Types of the parameters, in call order.
    pub fn parameter_types(&self) -> Vec<TensorType> {
        self.parameters
            .iter()
            .filter_map(|&p| self.get(p).map(|n| n.outputs[0].clone()))
            .collect()
    }

    /// Types of the results, in call order.
    pub fn result_types(&self) -> Vec<TensorType> {
        self.results
            .iter()
            .filter_map(|&r| self.get(r).map(|n| n.outputs[0].clone()))
            .collect()
    }

    /// Number of live nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.iter().flatten().count()
    }

    /// Live nodes in id order.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().flatten().map(|n| &**n)
    }

    /// The node `id`, or `None` if it does not exist (or was removed).
    pub fn get(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(id.index()).and_then(Option::as_deref)
    }

    /// The node `id`.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if there is no such node.
    pub fn node(&self, id: NodeId) -> Result<&Node, IrError> {
        self.get(id)
            .ok_or_else(|| self.dangling(format!("no node {id}")))
    }

    /// The node named `name`.
    pub fn node_by_name(&self, name: &str) -> Option<&Node> {
        self.names.get(name).and_then(|&id| self.get(id))
    }

    /// The type of a value.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if the node or the output index does not exist.
    pub fn output_type(&self, output: Output) -> Result<&TensorType, IrError> {
        self.node(output.node)?
            .outputs
            .get(output.index)
            .ok_or_else(|| {
                self.dangling(format!(
                    "node {} has no output {}",
                    output.node, output.index
                ))
            })
    }

    /// The value a Result node passes out.
    pub fn result_source(&self, result: NodeId) -> Result<Output, IrError> {
        let n = self.node(result)?;
        match (&n.op, n.inputs.first()) {
            (Op::Result, Some(&o)) => Ok(o),
            _ => Err(self.dangling(format!("node `{}` is not a Result", n.name))),
        }
    }

    fn dangling(&self, what: String) -> IrError {
        IrError::Dangling {
            function: self.name.clone(),
            what,
        }
    }
}
