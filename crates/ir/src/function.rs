//! `Function`: an arena of nodes with ordered parameters and results (nGraph's Function).

use std::collections::{BTreeMap, HashSet};

use foldhash::HashMap;
use std::sync::Arc;

use crate::infer::infer_output_types;
use crate::node::Inputs;
use smallvec::SmallVec;
mod derived;
mod provenance_groups;

use derived::Derived;

use crate::{
    CreationSite, ElementType, IrError, Node, NodeId, Op, Output, OutputTypes, ProvenanceTags,
    Shape, TensorData, TensorType,
};

/// A computation graph: a DAG of typed nodes with ordered parameters and results.
///
/// Nodes live in an arena and are addressed by [`NodeId`]; a node's inputs are [`Output`]
/// handles. Every node knows its users, so [`Function::replace_node`] is cheap. Parameters and
/// results are nodes (`Op::Parameter`, `Op::Result`), kept in call order. Topological order
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

    /// Adds a Parameter of the given type at the end of the parameter list.
    ///
    /// # Errors
    /// [`IrError::ShapeOverflow`] naming the parameter and its creation site for a shape
    /// whose element count overflows `usize`; [`IrError::DuplicateName`] if `name` is taken.
    #[track_caller]
    pub fn add_parameter(
        &mut self,
        name: impl Into<String>,
        element_type: ElementType,
        shape: impl Into<Shape>,
    ) -> Result<NodeId, IrError> {
        let (name, shape, site) = (name.into(), shape.into(), CreationSite::caller());
        if shape.element_count().is_err() {
            return Err(IrError::ShapeOverflow {
                at: format!("Parameter `{name}` (created at {site})"),
                shape,
            });
        }
        self.check_name_free(&name)?;
        let id = self.push(
            Op::Parameter,
            Vec::new(),
            vec![TensorType::new(element_type, shape)],
            Some(name.into()),
            site,
        );
        self.parameters.push(id);
        Ok(id)
    }

    /// Adds a Constant holding `data` in the given shape.
    ///
    /// # Errors
    /// [`IrError::ConstantLength`] if `data` does not hold exactly as many elements as
    /// `shape`; [`IrError::ShapeOverflow`] naming the constant and its creation site for an
    /// overflowing shape.
    #[track_caller]
    pub fn add_constant(
        &mut self,
        data: TensorData,
        shape: impl Into<Shape>,
    ) -> Result<NodeId, IrError> {
        self.add_constant_at(data, shape, CreationSite::caller())
    }

    /// [`Function::add_constant`] with an explicit creation site (for passes such as
    /// constant folding, whose constant stands for a node created elsewhere).
    ///
    /// # Errors
    /// As [`Function::add_constant`].
    pub fn add_constant_at(
        &mut self,
        data: TensorData,
        shape: impl Into<Shape>,
        site: CreationSite,
    ) -> Result<NodeId, IrError> {
        let shape = shape.into();
        let name = format!("Constant_{}", self.nodes.len());
        let Ok(expected) = shape.element_count() else {
            return Err(IrError::ShapeOverflow {
                at: format!("Constant `{name}` (created at {site})"),
                shape,
            });
        };
        if data.len() != expected {
            return Err(IrError::ConstantLength {
                name,
                len: data.len(),
                shape,
                expected,
            });
        }
        let t = TensorType::new(data.element_type(), shape);
        Ok(self.push(
            Op::Constant(Arc::new(data)),
            Vec::new(),
            vec![t],
            None,
            site,
        ))
    }

    /// Adds a node computing `op` on `inputs`, inferring its output types.
    ///
    /// # Errors
    /// [`IrError::Inference`] naming the op, the operand types and the creation site when the
    /// operands are not acceptable; [`IrError::Dangling`] for an input that does not exist.
    /// Use [`Function::add_parameter`], [`Function::add_constant`] and
    /// [`Function::add_result`] for those ops.
    #[track_caller]
    pub fn add_node(&mut self, op: Op, inputs: &[Output]) -> Result<NodeId, IrError> {
        self.add_node_at(op, inputs, CreationSite::caller())
    }

    /// [`Function::add_node`] with an explicit creation site (for importers and passes that
    /// carry the site of the node they translate).
    pub fn add_node_at(
        &mut self,
        op: Op,
        inputs: &[Output],
        site: CreationSite,
    ) -> Result<NodeId, IrError> {
        if matches!(op, Op::Result) {
            return Err(self.dangling("use add_result to add a Result".into()));
        }
        let types = self.infer(&op, inputs, &site)?;
        Ok(self.push(op, inputs.to_vec(), types, None, site))
    }

    fn infer(
        &self,
        op: &Op,
        inputs: &[Output],
        site: &CreationSite,
    ) -> Result<OutputTypes, IrError> {
        let in_types: SmallVec<[TensorType; 2]> = inputs
            .iter()
            .map(|&o| self.output_type(o).cloned())
            .collect::<Result<_, _>>()?;
        infer_output_types(op, &in_types).map_err(|message| {
            IrError::Inference(Box::new(crate::InferenceError {
                op: op.to_string(),
                name: format!("{}_{}", op.type_name(), self.nodes.len()),
                site: site.clone(),
                operands: in_types
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                message,
            }))
        })
    }

    /// Adds a Result passing `value` out, at the end of the result list.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if `value` does not exist; [`IrError::DuplicateName`] if `name`
    /// is taken.
    #[track_caller]
    pub fn add_result(&mut self, value: Output, name: Option<String>) -> Result<NodeId, IrError> {
        let t = self.output_type(value)?.clone();
        if let Some(n) = &name {
            self.check_name_free(n)?;
        }
        let id = self.push(
            Op::Result,
            vec![value],
            vec![t],
            name.map(Arc::from),
            CreationSite::caller(),
        );
        self.results.push(id);
        Ok(id)
    }

    /// Copies `src` (op, name, metadata, tags, pass history, creation site) from another
    /// function, wiring it to `inputs` of this one. The name is kept if free, else suffixed.
    /// Parameters are added to the parameter list; Results to the result list.
    ///
    /// # Errors
    /// As [`Function::add_node`] when the inputs do not fit the op.
    pub fn import_node(&mut self, src: &Node, inputs: &[Output]) -> Result<NodeId, IrError> {
        self.import(src, inputs, None)
    }

    /// [`Function::import_node`] for node `id` of `from`. When every input has here the type
    /// its counterpart has in `from`, the copy keeps the node's recorded output types without
    /// inferring them again: inference depends only on the op and the input types, and a
    /// node's recorded types are what inference gave when it was built or loaded.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if `from` has no node `id`; as [`Function::add_node`] when the
    /// inputs do not fit the op.
    pub fn import_node_from(
        &mut self,
        from: &Function,
        id: NodeId,
        inputs: &[Output],
    ) -> Result<NodeId, IrError> {
        let src = from.node(id)?;
        let same_types = src.inputs.len() == inputs.len()
            && src.inputs.iter().zip(inputs).all(|(&a, &b)| {
                matches!((from.output_type(a), self.output_type(b)), (Ok(x), Ok(y)) if x == y)
            });
        self.import(src, inputs, same_types.then(|| src.outputs.clone()))
    }

    /// Copies `src` wired to `inputs`, with output types `types` (inferred when `None`).
    fn import(
        &mut self,
        src: &Node,
        inputs: &[Output],
        types: Option<OutputTypes>,
    ) -> Result<NodeId, IrError> {
        let types = match (types, &src.op) {
            (Some(t), _) => t,
            (None, Op::Parameter | Op::Constant(_)) => src.outputs.clone(),
            (None, op) => self.infer(op, inputs, &src.site)?,
        };
        // The source's name when it is free here (shared, not copied), else a suffixed one.
        let name = if self.names.contains_key(&*src.name) {
            self.unique_name(&src.name).into()
        } else {
            Arc::clone(&src.name)
        };
        let id = self.push(
            src.op.clone(),
            Inputs::from_slice(inputs),
            types,
            Some(name),
            src.site.clone(),
        );
        let n = Arc::make_mut(self.nodes[id.index()].as_mut().expect("just pushed"));
        n.metadata = src.metadata.clone();
        n.tags = src.tags.clone();
        n.pass_history = src.pass_history.clone();
        match src.op {
            Op::Parameter => self.parameters.push(id),
            Op::Result => self.results.push(id),
            _ => {}
        }
        Ok(id)
    }

    fn push(
        &mut self,
        op: Op,
        inputs: impl Into<Inputs>,
        outputs: impl Into<OutputTypes>,
        name: Option<Arc<str>>,
        site: CreationSite,
    ) -> NodeId {
        let (inputs, outputs): (Inputs, OutputTypes) = (inputs.into(), outputs.into());
        self.derived.forget();
        let id = NodeId(u32::try_from(self.nodes.len()).expect("more than 2^32 nodes"));
        let name = name.unwrap_or_else(|| {
            self.unique_name(&format!("{}_{}", op.type_name(), id.0))
                .into()
        });
        for (slot, o) in inputs.iter().enumerate() {
            if let Some(Some(p)) = self.nodes.get_mut(o.node.index()) {
                Arc::make_mut(p).users[o.index].push((id, slot));
            }
        }
        self.names.insert(Arc::clone(&name), id);
        let n_out = outputs.len();
        self.nodes.push(Some(Arc::new(Node {
            id,
            name,
            op,
            inputs,
            outputs,
            metadata: BTreeMap::new(),
            tags: ProvenanceTags::new(),
            pass_history: Vec::new(),
            site,
            other_deps: Vec::new(),
            users: (0..n_out).map(|_| SmallVec::new()).collect(),
        })));
        id
    }

    /// `Ok` when `new` may stand in for `old`: both exist and have the same type.
    fn check_replaceable(&self, old: Output, new: Output) -> Result<(), IrError> {
        let (ot, nt) = (self.output_type(old)?, self.output_type(new)?);
        if ot != nt {
            return Err(IrError::ReplaceMismatch {
                old: self.node(old.node)?.name.to_string(),
                old_types: ot.to_string(),
                new: self.node(new.node)?.name.to_string(),
                new_types: nt.to_string(),
            });
        }
        Ok(())
    }

    fn unique_name(&self, base: &str) -> String {
        if !self.names.contains_key(base) {
            return base.to_string();
        }
        (1..)
            .map(|k| format!("{base}_{k}"))
            .find(|n| !self.names.contains_key(n.as_str()))
            .expect("an unused suffix exists")
    }

    fn check_name_free(&self, name: &str) -> Result<(), IrError> {
        match self.names.get(name) {
            Some(&node) => Err(IrError::DuplicateName {
                function: self.name.clone(),
                name: name.to_string(),
                node,
            }),
            None => Ok(()),
        }
    }

    fn node_mut(&mut self, id: NodeId) -> Result<&mut Node, IrError> {
        self.derived.forget();
        let Function { name, nodes, .. } = self;
        nodes
            .get_mut(id.index())
            .and_then(Option::as_mut)
            .map(Arc::make_mut)
            .ok_or_else(|| IrError::Dangling {
                function: name.clone(),
                what: format!("no node {id}"),
            })
    }

    /// Renames a node.
    ///
    /// # Errors
    /// [`IrError::DuplicateName`] if another node has `name`.
    pub fn set_name(&mut self, id: NodeId, name: impl Into<String>) -> Result<(), IrError> {
        self.derived.forget();
        let name: Arc<str> = name.into().into();
        if self.names.get(&*name) == Some(&id) {
            return Ok(());
        }
        self.check_name_free(&name)?;
        let n = self.node_mut(id)?;
        let old = std::mem::replace(&mut n.name, Arc::clone(&name));
        self.names.remove(&old);
        self.names.insert(name, id);
        Ok(())
    }

    /// Sets a metadata entry on a node.
    pub fn set_metadata(
        &mut self,
        id: NodeId,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<(), IrError> {
        self.node_mut(id)?.metadata.insert(key.into(), value.into());
        Ok(())
    }

    /// Adds a provenance tag to a node and to every member of its provenance group
    /// (nGraph's `add_provenance_tag`; see [`Function::add_provenance_group_members`]).
    pub fn add_tag(&mut self, id: NodeId, tag: impl Into<String>) -> Result<(), IrError> {
        let tags: ProvenanceTags = std::iter::once(tag.into()).collect();
        self.add_tags(id, &tags)
    }

    /// Adds every tag of `tags` to a node and to every member of its provenance group.
    pub fn add_tags(&mut self, id: NodeId, tags: &ProvenanceTags) -> Result<(), IrError> {
        self.node_mut(id)?.tags.union_with(tags);
        self.tag_group(id, tags);
        Ok(())
    }

    /// What a pass calls to hand `tags` on to a node it created or rewrote: as
    /// [`Function::add_tags`] when provenance is enabled on this function, nothing when it
    /// is disabled ([`Function::set_provenance_enabled`]).
    pub fn propagate_tags(&mut self, id: NodeId, tags: &ProvenanceTags) -> Result<(), IrError> {
        if self.provenance_enabled {
            self.add_tags(id, tags)
        } else {
            self.node(id).map(|_| ())
        }
    }

    /// Appends a pass name to a node's pass history.
    pub fn record_pass(&mut self, id: NodeId, pass: &str) -> Result<(), IrError> {
        self.node_mut(id)?.pass_history.push(pass.to_string());
        Ok(())
    }

    /// Makes `id` run after `dep` (a control dependency).
    ///
    /// # Errors
    /// [`IrError::Dangling`] if either node does not exist; [`IrError::Cycle`] if `dep`
    /// already depends on `id`.
    pub fn add_control_dependency(&mut self, id: NodeId, dep: NodeId) -> Result<(), IrError> {
        self.node(dep)?;
        self.node_mut(id)?.other_deps.push(dep);
        if let Err(e) = self.topological_order() {
            self.node_mut(id)?.other_deps.pop();
            return Err(e);
        }
        Ok(())
    }

    /// Removes the control dependency of `id` on `dep`; returns whether there was one.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if `id` does not exist.
    pub fn remove_control_dependency(&mut self, id: NodeId, dep: NodeId) -> Result<bool, IrError> {
        let n = self.node_mut(id)?;
        let before = n.other_deps.len();
        n.other_deps.retain(|&d| d != dep);
        Ok(n.other_deps.len() != before)
    }

    /// Makes every node that has a control dependency on `old` depend on `new` instead
    /// (a dependency already on `new` is not duplicated; `new` never depends on itself).
    /// Returns how many nodes changed. Used when a pass replaces `old` by `new`, so that
    /// control dependencies do not keep `old` alive.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if either node does not exist; [`IrError::Cycle`] if the
    /// redirection would create a cycle, in which case nothing is changed.
    pub fn redirect_control_dependencies(
        &mut self,
        old: NodeId,
        new: NodeId,
    ) -> Result<usize, IrError> {
        self.derived.forget();
        self.node(old)?;
        self.node(new)?;
        if old == new {
            return Ok(0);
        }
        let mut saved = Vec::new();
        for n in self.nodes.iter_mut().flatten() {
            if !n.other_deps.contains(&old) {
                continue;
            }
            let n = Arc::make_mut(n);
            saved.push((n.id, n.other_deps.clone()));
            let mut deps = Vec::with_capacity(n.other_deps.len());
            for &d in &n.other_deps {
                let d = if d == old { new } else { d };
                if d != n.id && !deps.contains(&d) {
                    deps.push(d);
                }
            }
            n.other_deps = deps;
        }
        if saved.is_empty() {
            return Ok(0);
        }
        if let Err(e) = self.topological_order() {
            for (id, deps) in saved {
                self.node_mut(id)?.other_deps = deps;
            }
            return Err(e);
        }
        Ok(saved.len())
    }

    /// Points every user of `old` at `new` (the value's type must match).
    ///
    /// # Errors
    /// [`IrError::ReplaceMismatch`] if the types differ; [`IrError::Dangling`] if either
    /// does not exist.
    pub fn replace_output(&mut self, old: Output, new: Output) -> Result<(), IrError> {
        self.check_replaceable(old, new)?;
        if old == new {
            return Ok(());
        }
        let users = std::mem::take(&mut self.node_mut(old.node)?.users[old.index]);
        for &(u, slot) in &users {
            self.node_mut(u)?.inputs[slot] = new;
        }
        self.node_mut(new.node)?.users[new.index].extend(users);
        Ok(())
    }

    /// Points input `slot` of `user` at `new` (the value's type must match the input's), and
    /// leaves every other use of the old value alone; [`Function::replace_output`] moves
    /// them all. Like it, this does not check for cycles: the caller makes sure `new` does
    /// not depend on `user` ([`Function::validate`] finds a cycle).
    ///
    /// # Errors
    /// [`IrError::Dangling`] if `user` or `new` does not exist or `user` has no input
    /// `slot`; [`IrError::ReplaceMismatch`] if the types differ. On error nothing changes.
    pub fn replace_input(&mut self, user: NodeId, slot: usize, new: Output) -> Result<(), IrError> {
        let node = self.node(user)?;
        let old = *node.inputs.get(slot).ok_or_else(|| IrError::Dangling {
            function: self.name.clone(),
            what: format!("node `{}` has no input {slot}", node.name),
        })?;
        self.check_replaceable(old, new)?;
        if old == new {
            return Ok(());
        }
        self.node_mut(old.node)?.users[old.index].retain(|use_| *use_ != (user, slot));
        self.node_mut(new.node)?.users[new.index].push((user, slot));
        self.node_mut(user)?.inputs[slot] = new;
        Ok(())
    }

    /// Replaces `old` by `new` everywhere (nGraph's `replace_node`), then removes nodes that
    /// no longer reach a result.
    ///
    /// Every output of `old` is redirected to the same output of `new`. Provenance follows
    /// nGraph's rule: `old`'s tags go to `new` (always, even when `new` is one of `old`'s
    /// inputs or a parameter, as nGraph's `replacement->add_provenance_tags` does) and to
    /// every node of the replacement subgraph: the nodes reached backwards from `new` before
    /// the common arguments of `old` and `new` (nodes both reach; `old`'s inputs first) and
    /// the function's parameters. So `x * 1 -> x` tags `x` alone, and a replacement built
    /// from new nodes on `old`'s inputs tags exactly those new nodes. `old`'s control
    /// dependencies move to `new`, and nodes that depended on `old` depend on `new`. With
    /// provenance disabled on the function ([`Function::set_provenance_enabled`]) no tags
    /// move.
    ///
    /// Pruning walks the whole function; a pass that replaces many nodes calls
    /// [`Function::replace_node_unpruned`] for each and [`Function::remove_dead_nodes`] once.
    ///
    /// # Errors
    /// [`IrError::ReplaceMismatch`] if the output counts or types differ; [`IrError::Cycle`]
    /// if moving the control dependencies would create a cycle (the function may then be
    /// partly rewritten: passes work on a copy).
    pub fn replace_node(&mut self, old: NodeId, new: NodeId) -> Result<(), IrError> {
        self.replace_node_unpruned(old, new)?;
        self.remove_dead_nodes();
        Ok(())
    }

    /// [`Function::replace_node`] without removing dead nodes: `old` stays in the function
    /// with no users (and so do nodes only it used) until [`Function::remove_dead_nodes`].
    ///
    /// # Errors
    /// As [`Function::replace_node`].
    pub fn replace_node_unpruned(&mut self, old: NodeId, new: NodeId) -> Result<(), IrError> {
        let (old_n, new_n) = (self.node(old)?, self.node(new)?);
        if old_n.outputs != new_n.outputs {
            let fmt = |n: &Node| {
                n.outputs
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(IrError::ReplaceMismatch {
                old: old_n.name.to_string(),
                old_types: fmt(old_n),
                new: new_n.name.to_string(),
                new_types: fmt(new_n),
            });
        }
        if old == new {
            return Ok(());
        }
        let tags = old_n.tags.clone();
        let deps = old_n.other_deps.clone();
        if self.provenance_enabled {
            self.tag_replacement(old, new, &tags)?;
        }
        for i in 0..self.node(old)?.outputs.len() {
            self.replace_output(Output::new(old, i), Output::new(new, i))?;
        }
        let n = self.node_mut(new)?;
        for d in deps {
            if d != new && !n.other_deps.contains(&d) {
                n.other_deps.push(d);
            }
        }
        self.redirect_control_dependencies(old, new)?;
        Ok(())
    }

    /// nGraph's provenance rule for `replace_node(old, new)`: `new` takes `tags`, and so does
    /// every node reached backwards from `new` over data inputs before a common argument of
    /// `old` and `new` (a node `old` also reaches: its inputs first) or a parameter.
    /// The ancestors of `old` are only computed when the walk passes `old`'s inputs, so a
    /// replacement built on `old`'s inputs costs only its own size.
    fn tag_replacement(
        &mut self,
        old: NodeId,
        new: NodeId,
        tags: &ProvenanceTags,
    ) -> Result<(), IrError> {
        self.node_mut(new)?.tags.union_with(tags);
        let old_inputs: HashSet<NodeId> = self.node(old)?.inputs.iter().map(|o| o.node).collect();
        let mut old_ancestors: Option<HashSet<NodeId>> = None;
        let mut stack: Vec<NodeId> = self.node(new)?.inputs.iter().map(|o| o.node).collect();
        let mut seen = HashSet::from([new, old]);
        while let Some(id) = stack.pop() {
            if old_inputs.contains(&id) || !seen.insert(id) {
                continue;
            }
            if matches!(self.node(id)?.op, Op::Parameter) {
                continue;
            }
            let ancestors = old_ancestors.get_or_insert_with(|| self.ancestors(&old_inputs));
            if ancestors.contains(&id) {
                continue;
            }
            let n = self.node_mut(id)?;
            n.tags.union_with(tags);
            stack.extend(n.inputs.iter().map(|o| o.node));
        }
        Ok(())
    }

    /// Every node reached backwards over data inputs from `roots`, the roots included.
    fn ancestors(&self, roots: &HashSet<NodeId>) -> HashSet<NodeId> {
        let mut seen = HashSet::new();
        let mut stack: Vec<NodeId> = roots.iter().copied().collect();
        while let Some(id) = stack.pop() {
            if seen.insert(id) {
                if let Some(n) = self.get(id) {
                    stack.extend(n.inputs.iter().map(|o| o.node));
                }
            }
        }
        seen
    }

    /// Removes every node that no result reaches through inputs or control dependencies.
    /// Parameters always stay. Returns the number of nodes removed.
    pub fn remove_dead_nodes(&mut self) -> usize {
        let mut live = vec![false; self.nodes.len()];
        let mut stack: Vec<NodeId> = self.results.clone();
        stack.extend(&self.parameters);
        while let Some(id) = stack.pop() {
            if live[id.index()] {
                continue;
            }
            live[id.index()] = true;
            if let Some(n) = self.get(id) {
                stack.extend(n.inputs.iter().map(|o| o.node));
                stack.extend(&n.other_deps);
            }
        }
        let dead = |(i, &is_live): (usize, &bool)| !is_live && self.nodes[i].is_some();
        if !live.iter().enumerate().any(dead) {
            return 0;
        }
        self.derived.forget();
        let mut removed = 0;
        for (i, &is_live) in live.iter().enumerate() {
            if is_live {
                continue;
            }
            if let Some(n) = self.nodes[i].take() {
                removed += 1;
                self.names.remove(&n.name);
                for (slot, o) in n.inputs.iter().enumerate() {
                    if let Some(Some(p)) = self.nodes.get_mut(o.node.index()) {
                        Arc::make_mut(p).users[o.index]
                            .retain(|&mut (u, s)| !(u == n.id && s == slot));
                    }
                }
            }
        }
        for n in self.nodes.iter_mut().flatten() {
            if n.other_deps.iter().any(|d| !live[d.index()]) {
                Arc::make_mut(n).other_deps.retain(|d| live[d.index()]);
            }
        }
        removed
    }

    /// Live nodes in a topological order: every node after its inputs and control
    /// dependencies; among ready nodes, lower ids first (so the order is deterministic).
    /// Remembered until the graph next changes.
    ///
    /// # Errors
    /// [`IrError::Cycle`] if the graph has a cycle.
    pub fn topological_order(&self) -> Result<Vec<NodeId>, IrError> {
        if let Some(order) = self.derived.order.get() {
            debug_assert_eq!(
                Some(order),
                self.compute_topological_order().ok().as_ref(),
                "`{}`: a remembered topological order is stale",
                self.name
            );
            return Ok(order.clone());
        }
        let order = self.compute_topological_order()?;
        Ok(self.derived.order.get_or_init(|| order).clone())
    }

    fn compute_topological_order(&self) -> Result<Vec<NodeId>, IrError> {
        let n = self.nodes.len();
        let mut pending = vec![0usize; n];
        // Most nodes have a few successors: kept inline.
        let mut succ: Vec<SmallVec<[NodeId; 4]>> = vec![SmallVec::new(); n];
        let mut preds: Vec<NodeId> = Vec::new();
        for node in self.nodes() {
            preds.clear();
            preds.extend(node.inputs.iter().map(|o| o.node));
            preds.extend(node.other_deps.iter().copied());
            preds.sort_unstable();
            preds.dedup();
            pending[node.id.index()] = preds.len();
            for p in &preds {
                succ[p.index()].push(node.id);
            }
        }
        let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<NodeId>> = self
            .nodes()
            .filter(|x| pending[x.id.index()] == 0)
            .map(|x| std::cmp::Reverse(x.id))
            .collect();
        let mut order = Vec::with_capacity(n);
        while let Some(std::cmp::Reverse(id)) = ready.pop() {
            order.push(id);
            for &s in &succ[id.index()] {
                pending[s.index()] -= 1;
                if pending[s.index()] == 0 {
                    ready.push(std::cmp::Reverse(s));
                }
            }
        }
        if order.len() != self.node_count() {
            let stuck = self
                .nodes()
                .find(|x| pending[x.id.index()] > 0)
                .map(|x| x.name.to_string())
                .unwrap_or_default();
            return Err(IrError::Cycle {
                function: self.name.clone(),
                node: stuck,
            });
        }
        Ok(order)
    }

    /// Checks the structural invariants: inputs exist and have the types each op infers,
    /// users mirror inputs, parameters and results are listed nodes of the right op, names
    /// are unique, the graph is acyclic, and the body of every fused kernel validates too
    /// (so a backend that interprets a body cannot meet a broken one mid-call).
    ///
    /// Success is remembered until the graph next changes, so validating an unchanged
    /// function again (each pass of a pipeline checks its input) costs nothing.
    ///
    /// # Errors
    /// [`IrError::Invalid`] naming the first offending node (for a body, the fused kernel
    /// node and the body's own error), or [`IrError::Cycle`].
    pub fn validate(&self) -> Result<(), IrError> {
        if self.derived.validated.get().is_some() {
            debug_assert!(
                self.check().is_ok(),
                "`{}`: a remembered validation is stale",
                self.name
            );
            return Ok(());
        }
        self.check()?;
        self.derived.validated.get_or_init(|| ());
        Ok(())
    }

    /// The checks of [`Function::validate`], always run.
    fn check(&self) -> Result<(), IrError> {
        let invalid = |message: String| IrError::Invalid {
            function: self.name.clone(),
            message,
        };
        for node in self.nodes() {
            let in_types: SmallVec<[TensorType; 2]> = node
                .inputs
                .iter()
                .map(|&o| self.output_type(o).cloned())
                .collect::<Result<_, _>>()
                .map_err(|e| invalid(format!("node `{}`: {e}", node.name)))?;
            let inferred;
            let expected: &[TensorType] = match &node.op {
                Op::Parameter | Op::Constant(_) => &node.outputs,
                op => {
                    inferred = infer_output_types(op, &in_types)
                        .map_err(|m| invalid(format!("node `{}` ({}): {m}", node.name, node.op)))?;
                    &inferred
                }
            };
            if expected != node.outputs.as_slice() {
                return Err(invalid(format!(
                    "node `{}` ({}) records output types that inference does not give",
                    node.name, node.op
                )));
            }
            if let Op::Constant(d) = &node.op {
                if Ok(d.len()) != node.outputs[0].shape.element_count() {
                    return Err(invalid(format!(
                        "constant `{}` does not fill its shape",
                        node.name
                    )));
                }
            }
            if let Op::FusedKernel(k) = &node.op {
                k.body
                    .validate()
                    .map_err(|e| invalid(format!("fused kernel `{}`: body: {e}", node.name)))?;
            }
            for (slot, o) in node.inputs.iter().enumerate() {
                let producer = self.node(o.node).map_err(|e| invalid(e.to_string()))?;
                if !producer.users[o.index].contains(&(node.id, slot)) {
                    return Err(invalid(format!(
                        "users of `{}` miss `{}`",
                        producer.name, node.name
                    )));
                }
            }
            if self.names.get(&node.name) != Some(&node.id) {
                return Err(invalid(format!("name `{}` is not unique", node.name)));
            }
            for d in &node.other_deps {
                self.node(*d).map_err(|e| invalid(e.to_string()))?;
            }
        }
        for &p in &self.parameters {
            if !matches!(self.node(p)?.op, Op::Parameter) {
                return Err(invalid(format!("parameter {p} is not a Parameter")));
            }
        }
        for &r in &self.results {
            if !matches!(self.node(r)?.op, Op::Result) {
                return Err(invalid(format!("result {r} is not a Result")));
            }
        }
        self.topological_order()?;
        Ok(())
    }
}
