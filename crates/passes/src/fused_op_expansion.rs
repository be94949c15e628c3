//! Fused-op expansion: fused kernels are replaced by the nodes of their bodies.

use std::collections::{BTreeSet, HashMap, HashSet};

use graphlift_ir::{Function, NodeId, Op, Output};

use crate::rewrite::{record_pass_once, rewrite_on_copy};
use crate::{Pass, PassError};

#[cfg(test)]
mod tests;

/// Replaces every `Op::FusedKernel` node by copies of its body's nodes, wired to the
/// kernel's inputs and users: the inverse of subgraph extraction (nGraph's fused-op
/// decomposition).
///
/// Copies keep the body nodes' names (suffixed if taken), ops, metadata, creation sites,
/// tags and pass histories ([`Function::import_node`]). Provenance follows nGraph's rule for
/// an expanded fused op: every node it produces also takes the kernel's tags (the union of
/// the tags of the nodes it fused), and has [`FusedOpExpansion::NAME`] appended to its pass
/// history. Control dependencies: the kernel's own move to the produced nodes that take no
/// input from another produced node (so every produced node still runs after them), and
/// nodes that ran after the kernel run after every produced node no other produced node
/// uses. Dependencies inside the body are kept. Kernels inside bodies are expanded too.
///
/// The pass is not in [`crate::PassManager::default_pipeline`]: today subgraph extraction
/// is the only producer of fused kernels and runs last, and expanding first would not be a
/// no-op for provenance (each expanded node takes the union of its kernel's tags), so the
/// default pipeline would no longer be idempotent. Insert it at the front of a pipeline to
/// re-optimize a function that already holds fused kernels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FusedOpExpansion;

impl FusedOpExpansion {
    /// The pass's name, recorded in the pass history of every node it produces.
    pub const NAME: &'static str = "fused_op_expansion";
}

impl Pass for FusedOpExpansion {
    fn name(&self) -> &'static str {
        FusedOpExpansion::NAME
    }

    /// Expands every fused kernel; `true` when there was at least one.
    ///
    /// # Errors
    /// [`PassError::Ir`] if `f` (or a body) does not validate; [`PassError::Broken`] if a
    /// body does not match its kernel node, or holds a `Variable`, `ReadVariable` or
    /// `Assign` (a fused kernel is stateless: expanding it would add state to `f`), both
    /// bugs in whoever built it. `f` is then unchanged.
    fn run(&self, f: &mut Function) -> Result<bool, PassError> {
        let any_kernel = |g: &Function| Ok(g.nodes().any(|n| matches!(n.op(), Op::FusedKernel(_))));
        rewrite_on_copy(f, FusedOpExpansion::NAME, any_kernel, expand_all)
    }
}

fn broken(message: String) -> PassError {
    PassError::Broken {
        pass: FusedOpExpansion::NAME,
        message,
    }
}

fn expand_all(g: &mut Function) -> Result<bool, PassError> {
    let mut expanded = HashSet::new();
    let mut produced = BTreeSet::new();
    loop {
        let next = g.topological_order()?.into_iter().find(|&id| {
            !expanded.contains(&id)
                && g.get(id)
                    .is_some_and(|n| matches!(n.op(), Op::FusedKernel(_)))
        });
        let Some(k) = next else { break };
        produced.extend(expand(g, k)?);
        expanded.insert(k);
    }
    record_pass_once(g, &produced, FusedOpExpansion::NAME)?;
    Ok(!expanded.is_empty())
}

/// Expands the kernel `k` in place (it stays, unused, until dead nodes are removed);
/// returns the nodes produced.
fn expand(g: &mut Function, k: NodeId) -> Result<Vec<NodeId>, PassError> {
    let node = g.node(k)?.clone();
    let Op::FusedKernel(kernel) = node.op() else {
        return Err(broken(format!("`{}` is not a fused kernel", node.name())));
    };
    let body = &kernel.body;
    body.validate()?;
    if let Some(n) = body.nodes().find(|n| n.op().is_stateful()) {
        return Err(broken(format!(
            "the body of `{}` holds `{}`, a {}: a fused kernel is stateless",
            node.name(),
            n.name(),
            n.op()
        )));
    }
    if body.parameters().len() != node.inputs().len()
        || body.results().len() != node.outputs().len()
    {
        return Err(broken(format!(
            "the body of `{}` has {} parameters and {} results for {} inputs and {} outputs",
            node.name(),
            body.parameters().len(),
            body.results().len(),
            node.inputs().len(),
            node.outputs().len()
        )));
    }
    let mut map: HashMap<Output, Output> = HashMap::new();
    for (&p, &input) in body.parameters().iter().zip(node.inputs()) {
        map.insert(Output::from(p), input);
    }
    let mapped = |map: &HashMap<Output, Output>, o: Output| {
        map.get(&o).copied().ok_or_else(|| {
            broken(format!(
                "body value {}:{} was not expanded",
                o.node, o.index
            ))
        })
    };

    // Copy the body's nodes.
    let mut copies: Vec<(NodeId, NodeId)> = Vec::new();
    for bid in body.topological_order()? {
        let bn = body.node(bid)?;
        if matches!(bn.op(), Op::Parameter | Op::Result) {
            continue;
        }
        let inputs = bn
            .inputs()
            .iter()
            .map(|&o| mapped(&map, o))
            .collect::<Result<Vec<_>, _>>()?;
        let id = g.import_node(bn, &inputs)?;
        g.propagate_tags(id, node.tags())?;
        for i in 0..bn.outputs().len() {
            map.insert(Output::new(bid, i), Output::new(id, i));
        }
        copies.push((bid, id));
    }
    let new_of: HashMap<NodeId, NodeId> = copies.iter().copied().collect();

    // Control dependencies inside the body; one on a body parameter becomes one on the
    // producer of the matching input.
    for &(bid, id) in &copies {
        for &d in body.node(bid)?.other_deps() {
            let dep = match new_of.get(&d) {
                Some(&n) => n,
                None => mapped(&map, Output::from(d))?.node,
            };
            g.add_control_dependency(id, dep)?;
        }
    }

    // Users of the kernel's outputs.
    for (j, &r) in body.results().iter().enumerate() {
        let value = mapped(&map, body.result_source(r)?)?;
        g.replace_output(Output::new(k, j), value)?;
    }

    // The kernel's control dependencies and dependents.
    let produced: HashSet<NodeId> = copies.iter().map(|&(_, id)| id).collect();
    let mut entries = Vec::new();
    let mut sinks = Vec::new();
    for &(_, id) in &copies {
        let n = g.node(id)?;
        if !n.inputs().iter().any(|o| produced.contains(&o.node)) {
            entries.push(id);
        }
        let used_inside = (0..n.outputs().len())
            .flat_map(|i| n.users(i))
            .any(|(u, _)| produced.contains(u));
        if !used_inside {
            sinks.push(id);
        }
    }
    for &e in &entries {
        for &d in node.other_deps() {
            g.add_control_dependency(e, d)?;
        }
    }
    let dependents: Vec<NodeId> = g
        .nodes()
        .filter(|n| n.other_deps().contains(&k))
        .map(|n| n.id())
        .collect();
    // Without produced nodes, dependents wait for what the kernel waited for.
    let waits: Vec<NodeId> = if sinks.is_empty() {
        let mut w: Vec<NodeId> = node.inputs().iter().map(|o| o.node).collect();
        w.extend(node.other_deps());
        w
    } else {
        sinks
    };
    for d in dependents {
        g.remove_control_dependency(d, k)?;
        for &w in &waits {
            if !g.node(d)?.other_deps().contains(&w) && w != d {
                g.add_control_dependency(d, w)?;
            }
        }
    }
    Ok(copies.into_iter().map(|(_, id)| id).collect())
}
