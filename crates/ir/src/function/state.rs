//! State in a [`Function`]: variables, their reads and assigns, sinks, and the checks that
//! give every read a defined value (Nervana Graph's ordering semantics).

use std::sync::Arc;

use crate::{CreationSite, IrError, Node, NodeId, Op, Output, TensorType, Variable};

use super::*;

impl Function {
    /// Nodes that run on every call although no result reads them, in the order they were
    /// added (OpenVINO's sinks; the assigns Nervana Graph makes in its main stream).
    pub fn sinks(&self) -> &[NodeId] {
        &self.sinks
    }

    /// Makes node `id` a sink (once): it runs on every call, and dead-node removal keeps it.
    ///
    /// # Errors
    /// [`IrError::Dangling`] if there is no such node.
    pub fn add_sink(&mut self, id: NodeId) -> Result<(), IrError> {
        self.node(id)?;
        if !self.sinks.contains(&id) {
            self.derived.forget();
            self.sinks.push(id);
        }
        Ok(())
    }

    /// Adds a Variable named `name` whose initial value is the one result of
    /// `initializer`, a Function of no parameters.
    ///
    /// # Errors
    /// [`IrError::DuplicateName`] if `name` is taken; [`IrError::State`] if the initializer
    /// does not validate, takes parameters, has other than one result or uses state.
    #[track_caller]
    pub fn add_variable(
        &mut self,
        name: impl Into<String>,
        initializer: Function,
    ) -> Result<NodeId, IrError> {
        self.add_variable_at(name, initializer, CreationSite::caller())
    }

    /// [`Function::add_variable`] with an explicit creation site.
    ///
    /// # Errors
    /// As [`Function::add_variable`].
    pub fn add_variable_at(
        &mut self,
        name: impl Into<String>,
        initializer: Function,
        site: CreationSite,
    ) -> Result<NodeId, IrError> {
        let name = name.into();
        self.check_name_free(&name)?;
        let variable = Variable { initializer };
        check_initializer(&variable).map_err(|message| self.state_error(&name, message))?;
        let t = variable.initializer.result_types().remove(0);
        Ok(self.push(
            Op::Variable(Arc::new(variable)),
            Vec::new(),
            vec![t],
            Some(name.into()),
            site,
        ))
    }

    /// The Variable nodes, in id order.
    pub fn variables(&self) -> impl Iterator<Item = &Node> {
        self.nodes().filter(|n| matches!(n.op, Op::Variable(_)))
    }

    /// The Variable that the `ReadVariable` or `Assign` node `id` reads or writes; `None`
    /// for any other node.
    pub fn variable_of(&self, id: NodeId) -> Option<NodeId> {
        let n = self.get(id)?;
        match n.op {
            Op::ReadVariable | Op::Assign => n.inputs.first().map(|o| o.node),
            _ => None,
        }
    }

    /// Adds the control dependencies that order the reads and assigns of `order` as listed
    /// (creation order for the builder, execution order for a collected trace), variable by
    /// variable: a read after the assign listed before it; an assign after that assign and
    /// after the reads listed since. Every dependency is explicit, also where inputs imply
    /// it: a rewrite may cut a data path (`x - x -> 0`), never a control dependency. Nodes
    /// that are not a `ReadVariable` or `Assign` are skipped.
    ///
    /// # Errors
    /// [`IrError::Dangling`] for a node not in the function; [`IrError::Cycle`] if a
    /// dependency would close a cycle (the order contradicts the graph).
    pub fn order_accesses(&mut self, order: &[NodeId]) -> Result<(), IrError> {
        // Per variable: the last assign, and the reads since it.
        let mut state: HashMap<NodeId, (Option<NodeId>, Vec<NodeId>)> = HashMap::default();
        for &id in order {
            let Some(variable) = self.variable_of(id) else {
                continue;
            };
            let (last_assign, reads) = state.entry(variable).or_default();
            if matches!(self.node(id)?.op, Op::Assign) {
                let deps: Vec<NodeId> = reads.drain(..).chain(last_assign.take()).collect();
                *last_assign = Some(id);
                for dep in deps {
                    self.add_control_dependency(id, dep)?;
                }
            } else {
                reads.push(id);
                if let Some(w) = *last_assign {
                    self.add_control_dependency(id, w)?;
                }
            }
        }
        Ok(())
    }

    /// Checks the inputs of a node of `op` that is being added: a `ReadVariable` or
    /// `Assign` takes a Variable at input 0, and no other input is a Variable. Returns the
    /// message of an [`IrError::State`].
    pub(super) fn check_state_inputs(&self, op: &Op, inputs: &[Output]) -> Result<(), String> {
        for (slot, o) in inputs.iter().enumerate() {
            let Some(p) = self.get(o.node) else { continue };
            let is_variable = matches!(p.op, Op::Variable(_));
            let wants_variable = slot == 0 && matches!(op, Op::ReadVariable | Op::Assign);
            if wants_variable && !is_variable {
                let verb = if matches!(op, Op::Assign) {
                    "assigns to"
                } else {
                    "reads"
                };
                return Err(format!(
                    "{verb} `{}` ({}), which is not a Variable",
                    p.name, p.op
                ));
            }
            if is_variable && !wants_variable {
                return Err(format!(
                    "uses variable `{}` as input {slot}: a {op} reads a variable's value \
                     through a ReadVariable",
                    p.name
                ));
            }
        }
        Ok(())
    }

    /// The state checks of [`Function::validate`]: every node's state inputs
    /// ([`Function::check_state_inputs`]), every initializer, that sinks exist, and that
    /// every live read and every other live assign of a variable is ordered against each of
    /// its live assigns, through inputs or control dependencies, so that what a read sees
    /// does not depend on a backend's schedule ([`Function::live_nodes`]).
    pub(super) fn check_state(&self) -> Result<(), IrError> {
        for &s in &self.sinks {
            self.node(s)?;
        }
        let mut accesses: HashMap<NodeId, Vec<NodeId>> = HashMap::default();
        // Liveness only matters (and is only computed) when there is state.
        let live = if self.nodes().any(|n| n.op.is_stateful()) {
            self.live_nodes()
        } else {
            Vec::new()
        };
        for n in self.nodes() {
            self.check_state_inputs(&n.op, &n.inputs)
                .map_err(|m| self.state_error(&n.name, m))?;
            if let Op::Variable(v) = &n.op {
                check_initializer(v).map_err(|m| self.state_error(&n.name, m))?;
            }
            if let Op::FusedKernel(k) = &n.op {
                if let Some(s) = k.body.nodes().find(|b| b.op.is_stateful()) {
                    return Err(self.state_error(
                        &n.name,
                        format!(
                            "the fused kernel's body holds `{}` ({}): kernels compute values,                              state stays outside them",
                            s.name, s.op
                        ),
                    ));
                }
            }
            // `variable_of` is `Some` only for a stateful node, so `live` is computed then.
            if let Some(v) = self.variable_of(n.id).filter(|_| live[n.id.index()]) {
                accesses.entry(v).or_default().push(n.id);
            }
        }
        let dependents = (!accesses.is_empty()).then(|| self.control_dependents());
        for (v, ids) in &accesses {
            let dependents = dependents.as_deref().unwrap_or_default();
            for &a in ids
                .iter()
                .filter(|&&a| matches!(self.nodes_op(a), Some(Op::Assign)))
            {
                let before = self.reach(a, false, dependents);
                let after = self.reach(a, true, dependents);
                for &x in ids {
                    if x != a && !before[x.index()] && !after[x.index()] {
                        let (xn, vn) = (self.node(x)?, self.node(*v)?);
                        return Err(self.state_error(
                            &xn.name,
                            format!(
                                "this {} of variable `{}` and its assign `{}` are not ordered \
                                 (neither depends on the other through inputs or control \
                                 dependencies), so the value it sees is undefined",
                                xn.op,
                                vn.name,
                                self.node(a)?.name
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    fn nodes_op(&self, id: NodeId) -> Option<&Op> {
        self.get(id).map(|n| &n.op)
    }

    /// For each arena index, the nodes that have a control dependency on that node (the
    /// reverse of [`Node::other_deps`], built in one pass for walks forward over them).
    pub fn control_dependents(&self) -> Vec<Vec<NodeId>> {
        let mut dependents = vec![Vec::new(); self.nodes.len()];
        for n in self.nodes() {
            for d in &n.other_deps {
                dependents[d.index()].push(n.id);
            }
        }
        dependents
    }

    /// Which nodes `from` reaches (itself excluded) over inputs and control dependencies:
    /// its descendants when `forward`, else its ancestors; `dependents` is
    /// [`Function::control_dependents`]. Indexed by arena index.
    pub(crate) fn reach(
        &self,
        from: NodeId,
        forward: bool,
        dependents: &[Vec<NodeId>],
    ) -> Vec<bool> {
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = vec![from];
        let mut users: Vec<NodeId> = Vec::new();
        while let Some(id) = stack.pop() {
            let Some(n) = self.get(id) else { continue };
            users.clear();
            if forward {
                users.extend(n.users.iter().flatten().map(|&(u, _)| u));
                users.extend(dependents.get(id.index()).into_iter().flatten());
            } else {
                users.extend(n.inputs.iter().map(|o| o.node));
                users.extend(&n.other_deps);
            }
            for &u in &users {
                if !seen[u.index()] {
                    seen[u.index()] = true;
                    stack.push(u);
                }
            }
        }
        seen
    }

    pub(crate) fn state_error(&self, node: &str, message: String) -> IrError {
        IrError::State {
            function: self.name.clone(),
            node: node.to_string(),
            message,
        }
    }
}

/// Checks a variable's initializer: it validates, takes no parameters, has one result and
/// uses no state. Returns what is wrong.
fn check_initializer(v: &Variable) -> Result<TensorType, String> {
    let init = &v.initializer;
    init.validate().map_err(|e| format!("initializer: {e}"))?;
    if let Some(&p) = init.parameters().first() {
        let name = init.get(p).map_or("?", |n| &*n.name);
        return Err(format!(
            "the initializer takes parameter `{name}`: an initial value is computed before \
             any call, from constants and ops only"
        ));
    }
    if let Some(n) = init.nodes().find(|n| n.op.is_stateful()) {
        return Err(format!(
            "the initializer uses state (`{}`, a {}): initial values are computed from \
             constants and ops only",
            n.name, n.op
        ));
    }
    match init.result_types().as_slice() {
        [t] => Ok(t.clone()),
        other => Err(format!(
            "the initializer must have one result, has {}",
            other.len()
        )),
    }
}
