//! Editing a [`Function`] in place: names, metadata, provenance tags, control dependencies,
//! nGraph's `replace_node` with its provenance rule, and dead-node removal.

use crate::{IrError, Node, NodeId, Op, Output, ProvenanceTags};
use std::collections::HashSet;
use std::sync::Arc;

use super::*;

impl Function {
    pub(super) fn node_mut(&mut self, id: NodeId) -> Result<&mut Node, IrError> {
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

    /// Whether anything uses node `id`: a node reads one of its outputs, or depends on it
    /// (`other_deps`). Checks the data users first; only a node without any costs a walk
    /// over the function.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if `id` is not in the function.
    pub fn is_used(&self, id: NodeId) -> Result<bool, IrError> {
        let n = self.node(id)?;
        Ok((0..n.outputs.len()).any(|i| !n.users(i).is_empty())
            || self.sinks.contains(&id)
            || self.nodes().any(|m| m.other_deps.contains(&id)))
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
    /// [`IrError::ReplaceRefused`] if `old` is a `Result` or nothing uses it (nGraph refuses
    /// both); [`IrError::ReplaceMismatch`] if the output counts or types differ;
    /// [`IrError::Cycle`] if moving the control dependencies would create a cycle (the
    /// function may then be partly rewritten: passes work on a copy).
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
        let refuse = |reason| {
            Err(IrError::ReplaceRefused {
                node: old_n.name.to_string(),
                reason,
            })
        };
        if matches!(old_n.op(), Op::Result) {
            return refuse("a Result is replaced by replacing the value it reads");
        }
        if !self.is_used(old)? {
            return refuse("nothing uses it, so a replacement would change nothing");
        }
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
        if let Some(k) = self.sinks.iter().position(|&s| s == old) {
            if self.sinks.contains(&new) {
                self.sinks.remove(k);
            } else {
                self.sinks[k] = new;
            }
        }
        Ok(())
    }

    /// nGraph's provenance rule for `replace_node(old, new)`: `new` takes `tags`, and so does
    /// every node reached backwards from `new` over data inputs before a common argument of
    /// `old` and `new` (a node `old` also reaches: its inputs first) or a parameter.
    /// The ancestors of `old` are only computed when the walk passes `old`'s inputs, so a
    /// replacement built on `old`'s inputs costs only its own size.
    pub(super) fn tag_replacement(
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
    pub(super) fn ancestors(&self, roots: &HashSet<NodeId>) -> HashSet<NodeId> {
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

    /// Removes the Result nodes (the values they passed out stay, as nodes nothing reads
    /// yet), leaving the function without results: for building other results over it
    /// ([`crate::FunctionBuilder::from_function`]).
    pub fn remove_results(&mut self) {
        self.derived.forget();
        for r in std::mem::take(&mut self.results) {
            let Some(n) = self.nodes.get_mut(r.index()).and_then(Option::take) else {
                continue;
            };
            self.names.remove(&n.name);
            for (slot, o) in n.inputs.iter().enumerate() {
                if let Some(Some(p)) = self.nodes.get_mut(o.node.index()) {
                    Arc::make_mut(p).users[o.index].retain(|&mut (u, s)| !(u == r && s == slot));
                }
            }
        }
    }

    /// Removes every node that no result or sink reaches through inputs or control
    /// dependencies. Parameters always stay. Returns the number of nodes removed.
    pub fn remove_dead_nodes(&mut self) -> usize {
        let live = self.live_nodes();
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

    /// Which nodes are live, by arena index: the parameters, the results, the sinks and
    /// every node they reach through inputs or control dependencies. Only live nodes run: a
    /// node nothing live needs has no effect (a backend may skip it), state included.
    pub fn live_nodes(&self) -> Vec<bool> {
        let mut live = vec![false; self.nodes.len()];
        let mut stack: Vec<NodeId> = self.results.clone();
        stack.extend(&self.parameters);
        stack.extend(&self.sinks);
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
        live
    }

    /// `Ok` when `new` may stand in for `old`: both exist and have the same type.
    pub(super) fn check_replaceable(&self, old: Output, new: Output) -> Result<(), IrError> {
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
}
