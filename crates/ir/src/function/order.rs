//! The derived order of a [`Function`] (topological, remembered until the graph changes) and
//! validation.

use crate::infer::infer_output_types;
use crate::{IrError, NodeId, Op, TensorType};
use smallvec::SmallVec;

use super::*;

impl Function {
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

    pub(super) fn compute_topological_order(&self) -> Result<Vec<NodeId>, IrError> {
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
    pub(super) fn check(&self) -> Result<(), IrError> {
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
            if let Op::ControlFlow(c) = &node.op {
                for (what, body) in c.bodies() {
                    body.validate().map_err(|e| {
                        invalid(format!(
                            "{} `{}`: {what} body: {e}",
                            c.type_name(),
                            node.name
                        ))
                    })?;
                }
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
        self.check_state()?;
        Ok(())
    }
}
